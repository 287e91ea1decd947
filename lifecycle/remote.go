package lifecycle

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

const remoteEnforces = "each sandbox lives on a sandboxer server (sandboxerd serve, docs/api.md) and has what " +
	"the server's adapter enforces there (--remote-adapter, else the server's default): results carry the " +
	"server's capabilities and isolation. No more network than asked: a sandbox the server would give the " +
	"network (its own default) is deleted and refused. The token is sent to the server only, never written " +
	"to a record; use https (--remote-ca for a private CA) for anything but loopback or a unix socket."

// RemoteOptions are the remote adapter's: the server, its token, and what to ask it for.
type RemoteOptions struct {
	// URL is the server: http://HOST:PORT, https://HOST:PORT or unix:PATH. A long-lived
	// sandbox stays on the server its record names; with URL set, another server's is refused
	// (the token is for URL's server).
	URL string
	// Token is the bearer token ("": a server without tokens). It is sent to the server only and
	// never written to a record.
	Token string
	// CAFile is a PEM file of the certificates an https server's is checked against (a private
	// CA); "" is the system's.
	CAFile string
	// Adapter is the adapter the server runs the sandbox with ("": the server's default).
	Adapter string
	// TTL is the sandbox's lifetime on the server (0: the server's default). IdleTimeout is how
	// long the server keeps it unused (0: the server's default; less than 0: no idle timeout).
	TTL, IdleTimeout time.Duration
}

