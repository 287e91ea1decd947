// Package janitor starts the janitor process of an adapter and writes to it: the adapters whose
// sandboxes leave things on the host (adapter/local: directories, cgroups, process groups;
// adapter/oci: containers) register them with a process that outlives a SIGKILL of their owner.
//
// The janitor is this binary again (/proc/self/exe, with an argv[0] the adapter recognises in an
// init function), in a session of its own. Its stdin is a pipe whose write end only this process
// holds (close-on-exec: no command or runtime inherits it); this process writes one line per
// registration and release, in a protocol of the adapter's; when the pipe ends, this process is
// gone, and the janitor releases what is still registered, then exits.
package janitor

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// Conn is this process's end of a janitor's pipe.
type Conn struct {
	mu sync.Mutex
	w  *os.File // nil if the janitor could not start
}

// Start starts a janitor with argv[0] arg0 and the environment env, off the caller's path: what
// is sent meanwhile waits in the pipe. The janitor has no stdout or stderr (/dev/null): it would
// hold a pipe of this process's caller open after this process ended.
func Start(arg0 string, env []string) *Conn {
	c := &Conn{}
	r, w, err := os.Pipe()
	if err != nil {
		return c
	}
	c.w = w
	go func() {
		defer r.Close()
		cmd := &exec.Cmd{
			Path:        "/proc/self/exe",
			Args:        []string{arg0},
			Env:         env,
			Stdin:       r,
			SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		}
		if err := cmd.Start(); err != nil {
			return // writes then fail with EPIPE, which Send ignores
		}
		r.Close()
		_ = cmd.Wait() // it exits when this process is gone, or never before
	}()
	return c
}

// Send writes line (a line break in it drops it) to the janitor.
func (c *Conn) Send(line string) {
	if c.w == nil || strings.Contains(line, "\n") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.w.WriteString(line + "\n")
}
