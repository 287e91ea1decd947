package lifecycle

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// Network is a long-lived sandbox's egress policy, kept in its record (issue 37): the hosts its
// commands may reach (with their rules), the secrets the proxy writes into requests to them (by
// name and source: egress.SecretRef, never a value) and the injections that bind them. A call
// that names no network of its own (Options: no AllowNetwork, AllowHosts or Secrets) gets it; a
// change (Manager.SetNetwork) reaches the sessions that hold the sandbox's proxy at once.
type Network struct {
	AllowHosts []string           `json:"allowHosts"`
	Secrets    []egress.SecretRef `json:"secrets,omitempty"`
	Inject     []string           `json:"inject,omitempty"`
}

// NetworkOf is the policy o asks for (AllowHosts, Secrets, Inject), nil when it asks for none:
// what Manager.Create records and Manager.SetNetwork takes.
func NetworkOf(o Options) *Network {
	if len(o.AllowHosts) == 0 && len(o.Secrets) == 0 && len(o.Inject) == 0 {
		return nil
	}
	n := &Network{AllowHosts: slices.Clone(o.AllowHosts), Secrets: slices.Clone(o.Secrets)}
	for _, in := range o.Inject {
		n.Inject = append(n.Inject, in.String())
	}
	return n
}

// policy reads n's secrets (with lookupEnv) and injections: what egress.Proxy.SetPolicy takes.
func (n *Network) policy(lookupEnv func(string) (string, bool)) ([]string, []egress.Secret, []egress.Injection, error) {
	if n == nil {
		return nil, nil, nil, nil
	}
	sec, err := egress.ResolveSecrets(n.Secrets, lookupEnv)
	if err != nil {
		return nil, nil, nil, err
	}
	in, err := egress.ParseInjections(n.Inject)
	if err != nil {
		return nil, nil, nil, err
	}
	return n.AllowHosts, sec, in, egress.CheckPolicy(n.AllowHosts, sec, in)
}

// equal reports whether n and m are the same policy.
func (n *Network) equal(m *Network) bool {
	if n == nil || m == nil {
		return n == m
	}
	return slices.Equal(n.AllowHosts, m.AllowHosts) && slices.Equal(n.Secrets, m.Secrets) && slices.Equal(n.Inject, m.Inject)
}

// resolveEgress reads o's secrets into o.secretValues and checks the whole policy; ErrNoNetwork's
// adapter and a policy without hosts are left to the adapters, which say so in their words.
func (o *Options) resolveEgress() error {
	if len(o.Secrets) == 0 && len(o.Inject) == 0 {
		return nil
	}
	if o.AllowNetwork {
		return errs.New(errs.InvalidInput, "secret", "", "secrets go through the egress proxy of allow-hosts, which AllowNetwork excludes")
	}
	_, sec, _, err := NetworkOf(*o).policy(o.LookupEnv)
	if err != nil {
		return err
	}
	o.secretValues = sec
	return nil
}

// egressConfig is the egress.Config the adapters take for o (their AllowHosts is separate).
func (o Options) egressConfig() egress.Config {
	c := o.EgressTuning
	c.AllowHosts, c.Secrets, c.Inject = nil, o.secretValues, slices.Clone(o.Inject)
	return c
}

// withRecordNetwork gives o the record's policy when o names no network of its own.
func withRecordNetwork(o Options, rec Record) (Options, bool) {
	if o.AllowNetwork || NetworkOf(o) != nil || rec.Network == nil {
		return o, false
	}
	in, err := egress.ParseInjections(rec.Network.Inject)
	if err != nil {
		in = nil // checked when the policy was set; resolveEgress refuses what is left
	}
	o.AllowHosts, o.Secrets, o.Inject = slices.Clone(rec.Network.AllowHosts), slices.Clone(rec.Network.Secrets), in
	return o, true
}

// SetNetwork replaces the network policy of the long-lived sandbox id (nil or an empty Network:
// no network) after checking it as a proxy would take it: its secrets are read with lookupEnv
// (nil: os.LookupEnv) and must be valid and bound. Sessions attached with the record's policy
// apply it to new requests within FollowInterval, and close tunnels and requests to hosts it no
// longer allows; other processes' next calls take it. Errors: as Get, errs.InvalidInput for an
// invalid policy (nothing changes).
func (m *Manager) SetNetwork(id string, n *Network, lookupEnv func(string) (string, bool)) (Record, error) {
	rec, err := m.rs.get(id)
	if err != nil {
		return Record{}, err
	}
	if n != nil && len(n.AllowHosts)+len(n.Secrets)+len(n.Inject) == 0 {
		n = nil
	}
	if _, _, _, err := n.policy(lookupEnv); err != nil {
		return Record{}, err
	}
	switch {
	case n != nil && rec.Adapter == "memory":
		return Record{}, ErrNoNetwork
	case rec.Adapter == "remote":
		return Record{}, errs.New(errs.InvalidInput, "sandbox", "", "sandbox %s is a remote one: its network is its server's to change", id)
	}
	rec.Network = n
	return rec, m.rs.save(rec)
}

// FollowInterval is how often a session attached with its record's network policy looks for a
// change of it.
const FollowInterval = 250 * time.Millisecond

// follow applies changes of id's recorded policy to p until stop: each new policy as SetPolicy
// takes it, and, when this process cannot read one of its secrets (an env: source its
// environment lacks), no host at all: the sandbox's network is cut rather than left wider than
// the record says.
func (m *Manager) follow(id string, p *egress.Proxy, last *Network, lookupEnv func(string) (string, bool)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(FollowInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rec, err := m.rs.get(id)
			if err != nil || rec.Network.equal(last) {
				continue
			}
			last = rec.Network
			hosts, sec, in, err := last.policy(lookupEnv)
			if err != nil {
				hosts, sec, in = nil, nil, nil
			}
			_ = p.SetPolicy(hosts, sec, in)
		}
	}()
	return func() { cancel(); wg.Wait() }
}
