package agent

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// initIgnored are the signals PID 1 of a container ignores. The kernel delivers a signal sent
// from inside the container to its PID 1 only when PID 1 handles it; the Go runtime handles every
// signal it has not been told to ignore, and for most of them exits. Ignored, they are dropped
// at the sender, so no command in the sandbox can end it (SIGKILL from inside never reaches a
// namespace's init). SIGCHLD stays: ignoring it would make the kernel reap children itself.
var initIgnored = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT,
	syscall.SIGBUS, syscall.SIGFPE, syscall.SIGUSR1, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGPIPE,
	syscall.SIGALRM, syscall.SIGTERM, syscall.SIGSTKFLT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
	syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGWINCH, syscall.SIGIO,
	syscall.SIGPWR, syscall.SIGSYS,
}

// Init is PID 1 of an oci container: it starts self with args (the agent proper, serving stdin
// and stdout, which it inherits) as its only child, reaps every process that is orphaned in the
// container (a PID 1 that does not leaves zombies behind), and returns the child's exit status
// (128+N for signal N) once the child has ended. The ignored signals (initIgnored) are reset
// for the child by exec, as a process's handled signals are; ignored ones would be inherited, so
// the child is started before they are ignored.
func Init(self string, args []string) int {
	cmd := exec.Command(self, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		os.Stderr.WriteString("sandboxer-agent: init: " + err.Error() + "\n")
		return 126
	}
	signal.Ignore(initIgnored...)
	child := cmd.Process.Pid
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 126 // no child left: cannot happen while the agent runs
		}
		if pid != child {
			continue // an orphan, reaped
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
