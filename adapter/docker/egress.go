package docker

import "github.com/sandboxer/sandboxer/egress"

var _ egress.Egressed = (*Sandbox)(nil)

// Egress returns the sandbox's egress proxy, made at first use; nil without Config.AllowHosts
// (egress.Egressed). ExecuteCommand attaches it (Ensure) and env adds egress.EnvOf.
func (s *Sandbox) Egress() *egress.Proxy { return s.egress.Get(s.cfg.AllowHosts, s.cfg.Egress) }
