package tools

import (
	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/policy"
)

// The values of BashResult.NetworkPolicy.
const (
	// PolicyInspected: the network is off and command inspection allowed the command (where the
	// sandbox enforces it, network clients to its own loopback too: policy.CheckEnforced).
	PolicyInspected = "inspected"
	// PolicyNoNetwork: the network is off and the sandbox has no network at all (the memory
	// adapter), so inspection does not apply and refused nothing.
	PolicyNoNetwork = "no-network"
	// PolicyOff: allowNetwork is on; nothing was inspected.
	PolicyOff = "off"
	// PolicyAllowlist: the sandbox's only way out is its egress proxy (allowHosts), and
	// inspection found no host outside the allowlist.
	PolicyAllowlist = "allowlist"
)

// CheckNetwork is the command inspection of SPEC.md section 4 (layer 1), run by bash and the
// CLI's exec (op) when the network is off and the sandbox has a network to protect
// (policy.Needed): nil, or errs.NetworkDisabled / errs.GitRemoteDisabled with
// Details["command"]. With an allowlist it is policy.CheckAllowlist, and a sandbox that cannot
// carry the egress proxy is errs.SandboxUnavailable; where the sandbox enforces the network off
// (adapter.NetworkEnforcer), policy.CheckEnforced. It returns which of the Policy* values applied.
func CheckNetwork(op string, sb adapter.Sandbox, allowNetwork bool, allowHosts []string, argv []string) (string, error) {
	switch {
	case allowNetwork:
		return PolicyOff, nil
	case len(allowHosts) > 0:
		if err := AllowlistUsable(sb); err != nil {
			return "", err
		}
		al, err := egress.ParseAllowlist(allowHosts)
		if err != nil {
			return "", err
		}
		return PolicyAllowlist, policy.CheckAllowlist(argv, al.Allows).Err(op)
	case !policy.Needed(sb):
		return PolicyNoNetwork, nil
	}
	if e, ok := sb.(adapter.NetworkEnforcer); ok && e.EnforcesNetworkOff() {
		return PolicyInspected, policy.CheckEnforced(argv).Err(op)
	}
	return PolicyInspected, policy.Check(argv).Err(op)
}

// AllowlistUsable reports whether sb can serve an allowlist: errs.SandboxUnavailable for a
// sandbox without any network (the memory adapter) and for one made without AllowHosts in its
// adapter's Config (it has no egress proxy).
func AllowlistUsable(sb adapter.Sandbox) error {
	if !policy.Needed(sb) {
		return errs.New(errs.SandboxUnavailable, "bash", "", "this sandbox has no network at all (memory adapter), so an allowlist (allow-hosts) cannot be served: use the local (with a network namespace), docker or oci adapter")
	}
	if egress.Of(sb) == nil {
		return errs.New(errs.SandboxUnavailable, "bash", "", "allowHosts is set but the sandbox has no egress proxy: make it with AllowHosts in its adapter's Config (sandboxer doctor lists the adapters that can carry one)")
	}
	return nil
}