// RemoteConfig is the remote adapter's configuration of o for a sandbox Open makes: the
// server, its token and TLS, and the create request of Options' fields. The limits (memory,
// pids, CPUs, disk), image and runtime are asked only when set (non-zero: local.NoLimit is
// none), else the server's defaults apply; the network is asked as Options says. Errors:
// errs.InvalidInput without a URL, with one that carries credentials, with a CA file that
// cannot be read, or with Secrets (never sent to a server).
func (o Options) RemoteConfig() (remote.Config, error) {
	r := o.Remote
	if r.URL == "" {
		return remote.Config{}, errs.New(errs.InvalidInput, "remote", "", "the remote adapter needs its server's URL (Options.Remote.URL)")
	}
	if len(o.Secrets)+len(o.Inject) > 0 {
		return remote.Config{}, errs.New(errs.InvalidInput, "remote", "", "secrets are not sent to a server: a remote sandbox's egress is its server's (give the server its own)")
	}
	if !strings.HasPrefix(r.URL, "unix:") {
		if u, err := url.Parse(r.URL); err == nil && u.User != nil {
			return remote.Config{}, errs.New(errs.InvalidInput, "remote", "", "URL %s carries credentials: give the token apart (records keep the URL)", u.Redacted())
		}
	}
	cfg := remote.Config{URL: strings.TrimSuffix(r.URL, "/"), Token: r.Token, Create: o.remoteCreate()}
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return remote.Config{}, errs.Wrap(errs.InvalidInput, "remote", "", fmt.Errorf("CA file: %w", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return remote.Config{}, errs.New(errs.InvalidInput, "remote", "", "CA file %s holds no PEM certificate", r.CAFile)
		}
		cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return cfg, nil
}

// remoteCreate is the create request of o (RemoteConfig).
func (o Options) remoteCreate() api.CreateRequest {
	req := api.CreateRequest{Adapter: o.Remote.Adapter, Image: o.Image, Runtime: o.OCI.Runtime,
		AllowNetwork: o.AllowNetwork, AllowHosts: o.AllowHosts, TTLSeconds: seconds(o.Remote.TTL)}
	if req.Image == "" {
		req.Image = o.Kubernetes.Image
	}
	if o.Local.Memory != 0 {
		m := max(o.Local.Memory, 0) // local.NoLimit: none, the API's 0
		req.MemoryBytes = &m
	}
	if o.Local.Pids != 0 {
		p := max(o.Local.Pids, 0)
		req.Pids = &p
	}
	if o.Local.CPUs > 0 {
		c := o.Local.CPUs
		req.CPUs = &c
	}
	if o.Disk != 0 {
		d := o.Disk
		req.DiskBytes = &d
	}
	switch idle := o.Remote.IdleTimeout; {
	case idle < 0:
		none := int64(0)
		req.IdleTimeoutSeconds = &none
	case idle > 0:
		s := seconds(idle)
		req.IdleTimeoutSeconds = &s
	}
	return req
}

// seconds is d in whole seconds, rounded up (a positive d is at least 1).
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// remoteAt is the configuration of o for the server at u, the URL of a record: refused when o
// names another server, whose token o's would be.
func (o Options) remoteAt(rec Record) (remote.Config, error) {
	if o.Remote.URL != "" && strings.TrimSuffix(o.Remote.URL, "/") != rec.URL {
		return remote.Config{}, errs.New(errs.InvalidInput, "remote", "",
			"sandbox %s lives on the server %s, not on %s, whose token this call has (leave the URL unset, or name that server)", rec.ID, rec.URL, o.Remote.URL)
	}
	o.Remote.URL = rec.URL
	return o.RemoteConfig()
}

// atServer makes err, of the server at u, say so (a refused token, a server that does not
// answer), keeping its code and details.
func atServer(u string, err error) error {
	var e *errs.Error
	if err == nil || !errors.As(err, &e) {
		if err == nil {
			return nil
		}
		return fmt.Errorf("server %s: %w", u, err)
	}
	c := *e
	prefix := "server " + u
	if c.Code == api.CodeUnauthorized {
		prefix += " refused the token"
	}
	if c.Msg == "" {
		c.Msg = prefix
	} else {
		c.Msg = prefix + ": " + c.Msg
	}
	return &c
}

// gone reports whether err is the server's answer that it has no such sandbox (for this
// token), not a server that did not answer.
func gone(err error) bool {
	return errs.CodeOf(err) == errs.SandboxUnavailable && !remote.Unreachable(err)
}

// remoteNew creates a sandbox on the server of o, refusing (and deleting) one with more
// network than o asks: the server's default may give it.
func remoteNew(ctx context.Context, o Options) (*remote.Sandbox, string, error) {
	cfg, err := o.RemoteConfig()
	if err != nil {
		return nil, "", err
	}
	sb, err := remote.New(ctx, cfg)
	if err != nil {
		return nil, "", atServer(cfg.URL, err)
	}
	info := sb.Info()
	more := info.AllowNetwork && !o.AllowNetwork
	if !o.AllowNetwork {
		for _, h := range info.AllowHosts {
			more = more || !slices.Contains(o.AllowHosts, h)
		}
	}
	if more {
		sb.Stop(context.WithoutCancel(ctx))
		return nil, "", errs.New(errs.IsolationUnavailable, "remote", "",
			"server %s gave the sandbox network access that was not asked for (allowNetwork %t, allowHosts %v: its own defaults); the sandbox is deleted", cfg.URL, info.AllowNetwork, info.AllowHosts)
	}
	return sb, cfg.URL, nil
}

// remoteDriver: each sandbox lives on a server. An ephemeral one is deleted on the server by
// Stop; a long-lived one is detached (it stays on the server, for its TTL and idle timeout) and
// found again by the server's id, which the record keeps as Backend, with the server's URL,
// never the token: the token comes from the Options of each call.
var remoteDriver = driver{
	open: func(ctx context.Context, o Options) (adapter.Sandbox, error) {
		sb, _, err := remoteNew(ctx, o)
		if err != nil {
			return nil, err
		}
		return sb, nil
	},
	create: func(ctx context.Context, o Options, rs records, rec *Record) error {
		sb, u, err := remoteNew(ctx, o)
		if err != nil {
			return err
		}
		rec.Backend, rec.URL, rec.Image = sb.ID(), u, sb.Info().Image
		sb.Detach()
		return nil
	},
	attach: func(ctx context.Context, o Options, rec Record) (adapter.Sandbox, error) {
		cfg, err := o.remoteAt(rec)
		if err != nil {
			return nil, err
		}
		sb, err := remote.Attach(ctx, cfg, rec.Backend)
		if gone(err) {
			return nil, errs.New(errs.SandboxUnavailable, "attach", "", "sandbox %s: the server %s has it no more (it expired, was deleted, or is another token's)", rec.ID, rec.URL)
		}
		if err != nil {
			return nil, atServer(rec.URL, err)
		}
		return sb, nil
	},
	detach: func(ctx context.Context, sb adapter.Sandbox) error {
		if r, ok := sb.(*remote.Sandbox); ok {
			r.Detach()
		}
		return nil
	},
	destroy: func(ctx context.Context, o Options, rec Record) error {
		cfg, err := o.remoteAt(rec)
		if err != nil {
			return err
		}
		if err := remote.Remove(ctx, cfg, rec.Backend); err != nil && !gone(err) {
			return atServer(rec.URL, err)
		}
		return nil
	},
	alive: func(ctx context.Context, o Options, rec Record) (bool, error) {
		cfg, err := o.remoteAt(rec)
		if err != nil {
			return false, err
		}
		sb, err := remote.Attach(ctx, cfg, rec.Backend)
		switch {
		case err == nil:
			sb.Detach()
			return true, nil
		case gone(err):
			return false, nil
		}
		return false, atServer(rec.URL, err)
	},
	setPaused: func(ctx context.Context, o Options, rec Record, paused bool) error {
		cfg, err := o.remoteAt(rec)
		if err != nil {
			return err
		}
		sb, err := remote.Attach(ctx, cfg, rec.Backend)
		if gone(err) {
			return errs.New(errs.SandboxUnavailable, "remote pause", "", "sandbox %s: the server %s has it no more (it expired, was deleted, or is another token's)", rec.ID, rec.URL)
		}
		if err != nil {
			return atServer(rec.URL, err)
		}
		defer sb.Detach()
		if paused {
			err = sb.Pause(ctx)
		} else {
			err = sb.Resume(ctx)
		}
		return atServer(rec.URL, err) // the server's refusal of an adapter without pause: errs.InvalidInput
	},
	fork: func(ctx context.Context, o Options, rs records, src adapter.Sandbox, rec *Record) (adapter.CopyReport, error) {
		c, err := forkAs[*remote.Sandbox](ctx, "remote", src)
		if err != nil {
			return adapter.CopyReport{}, atServer(rec.URL, err)
		}
		rec.Backend = c.ID() // rec.URL is the source's: the fork is on its server
		c.Detach()
		return adapter.CopyReport{}, nil
	},
}
