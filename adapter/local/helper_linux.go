//go:build linux && !sandboxer_portable

package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/internal/inherited"
)

// The helper is this same binary, re-executed by the adapter with argv[0] set to helperArg0 and the
// environment variable helperEnv set to 1; its JSON spec is the first message on its connection
// (not the environment, which every process of the sandbox could read in /proc/1/environ). The package's init function recognises it
// and runs the helper instead of the program's main, so every binary that links this package (the
// CLI, a library user's program, a test binary) carries the helper without any call in main.
const (
	helperArg0 = "sandboxer-local-helper"
	helperEnv  = "SANDBOXER_LOCAL_HELPER"
	helperFD   = 3 // the SOCK_SEQPACKET connection to the adapter
	// maxSources is the most view sources one spec carries: the kernel passes at most 253
	// descriptors in one message (SCM_MAX_FD).
	maxSources = 253
)

// initArg0 and initEnv mark the per-command init: PID 1 of a command's own PID namespace, used
// where cgroups are not available, so that the namespace (and every descendant) ends with it.
const (
	initArg0 = "sandboxer-local-init"
	initEnv  = "SANDBOXER_LOCAL_INIT=1"
)

// The unix-connect layer's supervisor (unixconnect_linux.go) is this binary too, started by the
// helper, with the rule telling the sandbox's sockets from others (helperSpec.UnixPeers).
const (
	supervisorArg0 = "sandboxer-local-unix-supervisor"
	supervisorEnv  = "SANDBOXER_LOCAL_UNIX_SUPERVISOR"
	peersNetNS     = "netns" // bound in this network namespace, the sandbox's own
	peersUID       = "uid"   // the host's network namespace: bound by a socket of the sandbox's host uid
)

func init() {
	if len(os.Args) == 0 {
		return
	}
	janitor.Serve(releaseLeft)
	switch os.Args[0] {
	case helperArg0:
		if os.Getenv(helperEnv) == "1" {
			os.Exit(helperMain())
		}
	case supervisorArg0:
		if len(os.Args) == 2 && os.Getenv(supervisorEnv) == "1" {
			os.Exit(supervisorMain(os.Args[1]))
		}
	case initArg0:
		if len(os.Args) > 2 && os.Getenv(strings.TrimSuffix(initEnv, "=1")) == "1" {
			os.Exit(initMain(os.Args[1], os.Args[2:]))
		}
	}
}

// initMain runs one command as the child of this PID 1, forwards catchable signals to its process
// group, reaps everything, and exits with the command's status (128+signo for a signal), which
// takes the whole namespace down.
func initMain(path string, argv []string) int {
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if kv != initEnv {
			env = append(env, kv)
		}
	}
	sigc := make(chan os.Signal, 16)
	signal.Notify(sigc, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env: env, Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
		return 127
	}
	for sig := range sigc {
		if sig != syscall.SIGCHLD {
			_ = syscall.Kill(-pid, sig.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if p <= 0 || err != nil {
				break
			}
			if p == pid {
				if ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ws.ExitStatus()
			}
		}
	}
	return 127
}

// helperSpec is what the adapter asks the helper to set up before it serves commands.
type helperSpec struct {
	Net      bool      `json:"net"`      // running in a new network namespace: bring loopback up
	Proc     bool      `json:"proc"`     // mount a private /proc for the new PID namespace
	Landlock bool      `json:"landlock"` // apply the rules below
	LandNet  bool      `json:"landNet"`  // also deny TCP bind/connect (when there is no network namespace)
	Rules    fsRules   `json:"rules"`
	View     *viewSpec `json:"view,omitempty"` // the file system view to build (nil: the host's root)
	Probe    bool      `json:"probe"`          // report and exit
	Exe      string    `json:"exe"`            // this binary, to start per-command inits
	CgroupNS bool      `json:"cgroupNS"`       // make a cgroup namespace first (the adapter put the helper in its cgroups)
	Disabled []string  `json:"disabled,omitempty"`
	// UnixPeers, when set, applies the unix-connect layer with this rule (peersNetNS, peersUID).
	UnixPeers string `json:"unixPeers,omitempty"`
}

