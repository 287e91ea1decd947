//go:build linux && !sandboxer_portable

package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
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

func init() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case helperArg0:
		if os.Getenv(helperEnv) == "1" {
			os.Exit(helperMain())
		}
	case janitorArg0:
		if os.Getenv(janitorEnv) == "1" {
			os.Exit(janitorMain())
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
	Disabled []string  `json:"disabled,omitempty"`
}

// helperReady is the helper's first message: which layers it applied, and why not the others.
type helperReady struct {
	Layers      []string          `json:"layers"`
	Missing     map[string]string `json:"missing,omitempty"`
	LandlockABI int               `json:"landlockABI"`
}

// request is one message from the adapter to the helper.
type request struct {
	Op   string   `json:"op"` // "spawn", "signal", "dial" or "listen"
	ID   uint64   `json:"id"`
	Path string   `json:"path,omitempty"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	Sig  int      `json:"sig,omitempty"`
	// Files: stdin, stdout, stderr and, if Cgroup, a cgroup directory, passed as SCM_RIGHTS.
	Cgroup bool `json:"cgroup,omitempty"`
	// Init runs the command under a per-command init in its own PID namespace.
	Init bool `json:"init,omitempty"`
	// Port is the loopback port of "dial" (connect to it) and "listen" (listen on it): the reply
	// carries the socket, made in the helper's network namespace, as SCM_RIGHTS.
	Port int `json:"port,omitempty"`
}

// reply is one message from the helper: a spawn result (Started or Err), an exit (Exited), or the
// result of a socket op (Socket, with the socket as SCM_RIGHTS, or Err).
type reply struct {
	ID      uint64 `json:"id"`
	Socket  bool   `json:"socket,omitempty"`
	Started bool   `json:"started,omitempty"`
	Err     string `json:"err,omitempty"`
	Errno   int    `json:"errno,omitempty"`
	Exited  bool   `json:"exited,omitempty"`
	Status  uint32 `json:"status,omitempty"` // syscall.WaitStatus

	socket *os.File // the descriptor that came with a Socket reply (adapter side)
}

func helperMain() int {
	// Commands are forked from this goroutine (the serve loop), always on this thread, which
	// alone holds the sandbox's session keyring (lockDown).
	runtime.LockOSThread()
	// Descriptors the sandboxer inherited without close-on-exec (from whoever started it) would
	// reach every command: from here on none but a command's stdio does.
	_ = unix.CloseRange(helperFD+1, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	os.Clearenv()
	f := os.NewFile(helperFD, "helper-conn")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxer helper:", err)
		return 2
	}
	conn := c.(*net.UnixConn)
	// The spec, with the view's sources when the adapter cloned them.
	var spec helperSpec
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*maxSources))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	files := receivedFiles(oob[:oobn])
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
	lockDown(&ready)
	if err := send(conn, ready, nil); err != nil || spec.Probe {
		return 0
	}
	h := &helperServer{conn: conn, running: map[int]uint64{}, exe: spec.Exe}
	h.serve()
	return 0
}

// setupHelper applies the layers the spec asks for, best effort, and says which took. clones are
// the view's sources when the adapter cloned them (setupHelper closes them).
func setupHelper(spec helperSpec, clones *viewClones) helperReady {
	r := helperReady{Missing: map[string]string{}}
	r.Layers = append(r.Layers, LayerUserNS, LayerPIDNS)
	if spec.View != nil {
		err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		if err == nil {
			err = buildView(*spec.View, spec.Proc, clones)
		} else if clones != nil {
			clones.Close()
		}
		if err == nil {
			// The view's /tmp, /var/tmp and /dev/shm are the sandbox's own: writable.
			spec.Rules.Write = append(spec.Rules.Write, "/tmp", "/var/tmp", "/dev/shm")
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
	abi, _ := landlockABI()
	r.LandlockABI = abi
	if spec.Landlock {
		switch {
		case abi < 1:
			r.Missing[LayerLandlock] = "landlock is not supported by this kernel or not enabled at boot"
		default:
			if err := landlock.V11.BestEffort().RestrictPaths(spec.Rules.landlockRules()...); err != nil {
				r.Missing[LayerLandlock] = err.Error()
				break
			}
			r.Layers = append(r.Layers, LayerLandlock)
			if abi >= 6 {
				if err := landlock.V11.BestEffort().RestrictScoped(); err == nil {
					r.Layers = append(r.Layers, LayerLandlockScope)
				}
			}
			if spec.LandNet {
				if abi < 4 {
					r.Missing[LayerLandlockNet] = fmt.Sprintf("landlock ABI %d cannot restrict TCP (needs 4)", abi)
				} else if err := landlock.V11.BestEffort().RestrictNet(); err != nil {
					r.Missing[LayerLandlockNet] = err.Error()
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
// the capabilities it has for starting commands.
func lockDown(r *helperReady) {
	// keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): a new anonymous keyring, shared with nobody.
	// Credentials are per thread: this is the thread every command is forked from (helperMain
	// locks it; the serve loop that spawns runs on it).
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
		r.Missing[LayerKeyring] = "join a new session keyring: " + e.Error()
	} else {
		r.Layers = append(r.Layers, LayerKeyring)
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
	if serr := installSeccomp(); serr != nil {
		r.Missing[LayerNoSetuid] = "seccomp: " + serr.Error()
	} else {
		r.Layers = append(r.Layers, LayerNoSetuid)
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

type helperServer struct {
	exe     string
	conn    *net.UnixConn
	wmu     sync.Mutex
	mu      sync.Mutex
	running map[int]uint64 // pid -> request id
	pgids   map[uint64]int // request id -> process group
}

func (h *helperServer) reply(r reply) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = send(h.conn, r, nil)
}

func (h *helperServer) serve() {
	h.pgids = map[uint64]int{}
	sigc := make(chan os.Signal, 16)
	signal.Notify(sigc, syscall.SIGCHLD)
	go func() {
		for range sigc {
			h.reap()
		}
	}()
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := h.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			// The adapter is gone: everything in this PID namespace dies with its init.
			return
		}
		files := receivedFiles(oob[:oobn])
		var req request
		if err := json.Unmarshal(buf[:n], &req); err != nil {
			closeFiles(files)
			continue
		}
		switch req.Op {
		case "spawn":
			h.spawn(req, files)
		case "dial", "listen":
			closeFiles(files)
			go h.socket(req)
		case "signal":
			closeFiles(files)
			h.mu.Lock()
			pg, ok := h.pgids[req.ID]
			h.mu.Unlock()
			if ok {
				_ = syscall.Kill(-pg, syscall.Signal(req.Sig))
			}
		default:
			closeFiles(files)
		}
	}
}

// socket makes the loopback socket of a "dial" or "listen" request in this process's network
// namespace (the sandbox's) and replies with it. The reply's descriptor is this process's only
// copy, closed once sent.
func (h *helperServer) socket(req request) {
	addr := &unix.SockaddrInet4{Port: req.Port, Addr: [4]byte{127, 0, 0, 1}}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if req.Op == "dial" {
			err = unix.Connect(fd, addr)
		} else {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			if err = unix.Bind(fd, addr); err == nil {
				err = unix.Listen(fd, unix.SOMAXCONN)
			}
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
	_ = withFDs([]*os.File{f}, func(fds []int) error { return send(h.conn, reply{ID: req.ID, Socket: true}, fds) })
}

// receivedFiles turns the descriptors of a message's SCM_RIGHTS (received close-on-exec: the net
// package reads with MSG_CMSG_CLOEXEC) into files, their only owners.
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

// spawn starts the command of req with files as its stdin, stdout, stderr and, if req.Cgroup, its
// cgroup's directory; it closes files.
func (h *helperServer) spawn(req request, files []*os.File) {
	defer closeFiles(files)
	want := 3
	if req.Cgroup {
		want = 4
	}
	if len(files) != want {
		h.reply(reply{ID: req.ID, Err: "bad descriptor count"})
		return
	}
	// Fd makes a file blocking again if it was not: a command's stdio is blocking.
	attr := &syscall.ProcAttr{
		Dir:   req.Dir,
		Env:   req.Env,
		Files: []uintptr{files[0].Fd(), files[1].Fd(), files[2].Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	if req.Cgroup {
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, int(files[3].Fd())
	}
	path, args := req.Path, req.Args
	if req.Init {
		path, args = h.exe, append([]string{initArg0, req.Path}, req.Args...)
		attr.Env = append(slices.Clone(req.Env), initEnv)
		attr.Sys.Cloneflags = syscall.CLONE_NEWPID
	}
	// The lock spans fork and registration so that the reaper cannot miss a command that exits
	// at once.
	h.mu.Lock()
	pid, err := syscall.ForkExec(path, args, attr)
	if err == nil {
		h.running[pid] = req.ID
		h.pgids[req.ID] = pid
		// Still under the lock: the reaper cannot report the exit before the start.
		h.reply(reply{ID: req.ID, Started: true})
	}
	h.mu.Unlock()
	if err != nil {
		r := reply{ID: req.ID, Err: err.Error()}
		var en syscall.Errno
		if errors.As(err, &en) {
			r.Errno = int(en)
		}
		h.reply(r)
	}
}

// reap collects every exited child (commands and orphans re-parented to this init) and reports
// the commands' statuses. What a command left in its process group is killed with it.
func (h *helperServer) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		h.mu.Lock()
		id, ok := h.running[pid]
		if ok {
			delete(h.running, pid)
			delete(h.pgids, id)
		}
		h.mu.Unlock()
		if ok {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			h.reply(reply{ID: id, Exited: true, Status: uint32(ws)})
		}
	}
}

// send writes one JSON message with optional descriptors.
func send(conn *net.UnixConn, v any, fds []int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err = conn.WriteMsgUnix(b, oob, nil)
	return err
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
