//go:build linux && !sandboxer_portable

package local

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// plainAttr is how a plain command starts: a session of its own (no controlling terminal: no
// TIOCSTI into the caller's shell), SIGKILL when this process dies, and, with withPidfd, a pidfd
// of the child in *pidFD.
func plainAttr(withPidfd bool, pidFD *int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if withPidfd {
		a.PidFD = pidFD
	}
	return a
}

// pipeCloexec makes a pipe whose two descriptors are close-on-exec.
func pipeCloexec(fds []int) error { return unix.Pipe2(fds, unix.O_CLOEXEC) }

// newWakeFD makes the eventfd that collect's poll loop wakes on when the call's context ends.
func newWakeFD() (int, error) { return unix.Eventfd(0, unix.EFD_CLOEXEC) }

// KernelIsolation says whether this build of the adapter can apply kernel isolation at all (Linux):
// Probe says which layers this machine allows.
const KernelIsolation = true