// helperReady is the helper's first message: which layers it applied, and why not the others.
type helperReady struct {
	Layers      []string          `json:"layers"`
	Missing     map[string]string `json:"missing,omitempty"`
	LandlockABI int               `json:"landlockABI"`
	// Caches are the caches of the view mounted (their paths), CacheErr why the others are not
	// (see caches_linux.go).
	Caches   []string `json:"caches,omitempty"`
	CacheErr string   `json:"cacheErr,omitempty"`

	oomAdj *os.File // the helper's /proc/self/oom_score_adj, opened before Landlock (see preferForOOM)
}

func helperMain() int {
	// Commands are forked from this goroutine (the serve loop), always on this thread, which
	// alone holds the sandbox's session keyring (lockDown).
	runtime.LockOSThread()
	// Descriptors the sandboxer inherited without close-on-exec (from whoever started it) would
	// reach every command, and the helper would hold them for the sandbox's life (a caller's
	// flock, the write end of its pipeline): closed, all but the connection.
	if err := inherited.Close(helperFD); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxer helper: closing inherited descriptors:", err)
		return 2
	}
	os.Clearenv()
	// The connection stays blocking and outside the runtime's poller: the serve loop waits for
	// it in poll(2) on its own thread, which the kernel then wakes directly.
	conn := os.NewFile(helperFD, "helper-conn")
	// The spec, with the view's sources when the adapter cloned them.
	var spec helperSpec
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*maxSources))
	n, files, err := recvFiles(conn, buf, oob)
	if err == nil {
		err = json.Unmarshal(buf[:n], &spec)
	}
	var clones *viewClones
	if err == nil && spec.View != nil && len(spec.View.Sources) > 0 {
		clones = &viewClones{sources: spec.View.Sources, files: files}
		if len(files) != len(spec.View.Sources) {
			err = fmt.Errorf("%d view sources but %d descriptors", len(spec.View.Sources), len(files))
		}
	} else {
		closeFiles(files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxer helper: reading the spec:", err)
		return 2
	}
	// As PID 1 of its namespace the helper must not die of a stray signal from a command: a
	// handled signal is ignored here and reset to its default in every command it starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
		syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)

	ready := setupHelper(spec, clones)
	lockDown(spec, &ready)
	if err := sendFile(conn, ready, nil); err != nil || spec.Probe {
		return 0
	}
	h := &helperServer{conn: conn, exe: spec.Exe, oomAdj: ready.oomAdj, running: map[int]*helperCmd{}, pgids: map[uint64]int{}}
	if err := h.serve(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxer helper:", err)
		return 2
	}
	return 0
}

