package tools

import (
	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/policy"
)

// The values of BashResult.NetworkPolicy.
const (
	// PolicyInspected: the network is off and command inspection allowed the command.
	PolicyInspected = "inspected"
	// PolicyNoNetwork: the network is off and the sandbox has no network at all (the memory
	// adapter), so inspection does not apply and refused nothing.
	PolicyNoNetwork = "no-network"
	// PolicyOff: allowNetwork is on; nothing was inspected.
	PolicyOff = "off"
)

// checkNetwork is the command inspection of SPEC.md section 4 (layer 1), run by bash when the
// network is off and the sandbox has a network to protect (policy.Needed): nil, or
// errs.NetworkDisabled / errs.GitRemoteDisabled with Details["command"]. It returns which of
// the Policy* values applied.
func checkNetwork(sb adapter.Sandbox, allowNetwork bool, argv []string) (string, error) {
	switch {
	case allowNetwork:
		return PolicyOff, nil
	case !policy.Needed(sb):
		return PolicyNoNetwork, nil
	}
	return PolicyInspected, policy.Check(argv).Err("bash")
}
