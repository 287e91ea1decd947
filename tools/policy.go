package tools

import "github.com/sandboxer/sandboxer/policy"

// checkNetwork is the command inspection of SPEC.md section 4 (layer 1), run by bash when the
// network is off: nil, or errs.NetworkDisabled / errs.GitRemoteDisabled with Details["command"].
func checkNetwork(argv []string) error {
	return policy.Check(argv).Err("bash")
}