// setupHelper applies the layers the spec asks for, best effort, and says which took. clones are
// the view's sources when the adapter cloned them (setupHelper closes them).
func setupHelper(spec helperSpec, clones *viewClones) helperReady {
	r := helperReady{Missing: map[string]string{}}
	if spec.CgroupNS {
		// On this thread, the one commands are forked from. A helper left without it shows
		// commands the host's cgroup names: the view's cgroup-less /proc/self/cgroup aside,
		// nothing depends on it, so it is not a layer of its own.
		_ = unix.Unshare(unix.CLONE_NEWCGROUP)
	}
	r.Layers = append(r.Layers, LayerUserNS, LayerPIDNS)
	if err := unix.Sethostname([]byte(sandboxHostname)); err != nil {
		r.Missing[LayerUTSNS] = "sethostname: " + err.Error()
		r.Missing[LayerIPCNS] = "no namespaces of its own: " + err.Error()
	} else {
		r.Layers = append(r.Layers, LayerIPCNS, LayerUTSNS) // made with the helper (sandboxNamespaces)
	}
	if spec.View != nil {
		err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		var cacheErr error
		if err == nil {
			r.Caches, cacheErr, err = buildView(*spec.View, spec.Proc, clones)
		} else if clones != nil {
			clones.Close()
		}
		if err == nil {
			// The view's /tmp, /var/tmp and /dev/shm are the sandbox's own: writable, and so
			// are the caches' overlays (only those mounted: never the caller's directory).
			spec.Rules.Write = append(spec.Rules.Write, "/tmp", "/var/tmp", "/dev/shm")
			spec.Rules.Write = append(spec.Rules.Write, r.Caches...)
			if cacheErr != nil {
				r.CacheErr = cacheErr.Error()
			}
			r.Layers = append(r.Layers, LayerFSView)
			if spec.Proc {
				r.Layers = append(r.Layers, LayerProc)
			}
			spec.Proc = false // mounted in the view
		} else {
			r.Missing[LayerFSView] = err.Error()
		}
	}
	if spec.Proc {
		err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		if err == nil {
			err = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		}
		if err != nil {
			r.Missing[LayerProc] = "mount proc: " + err.Error()
		} else {
			r.Layers = append(r.Layers, LayerProc)
		}
	}
	if spec.Net {
		if err := loopbackUp(); err != nil {
			// Without loopback the namespace still has no route out; report it anyway.
			r.Missing["loopback"] = err.Error()
		}
		r.Layers = append(r.Layers, LayerNetNS)
	}
	// Landlock leaves /proc read-only: the file that makes commands the OOM killer's first
	// choice is opened before it applies.
	r.oomAdj, _ = os.OpenFile("/proc/self/oom_score_adj", os.O_WRONLY, 0)
	abi, _ := landlockABI()
	r.LandlockABI = abi
	if spec.Landlock {
		switch {
		case abi < 1:
			r.Missing[LayerLandlock] = "landlock is not supported by this kernel or not enabled at boot"
		default:
			// One ruleset for the files, the scopes and (LandNet) TCP: Landlock takes
			// LANDLOCK_ACCESS_FS_REFER as handled by every layer, so a second, scope- or
			// network-only layer would refuse every rename across directories (EXDEV: git mv,
			// package managers) though the file rules grant it.
			cfg := landlock.V11.BestEffort()
			if !spec.LandNet {
				cfg.HandledAccessNet = 0
			}
			if err := cfg.Restrict(spec.Rules.landlockRules()...); err != nil {
				r.Missing[LayerLandlock] = err.Error()
				break
			}
			r.Layers = append(r.Layers, LayerLandlock)
			if abi >= 6 {
				r.Layers = append(r.Layers, LayerLandlockScope)
			}
			if spec.LandNet {
				if abi < 4 {
					r.Missing[LayerLandlockNet] = fmt.Sprintf("landlock ABI %d cannot restrict TCP (needs 4)", abi)
				} else {
					r.Layers = append(r.Layers, LayerLandlockNet)
				}
			}
		}
	}
	return r
}

