package cli

import (
	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/policy"
	"github.com/sandboxer/sandboxer/tools"
)

// checkPolicy applies command inspection (SPEC.md section 4, layer 1) to an exec argv while the
// network is off, as the bash tool does: TOOL_NETWORK_DISABLED or TOOL_GIT_REMOTE_DISABLED. Like
// the bash tool, it applies only where a network exists (policy.Needed): not in the memory
// adapter. With an allowlist it is policy.CheckAllowlist, and a sandbox that cannot serve one is
// SANDBOX_UNAVAILABLE.
func checkPolicy(sb adapter.Sandbox, argv []string, allowNetwork bool, allowHosts []string) error {
	if allowNetwork {
		return nil
	}
	if len(allowHosts) > 0 {
		if err := tools.AllowlistUsable(sb); err != nil {
			return err
		}
		al, err := egress.ParseAllowlist(allowHosts)
		if err != nil {
			return err
		}
		return policy.CheckAllowlist(argv, al.Allows).Err("exec")
	}
	if !policy.Needed(sb) {
		return nil
	}
	return policy.Check(argv).Err("exec")
}
