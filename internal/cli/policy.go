package cli

import (
	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/policy"
)

// checkPolicy applies command inspection (SPEC.md section 4, layer 1) to an exec argv while the
// network is off, as the bash tool does: TOOL_NETWORK_DISABLED or TOOL_GIT_REMOTE_DISABLED. Like
// the bash tool, it applies only where a network exists (policy.Needed): not in the memory
// adapter.
func checkPolicy(sb adapter.Sandbox, argv []string, allowNetwork bool) error {
	if allowNetwork || !policy.Needed(sb) {
		return nil
	}
	return policy.Check(argv).Err("exec")
}