// lockDown ends the helper's set-up: a fresh session keyring (commands never see the caller's
// keys), an empty capability bounding set (every program it starts, as root of the user namespace,
// execs with no capability, so it cannot trace the helper or undo the view), and a helper that is
// not dumpable (no ptrace, no pidfd_getfd of its descriptors, no /proc/1/mem). The helper keeps
// the capabilities it has for starting commands. The seccomp filter comes last, with the
// unix-connect layer's supervisor started before the capabilities go (see startSupervisor).
func lockDown(spec helperSpec, r *helperReady) {
	// keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): a new anonymous keyring, shared with nobody.
	// Credentials are per thread: this is the thread every command is forked from (helperMain
	// locks it; the serve loop that spawns runs on it).
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
		r.Missing[LayerKeyring] = "join a new session keyring: " + e.Error()
	} else {
		r.Layers = append(r.Layers, LayerKeyring)
	}
	var sup *supervisor
	var supErr error
	if spec.UnixPeers != "" {
		sup, supErr = startSupervisor(spec.Exe, spec.UnixPeers)
	}
	var err error
	for c := 0; c <= 63 && err == nil; c++ {
		if err = ll.AllThreadsPrctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); errors.Is(err, unix.EINVAL) {
			err = nil // past the kernel's last capability
			break
		}
	}
	if err == nil {
		err = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
	listener, serr := installSeccomp(sup != nil)
	if serr != nil {
		r.Missing[LayerNoSetuid] = "seccomp: " + serr.Error()
	} else {
		r.Layers = append(r.Layers, LayerNoSetuid)
	}
	switch {
	case spec.UnixPeers == "":
	case supErr != nil:
		r.Missing[LayerUnixConnect] = "the supervisor could not start: " + supErr.Error()
	case serr != nil:
		sup.kill()
		r.Missing[LayerUnixConnect] = "seccomp: " + serr.Error()
	default:
		supErr = sup.hand(listener)
		unix.Close(listener)
		if supErr != nil {
			sup.kill()
			r.Missing[LayerUnixConnect] = supErr.Error()
		} else {
			r.Layers = append(r.Layers, LayerUnixConnect)
		}
	}
	if err != nil {
		r.Missing[LayerNoCaps] = err.Error()
	} else {
		r.Layers = append(r.Layers, LayerNoCaps)
	}
}

// loopbackUp sets IFF_UP on lo in the current network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func landlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

// helperServer serves one adapter's requests. One loop (serve, on the helper's locked main thread)
// receives them, starts the commands and reaps them; only the replies to socket ops are written
// from other goroutines.
type helperServer struct {
	exe  string
	conn *os.File   // the connection to the adapter: blocking, read only by serve
	wmu  sync.Mutex // one reply at a time on conn
	reap *os.File   // an eventfd, set when SIGCHLD finds a child to reap that no pidfd reported
	// oomAdj is this process's oom_score_adj (nil: not open), raised around each fork so that
	// commands inherit commandOOMScoreAdj.
	oomAdj *os.File

	// Touched by serve alone.
	running map[int]*helperCmd // pid -> command
	pgids   map[uint64]int     // request id -> process group
}

// helperCmd is a running command, as its helper knows it.
type helperCmd struct {
	id     uint64
	status *os.File    // the write end of its status pipe
	output [2]*os.File // stdout and stderr, held until it is reaped (see done)
	pidfd  *os.File    // readable once it has exited; nil where the kernel made none, or once seen readable
}

func (h *helperServer) reply(r reply) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = sendFile(h.conn, r, nil)
}

// serve runs until the adapter is gone: it waits in poll(2) for a request, a command's exit (its
// pidfd) or a SIGCHLD of a child no pidfd covers (an orphan re-parented to this init, or a command
// started without a pidfd), and handles what came, one request at a time, reaping in between.
// All of it happens on this thread: an event wakes it directly, with no hand-off between threads
// (through the runtime's poller and a locked thread, a request cost two wake-ups, and an exit
// three more: the signal's thread, the reaping goroutine, the reader of the reply).
func (h *helperServer) serve() error {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	h.reap = os.NewFile(uintptr(efd), "reap") // blocking: outside the runtime's poller
	defer h.reap.Close()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGCHLD)
	go h.watchChildren(sigc)
	// While this thread waits, SIGCHLD is for the other threads: a command's exit wakes it
	// through the pidfd, and the signal's handler, run here, would wake the runtime's signal
	// thread onto this processor, ahead of the exit's report. (Blocked only in ppoll: a
	// command starts with the mask its thread had at the fork.)
	var waitMask unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &waitMask); err != nil {
		return err
	}
	waitMask.Val[(syscall.SIGCHLD-1)/64] |= 1 << ((syscall.SIGCHLD - 1) % 64)

	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*5))
	var polled []unix.PollFd
	var pids []int // the command of each polled pidfd, from polled[2]
	// The numbers are taken with Fd: these files are closed by this loop alone.
	for {
		polled = append(polled[:0],
			unix.PollFd{Fd: int32(h.conn.Fd()), Events: unix.POLLIN},
			unix.PollFd{Fd: int32(h.reap.Fd()), Events: unix.POLLIN})
		pids = pids[:0]
		for pid, c := range h.running {
			if c.pidfd != nil {
				polled = append(polled, unix.PollFd{Fd: int32(c.pidfd.Fd()), Events: unix.POLLIN})
				pids = append(pids, pid)
			}
		}
		if err := ppoll(polled, &waitMask); err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if polled[1].Revents != 0 { // a child no pidfd covers, perhaps: reap whatever is there
			var b [8]byte
			_, _ = h.reap.Read(b[:])
			h.reapAll()
		}
		for i, pid := range pids {
			if c, ok := h.running[pid]; ok && polled[2+i].Revents != 0 && !h.reapCmd(pid, c) {
				// Exited but not reaped: a sibling traces it, and reaps it first. Its pidfd
				// would stay readable; SIGCHLD tells when it can be reaped.
				c.pidfd.Close()
				c.pidfd = nil
			}
		}
		if polled[0].Revents != 0 && !h.receive(buf, oob) {
			return nil // the adapter is gone: everything in this PID namespace dies with its init
		}
	}
}

