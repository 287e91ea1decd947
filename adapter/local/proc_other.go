//go:build !linux || sandboxer_portable

package local

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The portable process calls (macOS; Linux with the sandboxer_portable tag, which the tests use to
// run this code where it can run): no pidfd, no parent-death signal, no pipe2, no eventfd.

// plainAttr: a session of its own (no controlling terminal: no TIOCSTI into the caller's shell).
// There is no parent-death signal and no pidfd: a command outlives a SIGKILLed caller, and collect
// takes the path without an exit descriptor (collectAsync). *pidFD stays -1.
func plainAttr(bool, *int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// pipeCloexec makes a pipe whose two descriptors are close-on-exec, under the fork lock so that a
// concurrent fork cannot inherit them in between (as os.Pipe does where there is no pipe2).
func pipeCloexec(fds []int) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(fds); err != nil {
		return err
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return nil
}

// newWakeFD: there is no eventfd. Never reached: without a pidfd, collect does not poll.
func newWakeFD() (int, error) { return -1, unix.ENOSYS }

// KernelIsolation says whether this build of the adapter can apply kernel isolation at all: not
// here (isolate_other.go).
const KernelIsolation = false
