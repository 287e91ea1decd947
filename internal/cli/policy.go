package cli

import (
	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/tools"
)

// checkPolicy applies command inspection (SPEC.md section 4, layer 1) to an exec argv while the
// network is off, as the bash tool does (tools.CheckNetwork): TOOL_NETWORK_DISABLED or
// TOOL_GIT_REMOTE_DISABLED, SANDBOX_UNAVAILABLE for an allowlist the sandbox cannot serve.
func checkPolicy(sb adapter.Sandbox, argv []string, allowNetwork bool, allowHosts []string) error {
	_, err := tools.CheckNetwork("exec", sb, allowNetwork, allowHosts, argv)
	return err
}
