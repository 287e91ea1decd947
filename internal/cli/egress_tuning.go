//go:build !sandboxer_testhooks

package cli

import "github.com/sandboxer/sandboxer/egress"

// egressTuning tunes the egress proxies of inv's sandboxes: not at all in sandboxer (a build
// with the sandboxer_testhooks tag points them at loopback test servers: egress_testhooks.go).
func egressTuning(invocation) egress.Config { return egress.Config{} }