// sigsetSize is the size of the kernel's sigset_t: 64 signals, 128 on MIPS.
func sigsetSize() uintptr {
	if strings.HasPrefix(runtime.GOARCH, "mips") {
		return 16
	}
	return 8
}

// ppoll waits without a timeout, with the signal mask mask. (unix.Ppoll gives the kernel a mask
// size of 0, which it refuses with a mask.)
func ppoll(fds []unix.PollFd, mask *unix.Sigset_t) error {
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), 0,
		uintptr(unsafe.Pointer(mask)), sigsetSize(), 0)
	if e != 0 {
		return e
	}
	return nil
}

// watchChildren turns a SIGCHLD into a wake-up of serve when a child is waiting to be reaped
// (a peek, WNOWAIT: serve reaps). A command's exit has usually been reaped through its pidfd
// by then, and costs serve no second wake-up.
func (h *helperServer) watchChildren(sigc <-chan os.Signal) {
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	for range sigc {
		var si unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == nil && si.Signo != 0 {
			_, _ = h.reap.Write(one)
		}
	}
}

// receive handles one request, if one is there. It returns false once the adapter is gone. The
// descriptors that came with it are its own, as bare numbers: spawn lends them to the fork and
// hands those it keeps to files (os.NewFile costs a system call each, which the way to the fork
// is spared); receive closes the rest.
func (h *helperServer) receive(buf, oob []byte) bool {
	var n, oobn, flags int
	err := withFDs([]*os.File{h.conn}, func(c []int) (err error) {
		n, oobn, flags, _, err = unix.Recvmsg(c[0], buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		return err
	})
	fds := receivedFDs(oob[:oobn])
	defer closeFDs(fds)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
		return true
	case err != nil || n == 0:
		return false
	}
	var req request
	if err := req.decode(buf[:n]); err != nil {
		return true
	}
	switch req.Op {
	case "spawn":
		h.spawn(req, fds, flags&unix.MSG_CTRUNC != 0)
	case "dial", "listen":
		go h.socket(req)
	case "reset":
		h.reset(req) // on this thread: commands are forked from it
	case "signal":
		if pg, ok := h.pgids[req.ID]; ok {
			_ = syscall.Kill(-pg, syscall.Signal(req.Sig))
		}
	}
	return true
}

// receivedFDs are the descriptors of a message's SCM_RIGHTS (received close-on-exec), as numbers.
func receivedFDs(oob []byte) []int {
	var fds []int
	msgs, _ := unix.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		if rights, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, rights...)
		}
	}
	return fds
}

