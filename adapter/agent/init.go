package agent

import (
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"unsafe"
)

// initIgnoredPortable are the signals the agent drops as PID 1 of a container. The Go runtime handles
// every signal and, for most of them, exits: the agent takes them itself instead and drops them,
// so no command in the sandbox can end it (SIGKILL from inside never reaches a namespace's init).
// They are caught, not ignored (SIG_IGN): an ignored signal stays ignored in the processes the
// agent starts, a caught one is reset to its default by exec. SIGCHLD is caught for the reaper.
var initIgnoredPortable = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT,
	syscall.SIGBUS, syscall.SIGFPE, syscall.SIGUSR1, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGPIPE,
	syscall.SIGALRM, syscall.SIGTERM, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
	syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGWINCH, syscall.SIGIO,
	syscall.SIGSYS,
}

// initIgnored are the signals the agent drops as PID 1: the portable ones and, on Linux (where the
// agent runs as PID 1), SIGSTKFLT and SIGPWR (init_linux.go).
var initIgnored = append(initIgnoredPortable, initIgnoredOS...)

// ServeInit is Serve for the agent as PID 1 of a container (the oci adapter's): it drops the
// signals of initIgnored, and it reaps every process that is orphaned in the container (they all
// become its children), which a PID 1 must do or zombies pile up, without taking the exit status
// of a process it started and waits for.
func ServeInit(r io.Reader, w io.Writer) error {
	a := New(true)
	defer a.Close()
	return a.Serve(r, w)
}

// startReaper takes the signals of initIgnored and reaps orphans on SIGCHLD.
func startReaper() *reaper {
	rp := &reaper{waited: map[int]bool{}}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append(initIgnored, syscall.SIGCHLD)...)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGCHLD {
				rp.reap()
			}
		}
	}()
	return rp
}

// reaper reaps the children the agent did not start itself.
type reaper struct {
	// mu is held while a process is started and registered, so that reap never sees it
	// unregistered.
	mu     sync.Mutex
	waited map[int]bool // the agent's own processes: their Wait reaps them
}

// start runs start (which starts a process and returns its pid, or 0) and registers the pid.
func (rp *reaper) start(start func() int) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if pid := start(); pid > 0 {
		rp.waited[pid] = true
	}
}

// done forgets pid (reaped by its Wait) and reaps what may have waited behind it.
func (rp *reaper) done(pid int) {
	rp.mu.Lock()
	delete(rp.waited, pid)
	rp.mu.Unlock()
	rp.reap()
}

// Constants of waitid(2), which package syscall lacks.
const (
	pAll     = 0
	wNoHang  = 0x1
	wExited  = 0x4
	wNoWait  = 0x1000000
	siPidOff = 3*4 + 4*(unsafe.Sizeof(uintptr(0))/8) // si_pid in siginfo_t: after three ints, 8-aligned on 64-bit
)

// reap reaps every exited child that is not one of the agent's own processes. It looks at an
// exited child without reaping it (WNOWAIT); when that is one of the agent's own, it stops there:
// its Wait is about to reap it, and done then calls reap again.
func (rp *reaper) reap() {
	for {
		var info [128]byte
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])), wExited|wNoHang|wNoWait, 0, 0)
		if e != 0 {
			return // ECHILD: no children at all
		}
		pid := int(*(*int32)(unsafe.Pointer(&info[siPidOff])))
		if pid == 0 {
			return // children, but none exited
		}
		rp.mu.Lock()
		own := rp.waited[pid]
		rp.mu.Unlock()
		if own {
			return
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}
