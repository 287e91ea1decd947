//go:build !linux

package agent

import "os"

// initIgnoredOS: the agent runs as PID 1 only in a Linux container; elsewhere the package is built
// for the adapters' client side, and no other signal needs adding.
var initIgnoredOS []os.Signal