// closeFDs closes the numbers of fds that no file took (-1).
func closeFDs(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// takeFile hands fds[i] to a file, which owns it from then on.
func takeFile(fds []int, i int, name string) *os.File {
	f := os.NewFile(uintptr(fds[i]), name)
	fds[i] = -1
	return f
}

// socket makes the loopback socket of a "dial" or "listen" request in this process's network
// namespace (the sandbox's) and replies with it. The reply's descriptor is this process's only
// copy, closed once sent. A dial's socket is not connected yet: the adapter connects it (a socket
// stays in the namespace it was made in), as the helper's own connect would be the unix-connect
// supervisor's, which cannot read a helper that is not dumpable.
func (h *helperServer) socket(req request) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil && req.Op == "listen" {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		if err = unix.Bind(fd, &unix.SockaddrInet4{Port: req.Port, Addr: [4]byte{127, 0, 0, 1}}); err == nil {
			err = unix.Listen(fd, unix.SOMAXCONN)
		}
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		r := reply{ID: req.ID, Err: err.Error()}
		var en syscall.Errno
		if errors.As(err, &en) {
			r.Errno = int(en)
		}
		h.reply(r)
		return
	}
	f := os.NewFile(uintptr(fd), "socket")
	defer f.Close()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = withFDs([]*os.File{f}, func(fds []int) error { return sendFile(h.conn, reply{ID: req.ID, Socket: true}, fds) })
}

// receivedFiles turns the descriptors of a message's SCM_RIGHTS (received close-on-exec:
// MSG_CMSG_CLOEXEC) into files, their only owners.
func receivedFiles(oob []byte) []*os.File {
	var files []*os.File
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "received"))
		}
	}
	return files
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// spawn starts the command of req with fds, receive's: its status pipe, stdin, stdout, stderr
// and, if req.Cgroup, its cgroup's directory. The status pipe, stdout and stderr go to files that
// the command's entry in h.running keeps until it is reaped (see done); the adapter made its stdio
// blocking, as a command expects.
func (h *helperServer) spawn(req request, fds []int, truncated bool) {
	want := 4
	if req.Cgroup {
		want = 5
	}
	if truncated || len(fds) != want {
		if len(fds) > 0 {
			status := takeFile(fds, 0, "status")
			writeRecord(status, recBad, 0)
			status.Close()
		}
		return
	}
	pidfd := -1
	attr := &syscall.ProcAttr{
		Dir:   req.Dir,
		Env:   req.Env,
		Files: []uintptr{uintptr(fds[1]), uintptr(fds[2]), uintptr(fds[3])},
		Sys:   &syscall.SysProcAttr{Setpgid: true, PidFD: &pidfd},
	}
	if req.Cgroup {
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, fds[4]
	}
	path, args := req.Path, req.Args
	if req.Init {
		path, args = h.exe, append([]string{initArg0, req.Path}, req.Args...)
		attr.Env = append(slices.Clone(req.Env), initEnv)
		attr.Sys.Cloneflags = syscall.CLONE_NEWPID
	}
	h.setOOMScoreAdj(commandOOMScoreAdj) // inherited by the command
	pid, err := syscall.ForkExec(path, args, attr)
	h.setOOMScoreAdj("0")
	status := takeFile(fds, 0, "status")
	if err != nil {
		var en syscall.Errno
		errors.As(err, &en)
		writeRecord(status, recFailed, uint32(en))
		status.Close()
		return
	}
	c := &helperCmd{id: req.ID, status: status, output: [2]*os.File{takeFile(fds, 2, "stdout"), takeFile(fds, 3, "stderr")}}
	if pidfd >= 0 {
		c.pidfd = os.NewFile(uintptr(pidfd), "pidfd")
	}
	h.running[pid] = c
	h.pgids[req.ID] = pid
	writeRecord(status, recStarted, 0)
}

// commandOOMScoreAdj is the oom_score_adj of commands: the kernel's OOM killer takes them before
// the helper (0) when the sandbox's memory is full. What fills it may be no process's own memory
// (the view's tmpfs directories, shared memory), and by size alone the helper, the biggest
// process, would go, and every command with it.
const commandOOMScoreAdj = "500"

