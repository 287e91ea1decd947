package local

import (
	"context"
	"path/filepath"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent/trustfile"
	"github.com/sandboxer/sandboxer/egress"
)

var _ egress.Egressed = (*Sandbox)(nil)

// Egress returns the sandbox's egress proxy, nil without Config.AllowHosts (egress.Egressed).
func (s *Sandbox) Egress() *egress.Proxy { return s.egress }

// egressEnv is c.Env with egress.Env in front when the sandbox has an allowlist and c runs in
// the network namespace, where the proxy is attached at the first such command. Without a
// network namespace there is nothing to attach to: c.Env as is.
func (s *Sandbox) egressEnv(ctx context.Context, c adapter.Command) ([]string, error) {
	if s.egress == nil || c.AllowNetwork || s.iso == nil {
		return c.Env, nil
	}
	if _, network := s.iso.capabilities(); network != adapter.NetNamespace {
		return c.Env, nil
	}
	env, err := s.egress.CommandEnv(ctx, s)
	if err != nil {
		return nil, err
	}
	return append(env, c.Env...), nil
}

// TrustCA implements egress.TrustStore: the host's bundle (the one the view shows) followed by
// pem, in a file of HOME.
func (s *Sandbox) TrustCA(ctx context.Context, pem []byte) (string, error) {
	path := filepath.Join(s.home.path, trustfile.Path)
	return path, trustfile.Write(path, pem, func() ([]byte, error) { return trustfile.System("/"), nil })
}
