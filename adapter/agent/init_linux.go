package agent

import (
	"os"
	"syscall"
)

// initIgnoredOS are the Linux-only signals of initIgnored.
var initIgnoredOS = []os.Signal{syscall.SIGSTKFLT, syscall.SIGPWR}