// setOOMScoreAdj sets the helper's own oom_score_adj: raised for the instant of a fork, so that
// the command inherits it, and back to 0 (no privilege is needed for either: the value never goes
// below where it started).
func (h *helperServer) setOOMScoreAdj(v string) {
	if h.oomAdj != nil {
		_, _ = h.oomAdj.WriteAt([]byte(v), 0)
	}
}

// reapAll collects every exited child (commands and orphans re-parented to this init), and
// reports the commands (done).
func (h *helperServer) reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		if c, ok := h.running[pid]; ok {
			h.done(pid, c, ws)
		}
	}
}

// reapCmd reaps the command pid, whose pidfd was readable, and reports it (done). It returns false
// if there was nothing to reap.
func (h *helperServer) reapCmd(pid int, c *helperCmd) bool {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if got != pid {
			return false
		}
		h.done(pid, c, ws)
		return true
	}
}

// done reports a reaped command on its status pipe, after killing what it left in its process
// group, and forgets it.
func (h *helperServer) done(pid int, c *helperCmd, ws syscall.WaitStatus) {
	delete(h.running, pid)
	delete(h.pgids, c.id)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	// The reader wakes once, to the record and the end of the output together: the helper's
	// copies of the output pipes close right after it (the command's own closed as it exited).
	writeRecord(c.status, recExited, uint32(ws))
	closeFiles(c.output[:])
	c.status.Close()
	if c.pidfd != nil {
		c.pidfd.Close()
	}
}

// sendFile writes one JSON message with optional descriptors on the helper's side, whose
// connection is a plain blocking file.
func sendFile(conn *os.File, v any, fds []int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return withFDs([]*os.File{conn}, func(c []int) error {
		for {
			if err := unix.Sendmsg(c[0], b, oob, nil, 0); !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	})
}

// recvFiles receives one message on the helper's connection (blocking), its descriptors
// (close-on-exec) as files.
func recvFiles(conn *os.File, buf, oob []byte) (n int, files []*os.File, err error) {
	err = withFDs([]*os.File{conn}, func(c []int) error {
		for {
			var oobn int
			n, oobn, _, _, err = unix.Recvmsg(c[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if oobn > 0 {
				files = receivedFiles(oob[:oobn])
			}
			return err
		}
	})
	return n, files, err
}

// reachable drops the paths this process cannot look up for a reason other than their absence
// (a directory on the way it may not search): a rule on them would fail the whole ruleset, and
// what they would allow is out of reach anyway.
func reachable(paths []string) []string {
	return slices.DeleteFunc(slices.Clone(paths), func(p string) bool {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err != nil && !errors.Is(err, unix.ENOENT)
	})
}

// landlockRules turns the policy into go-landlock rules, for the paths this process can reach.
func (r fsRules) landlockRules() []landlock.Rule {
	r.Read, r.Exe, r.ReadFiles = reachable(r.Read), reachable(r.Exe), reachable(r.ReadFiles)
	r.ReadDir, r.Write, r.Devices = reachable(r.ReadDir), reachable(r.Write), reachable(r.Devices)
	var rules []landlock.Rule
	if len(r.Read) > 0 {
		rules = append(rules, landlock.RODirs(r.Read...).IgnoreIfMissing())
	}
	if len(r.Exe) > 0 {
		rules = append(rules, landlock.ROFiles(r.Exe...).IgnoreIfMissing())
	}
	if len(r.ReadFiles) > 0 {
		rules = append(rules, landlock.ROFiles(r.ReadFiles...).IgnoreIfMissing())
	}
	if len(r.ReadDir) > 0 {
		rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadDir), r.ReadDir...).IgnoreIfMissing())
	}
	if len(r.Write) > 0 {
		rules = append(rules, landlock.RWDirs(r.Write...).WithRefer().WithResolveUnix().IgnoreIfMissing())
	}
	if len(r.Devices) > 0 {
		rules = append(rules, landlock.RWFiles(r.Devices...).WithIoctlDev().IgnoreIfMissing())
	}
	return rules
}
