//go:build linux && !sandboxer_portable

package local

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/cgstat"
	"github.com/sandboxer/sandboxer/errs"
)

// helperProc is the parent's side of one running helper: a process that is PID 1 of its own PID
// namespace (inside a user namespace, and a network namespace when the network is off) with
// Landlock applied, which starts commands on request. Commands inherit all of it; starting one
// costs a message and a fork, not new namespaces.
//
// Its connection stays out of the runtime's poller, as the helper's end does: registered there,
// every request the helper took would wake this process's poller thread (the socket is writable
// again), on the helper's way to the fork. Nothing reads it but a socket op awaiting its reply.
type helperProc struct {
	cmd     *exec.Cmd
	conn    *os.File // SOCK_SEQPACKET to the helper, blocking; closed by kill and once it exited
	ready   helperReady
	limited bool // in the sandbox's limit cgroups
	uid     int  // the host uid of the helper's root, which its commands run as

	wmu    sync.Mutex // one request at a time
	mu     sync.Mutex
	next   uint64        // the last request id
	sockMu sync.Mutex    // one socket op at a time: the op reads its reply itself
	dead   chan struct{} // closed once the helper has exited or was killed (markDead)
	reaped chan struct{} // closed once the helper has exited and was reaped: nothing of it is left
	gone   sync.Once
}

const helperStartTimeout = 10 * time.Second

// helperStart says how a helper is started besides its namespaces.
type helperStart struct {
	uid, gid int         // the host ids of the helper's root
	cgroup   *os.File    // the cgroup directory the helper is born in (nil: this process's)
	clones   *viewClones // the view's sources, cloned here and sent with the spec (nil: none)
	idmap    bool        // make the writable sources idmapped mounts of the helper's user namespace
	// started, when set, runs once the helper exists and before it gets its spec: the helper
	// joins the sandbox's limits there, before it makes its cgroup namespace (spec.CgroupNS).
	started func(pid int)
}

// errIdmap marks a helper that could not start because its sources could not be idmapped.
var errIdmap = errors.New("idmapped mounts")

// startHelper re-executes this binary as a helper with the namespaces of flags.
func startHelper(spec helperSpec, flags uintptr, o helperStart) (*helperProc, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	conn, theirs := os.NewFile(uintptr(fds[0]), "helper"), os.NewFile(uintptr(fds[1]), "helper-child")
	defer theirs.Close()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{helperArg0},
		Env:        []string{helperEnv + "=1"},
		ExtraFiles: []*os.File{theirs},
		Stderr:     os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: o.uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: o.gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// A session of its own: no controlling terminal for the helper or its commands.
			Setsid: true,
			// The helper (PID 1 of the sandbox's namespace, so every command too) dies with the
			// sandboxer, even a SIGKILLed one.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if o.uid != os.Geteuid() {
		// This process's uid is not the one mapped to the namespace's root: become it there
		// (before the exec, which then gives the helper its capabilities in the namespace).
		// setgroups is denied in the namespace, and not needed: there are no other groups.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
	}
	err = withFDs([]*os.File{o.cgroup}, func(fds []int) error {
		if fds[0] >= 0 {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fds[0]
		}
		if o.uid != os.Geteuid() && os.Geteuid() == 0 {
			// The namespace is the sandbox uid's, not root's: so are the kernel's per-user counts.
			return asNamespaceOwner(o.uid, cmd.Start)
		}
		return cmd.Start()
	})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		conn.Close()
		return nil, err
	}
	theirs.Close() // the helper has it: a helper that dies now ends the read below
	if o.started != nil {
		o.started(cmd.Process.Pid)
	}
	h := &helperProc{cmd: cmd, conn: conn, uid: o.uid, dead: make(chan struct{}), reaped: make(chan struct{})}
	// Once the helper has exited, its connection is closed (after the calls that still use it)
	// and every wait on it ends: its end of the connection and of each command's status pipe
	// closed with it.
	go func() {
		_ = cmd.Wait()
		close(h.reaped)
		h.markDead()
		conn.Close()
	}()
	var sources []*os.File
	if o.clones != nil {
		sources = o.clones.files
		if o.idmap {
			userns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
			if err == nil {
				err = o.clones.idmap(userns)
				userns.Close()
			}
			if err != nil {
				h.kill()
				return nil, fmt.Errorf("%w: %w", errIdmap, err)
			}
		}
	}
	msg, err := json.Marshal(spec)
	if err == nil {
		err = h.sendMsg(msg, sources)
	}
	if err != nil {
		h.kill()
		return nil, fmt.Errorf("helper did not take its spec: %w", err)
	}
	buf := make([]byte, 64<<10)
	n, _, err := h.receive(nil, buf, nil, time.Now().Add(helperStartTimeout))
	if err == nil {
		err = json.Unmarshal(buf[:n], &h.ready)
	}
	if err != nil {
		h.kill()
		return nil, fmt.Errorf("helper did not start: %w", err)
	}
	return h, nil
}

func (h *helperProc) alive() bool {
	select {
	case <-h.dead:
		return false
	default:
		return true
	}
}

// kill ends the helper and, as it is PID 1 of its namespace, every process it started. It is
// dead from here on: the next command starts a new one.
func (h *helperProc) kill() {
	if h.cmd.Process != nil {
		_ = h.cmd.Process.Kill()
	}
	h.markDead()
	h.conn.Close()
}

func (h *helperProc) markDead() { h.gone.Do(func() { close(h.dead) }) }

// send writes one request with files passed as SCM_RIGHTS, each held open while it is sent (a
// file closed meanwhile fails the send with os.ErrClosed). Every op but a signal gets a new id,
// in req.ID when send returns.
func (h *helperProc) send(req *request, files []*os.File) error {
	if !h.alive() {
		return errHelperGone
	}
	if req.Op != "signal" {
		h.mu.Lock()
		h.next++
		req.ID = h.next
		h.mu.Unlock()
	}
	return h.sendMsg(req.appendBinary(make([]byte, 0, 512)), files)
}

// sendMsg writes one message on the connection (blocking while the helper's queue is full).
func (h *helperProc) sendMsg(msg []byte, files []*os.File) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	return withFDs(append([]*os.File{h.conn}, files...), func(fds []int) error {
		var oob []byte
		if len(fds) > 1 {
			oob = unix.UnixRights(fds[1:]...)
		}
		for {
			if err := unix.Sendmsg(fds[0], msg, oob, nil, 0); !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	})
}

var errHelperGone = errors.New("helper is gone")

// receive reads the helper's next message into buf, and its descriptors (if oob has room), by
// deadline; it returns early with ctx's error once wake (readable when ctx has ended; nil: none)
// is readable.
func (h *helperProc) receive(wake *os.File, buf, oob []byte, deadline time.Time) (n int, files []*os.File, err error) {
	err = withFDs([]*os.File{h.conn, wake}, func(fds []int) error {
		polled := []unix.PollFd{{Fd: int32(fds[0]), Events: unix.POLLIN}, {Fd: int32(fds[1]), Events: unix.POLLIN}}
		if fds[1] < 0 {
			polled = polled[:1]
		}
		for {
			ms := max(0, int((time.Until(deadline)+time.Millisecond-1)/time.Millisecond))
			if _, err := unix.Poll(polled, ms); err != nil && !errors.Is(err, unix.EINTR) {
				return err
			}
			switch {
			case len(polled) > 1 && polled[1].Revents != 0:
				return errCanceled
			case polled[0].Revents == 0:
				if !time.Now().Before(deadline) {
					return os.ErrDeadlineExceeded
				}
				continue
			}
			var oobn int
			n, oobn, _, _, err = unix.Recvmsg(fds[0], buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
			if oobn > 0 {
				files = receivedFiles(oob[:oobn])
			}
			switch {
			case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
				continue
			case err == nil && n == 0:
				return errHelperGone
			}
			return err
		}
	})
	return n, files, err
}

// errCanceled is receive's report that its call's context ended.
var errCanceled = errors.New("canceled")

// warm starts the helper the commands of a network mode use; its errors are the first command's.
func (iso *isolation) warm(network bool) { _, _ = iso.helper(network) }

// socketTimeout bounds the wait for the helper's socket: a helper that does not answer is dead.
const socketTimeout = 10 * time.Second

// socket asks the sandbox's helper without network for a loopback socket of op ("dial" or
// "listen") made in its network namespace. nil without error means the commands share the host's
// network (no network namespace): the caller uses the host's loopback.
func (iso *isolation) socket(ctx context.Context, op string, port int) (*os.File, error) {
	h, err := iso.helper(false)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(h.ready.Layers, LayerNetNS) {
		return nil, nil
	}
	wake, done, err := wakeOn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	h.sockMu.Lock()
	req := request{Op: op, Port: port}
	if err := h.send(&req, nil); err != nil {
		h.sockMu.Unlock()
		return nil, err
	}
	r, err := h.reply(req.ID, wake, time.Now().Add(socketTimeout))
	if errors.Is(err, errCanceled) {
		// The reply may still come: it is read (and its socket closed) before the next op's.
		go func() {
			defer h.sockMu.Unlock()
			if r, err := h.reply(req.ID, nil, time.Now().Add(socketTimeout)); err == nil && r.socket != nil {
				r.socket.Close()
			}
		}()
		return nil, ctx.Err()
	}
	h.sockMu.Unlock()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.kill()
		return nil, errors.New("helper did not answer: killed")
	case err != nil:
		return nil, err
	case r.Err != "":
		if r.Errno != 0 {
			return nil, fmt.Errorf("%s port %d: %w", op, port, syscall.Errno(r.Errno))
		}
		return nil, fmt.Errorf("%s port %d: %s", op, port, r.Err)
	case r.socket == nil:
		return nil, fmt.Errorf("%s port %d: the helper sent no socket", op, port)
	}
	if op == "dial" { // made in the namespace, connected from here (see helperServer.socket)
		err := withFDs([]*os.File{r.socket}, func(fd []int) error {
			return unix.Connect(fd[0], &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
		})
		if err != nil {
			r.socket.Close()
			return nil, fmt.Errorf("%s port %d: %w", op, port, err)
		}
	}
	return r.socket, nil
}

// wakeOn is a file that becomes readable once ctx ends (nil when it cannot end), for a wait on
// the helper's connection; done releases it.
func wakeOn(ctx context.Context) (wake *os.File, done func(), err error) {
	if ctx.Done() == nil {
		return nil, func() {}, nil
	}
	efd, err := newWakeFD()
	if err != nil {
		return nil, nil, err
	}
	wake = os.NewFile(uintptr(efd), "eventfd")
	stop := context.AfterFunc(ctx, func() { _, _ = wake.Write([]byte{1, 0, 0, 0, 0, 0, 0, 0}) })
	return wake, func() { stop(); wake.Close() }, nil
}

// reply reads the helper's replies until the one to request id, whose socket it returns to the
// caller (other replies' sockets, if any, are closed). The caller holds sockMu.
func (h *helperProc) reply(id uint64, wake *os.File, deadline time.Time) (reply, error) {
	buf := make([]byte, 4<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, files, err := h.receive(wake, buf, oob, deadline)
		if err != nil {
			closeFiles(files)
			return reply{}, err
		}
		var r reply
		if json.Unmarshal(buf[:n], &r) != nil || r.ID != id {
			closeFiles(files)
			continue
		}
		if r.Socket && len(files) == 1 {
			r.socket, files = files[0], nil
		}
		closeFiles(files)
		return r, nil
	}
}

// ---- the sandbox's isolation state ----

// isolation holds a sandbox's helpers (one with the network cut off, one with the host network),
// its private temporary directory and its cgroups.
type isolation struct {
	cfg       Config
	disabled  map[string]bool
	workspace string
	tmp       string
	home      *homeDir     // the sandbox's HOME, read-write in the view
	shown     []string     // toolchain directories under the caller's home, read-only (see toolchain.go)
	caches    []cache      // the caller's caches, shown copy-on-write (see caches.go)
	cacheDir  *homeDir     // the caches' upper directories, one per helper and cache
	rules     fsRules      // set by prepare
	exe       string       // this binary, for per-command inits; set by prepare
	cg        *cgroupPool  // nil without per-command cgroups; set by prepare
	limits    *limitGroups // nil without resource limits (none configured, or none possible); set by prepare
	limitErr  error        // why the configured limits cannot be set here
	need      [2][]string  // the layers commands need (neededLayers), [0]: without the network, [1]: with it
	// uid is the host uid (and gid) of the helpers' root for a root caller: the sandbox's own
	// (lease), or HostUID, shared, when none could be leased (uidErr says why). Set by prepare.
	uid    int
	lease  *lease
	uidErr error
	// quota caps the workspace (Config.Disk), or quotaErr says why it cannot. Set by prepare.
	quota    *diskQuota
	quotaErr error

	mu       sync.Mutex
	prepared bool // cg and limits are made (prepare)
	tmpMade  bool
	helpers  [2]*helperProc // [0]: network off, [1]: network on
	stopped  bool
}

func newIsolation(cfg Config, workspace string, home *homeDir, shown []string, caches []cache) (*isolation, error) {
	iso := &isolation{cfg: cfg, disabled: map[string]bool{}, home: home, shown: shown,
		caches: caches, cacheDir: newPrivateDir("sandboxer-caches-"),
		need: [2][]string{neededLayers(cfg, false), neededLayers(cfg, true)}}
	for _, l := range cfg.DisableLayers {
		iso.disabled[l] = true
	}
	// The private TMPDIR is made when the first command runs (ensureTmp), so a sandbox that only
	// moves files, or is never stopped, leaves nothing behind.
	base := os.TempDir()
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real // as the rules and the view name it
	}
	iso.tmp = filepath.Join(base, "sandboxer-tmp-"+randomSuffix())
	iso.workspace = workspace
	return iso, nil
}

// prepare computes the sandbox's rules and makes its cgroups and limits, once, before its first
// helper starts: a sandbox that only moves files pays for none of it, and makes nothing (nor the
// janitor that would look after it). Called with iso.mu held.
func (iso *isolation) prepare() {
	if iso.prepared {
		return
	}
	iso.prepared = true
	read := append(slices.Clone(DefaultReadPaths), iso.cfg.ReadPaths...)
	deny := append(DefaultDenyRead(), iso.cfg.DenyRead...)
	write := append([]string{iso.workspace, iso.tmp, iso.home.path}, iso.cfg.WritePaths...)
	iso.rules = buildRules(read, deny, write, DefaultDevices, iso.shown)
	if exe, err := os.Executable(); err == nil {
		iso.exe = cleanAbs(exe)
		iso.rules.Exe = []string{iso.exe}
	}
	owner := -1
	if os.Geteuid() == 0 && !iso.disabled[LayerUnprivileged] {
		if iso.leaseUID() {
			lookAfter(janitorUID, iso.lease.path()) // a SIGKILLed owner's lock file
		}
		owner = iso.uid
	}
	if !iso.disabled[LayerCgroup] {
		iso.cg = newCgroupPool(owner) // nil when this process cannot make cgroups
	}
	if v := iso.cfg.limitValues(); !v.none() && !iso.disabled[LayerLimits] {
		iso.limits, iso.limitErr = newLimitGroups(v, iso.cg)
	}
	if iso.cfg.Disk > 0 && !iso.disabled[LayerDisk] {
		if iso.quota, iso.quotaErr = newDiskQuota(iso.workspace, iso.cfg.Disk); iso.quota != nil {
			lookAfter(janitorPrj, iso.quota.lease.path()) // a SIGKILLed owner's limit and tags
		}
	}
}

// sandboxNamespaces are the namespaces of a sandbox's own kernel objects that its helper makes
// (and makes anew when the sandbox is recycled, see reset): System V IPC (shared memory, message
// queues, semaphores: without it, they are the host's, outlive every call and escape the memory
// limit) and the hostname.
const sandboxNamespaces = syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// leaseUID gives a root caller's sandbox its host uid: one of its own (true), or HostUID, shared,
// with the reason in uidErr.
func (iso *isolation) leaseUID() bool {
	iso.uid = HostUID
	if iso.lease, iso.uidErr = allocUID(); iso.lease != nil {
		iso.uid = iso.lease.id
	}
	return iso.lease != nil
}

// viewDevices are the device files of the view's /dev.
var viewDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// viewSpec is the file system view of the helper for a network mode: the system directories,
// Config.ReadPaths and the toolchain directories PATH shows read-only, the workspace, TMPDIR, HOME
// and Config.WritePaths read-write, this binary, the deny list masked, and, for the helper with
// the network, the file /etc/resolv.conf leads to.
func (iso *isolation) viewSpec(network bool) viewSpec {
	v := viewSpec{Devices: viewDevices}
	for _, p := range slices.Concat(viewSystemPaths, iso.cfg.ReadPaths) {
		if fi, err := os.Lstat(p); err != nil {
			continue
		} else if fi.Mode()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(p); err == nil && !filepath.IsAbs(target) && filepath.Dir(p) == "/" {
				v.Links = append(v.Links, [2]string{p, target}) // /bin -> usr/bin on merged-/usr systems
				continue
			}
		}
		v.RO = append(v.RO, cleanAbs(p))
	}
	if iso.exe != "" {
		v.RO = append(v.RO, iso.exe)
	}
	// Not idmapped (the caller's toolchain is read as any user may), so no file system of the
	// home directory's can fail the view; the deny entries inside are masked below.
	v.RO = append(v.RO, iso.shown...)
	inRO := func(p string) bool {
		return slices.ContainsFunc(v.RO, func(ro string) bool { return within(p, ro) })
	}
	if network {
		if resolv := cleanAbs("/etc/resolv.conf"); !inRO(resolv) {
			v.RO = append(v.RO, resolv)
		}
	}
	for _, d := range slices.Concat(DefaultDenyRead(), iso.cfg.DenyRead) {
		if d = cleanAbs(d); inRO(d) {
			v.Mask = append(v.Mask, d)
		}
	}
	for _, p := range iso.rules.Write { // the workspace, TMPDIR, HOME and Config.WritePaths, resolved
		if p == iso.tmp {
			continue // a tmpfs of the view's (below)
		}
		v.RW = append(v.RW, p)
		v.Owned = append(v.Owned, p)
	}
	// TMPDIR is the helper's own size-capped tmpfs, as /tmp is: what commands write there is
	// charged to the sandbox's memory, and bounded (each helper has its own). Half the memory
	// limit each, so that filling one ends in ENOSPC rather than in the OOM killer.
	if iso.tmp != "" { // the probe's has none
		v.Tmp = []string{iso.tmp}
	}
	if m := iso.cfg.Memory; m != NoLimit {
		v.TmpSize = cmp.Or(m, DefaultMemoryBytes) / 2
	}
	for _, p := range iso.cfg.ReadPaths {
		v.Owned = append(v.Owned, cleanAbs(p))
	}
	return v
}

// withCaches adds the caches of a network mode's helper to its view v (cacheSpec); their layers
// are idmapped as the workspace is. Called with iso.mu held.
func (iso *isolation) withCaches(v *viewSpec, network bool) error {
	caches, err := iso.cacheSpec(network)
	for _, c := range caches {
		v.Owned = append(v.Owned, c.Target, c.Upper)
	}
	v.Caches = caches
	return err
}

// netIndex is the index of a network mode in the per-mode arrays (helpers, need).
func netIndex(network bool) int {
	if network {
		return 1
	}
	return 0
}

// helper returns the running helper for a network mode, starting it on first use.
func (iso *isolation) helper(network bool) (*helperProc, error) {
	i := netIndex(network)
	iso.mu.Lock()
	defer iso.mu.Unlock()
	if iso.stopped {
		return nil, errs.New(errs.SandboxUnavailable, "exec", "", "sandbox is stopped")
	}
	if h := iso.helpers[i]; h != nil && h.alive() {
		return h, nil
	}
	if iso.disabled[LayerPIDNS] || iso.disabled[LayerUserNS] {
		return nil, errNoHelper
	}
	iso.prepare()
	// The view mounts TMPDIR: it must exist before the first helper does, whoever starts it
	// (Capabilities, DialPort or a command).
	if err := iso.makeTmp(); err != nil {
		return nil, err
	}
	if err := iso.home.ensure(); err != nil {
		return nil, err
	}
	// A cgroup namespace too, made by the helper once it is in the sandbox's cgroups (v2: born
	// there; v1 limits: joined before its spec, see launch): commands see each of their
	// cgroups, in every hierarchy, as the root of its tree, not this process's pid in its name
	// (and, in the file system view, no cgroup file at all to clone a process into).
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | sandboxNamespaces)
	spec := helperSpec{Proc: !iso.disabled[LayerProc], Landlock: !iso.disabled[LayerLandlock], Rules: iso.rules, Exe: iso.exe, CgroupNS: true}
	if !iso.disabled[LayerFSView] {
		v := iso.viewSpec(network)
		if err := iso.withCaches(&v, network); err != nil {
			return nil, errs.Wrap(errs.Internal, "exec", "", err)
		}
		spec.View = &v
	}
	if !network {
		if !iso.disabled[LayerNetNS] {
			flags |= syscall.CLONE_NEWNET
			spec.Net = true
		} else {
			spec.LandNet = !iso.disabled[LayerLandlockNet]
		}
	}
	if !iso.disabled[LayerUnixConnect] {
		spec.UnixPeers = peersUID
		if spec.Net {
			spec.UnixPeers = peersNetNS
		}
	}
	// Fail closed, and remember no failure: a helper that cannot start, or starts without a
	// layer it must have, is tried once more, then the call is refused naming what is missing;
	// the next call tries again.
	var h *helperProc
	var err error
	for try := 0; try < 2; try++ {
		// The helper joins the sandbox's limits before it starts any command.
		limited := false
		join := func(pid int) {
			if iso.limits != nil {
				if lerr := iso.limits.add(pid); lerr != nil {
					iso.limitErr = lerr
				} else {
					limited = true
				}
			}
		}
		if h, err = iso.launch(spec, flags, join); err != nil {
			err = iso.unavailable(nil, fmt.Errorf("the isolation helper could not start: %w", err), nil)
			continue
		}
		h.limited = limited
		if m := iso.helperMissing(h, network); len(m) > 0 {
			h.kill()
			err = iso.unavailable(m, h.why(m), h.ready.Layers)
			continue
		}
		iso.helpers[i] = h
		return h, nil
	}
	return nil, err
}

// errNoHelper: the configuration disables the layers a helper is made of (userns or pidns), an
// explicit opt-out: commands run as plain processes, with what else is not disabled.
var errNoHelper = errors.New("the pidns/userns layer is disabled by configuration")

// helperMissing lists the layers a started helper lacks that its commands need.
func (iso *isolation) helperMissing(h *helperProc, network bool) []string {
	var m []string
	for _, l := range iso.need[netIndex(network)] {
		if !slices.Contains(h.ready.Layers, l) && !(l == LayerLimits && h.limited) {
			m = append(m, l)
		}
	}
	return m
}

// why says why a helper lacks the layers m.
func (h *helperProc) why(m []string) error {
	var reasons []string
	for _, l := range m {
		if r := h.ready.Missing[l]; r != "" {
			reasons = append(reasons, l+": "+r)
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "; "))
}

// unavailable is the refusal of a command for which the layers m (all of a helper's when nil)
// cannot be applied, with the cause and the layers that could (Details).
func (iso *isolation) unavailable(m []string, cause error, layers []string) error {
	if m == nil {
		m = slices.DeleteFunc(slices.Clone(sandboxLayers), func(l string) bool { return iso.disabled[l] })
	}
	if limitErr := iso.limitErr; slices.Contains(m, LayerLimits) && limitErr != nil {
		cause = errors.Join(cause, limitErr)
	}
	e := errs.New(errs.IsolationUnavailable, "exec", "", "isolation layer(s) %s cannot be applied here (turn a layer off by name with disable_layers, or all with isolation: off; sandboxer doctor lists them)", strings.Join(m, ", "))
	if layers == nil {
		layers = []string{}
	}
	e.Details = map[string]any{"missing": m, "layers": layers}
	e.Err = cause
	return e
}

// launch starts a helper. Run as root, the adapter clones the view's sources itself and maps the
// helper's root to the sandbox's uid (iso.uid), an unprivileged host uid, with the writable
// sources idmapped (so the workspace stays usable and the caller's); where that cannot be done
// (no view, or a file system without idmapped mounts), the helper's root is the host's, and the
// layer LayerUnprivileged is reported missing. Run as another user, the helper's root is that user.
func (iso *isolation) launch(spec helperSpec, flags uintptr, started func(pid int)) (*helperProc, error) {
	o := helperStart{uid: os.Geteuid(), gid: os.Getegid(), started: started}
	if iso.cg != nil {
		o.cgroup = iso.cg.dir // born in the sandbox's cgroup: its per-command cgroups are below
	}
	if o.uid != 0 {
		h, err := startHelper(spec, flags, o)
		return iso.started(h, err, nil, spec.UnixPeers)
	}
	var cloneErr error
	clone := func() {
		if spec.View == nil {
			return
		}
		o.clones, cloneErr = cloneSources(*spec.View)
		if cloneErr != nil {
			spec.View = nil // best effort, as when the helper fails to build it
			return
		}
		v := *spec.View
		v.Sources = o.clones.sources
		spec.View = &v
	}
	clone()
	unpriv := o.clones != nil && !iso.disabled[LayerUnprivileged]
	var unprivErr error
	if unpriv {
		o.uid, o.gid, o.idmap = iso.uid, iso.uid, true
	}
	h, err := startHelper(spec, flags, o)
	if o.clones != nil {
		o.clones.Close()
	}
	if unpriv && errors.Is(err, errIdmap) {
		// Start as before, with the host's root, so that the report (the probe's, or the
		// refusal's) says which layers the machine has besides this one; helper refuses it.
		unprivErr = err
		o.uid, o.gid, o.idmap = 0, 0, false
		clone()
		h, err = startHelper(spec, flags, o)
		if o.clones != nil {
			o.clones.Close()
		}
	}
	h, err = iso.started(h, err, unprivErr, spec.UnixPeers)
	if err == nil && cloneErr != nil {
		h.ready.Missing[LayerFSView] = cloneErr.Error()
	}
	return h, err
}

// started adds the layers the adapter applied to a started helper's report. peers is the
// unix-connect layer's rule the helper was given.
func (iso *isolation) started(h *helperProc, err, unprivErr error, peers string) (*helperProc, error) {
	if err != nil {
		return nil, err
	}
	if h.ready.Missing == nil {
		h.ready.Missing = map[string]string{}
	}
	switch {
	case h.uid != 0:
		h.ready.Layers = append(h.ready.Layers, LayerUnprivileged)
	case iso.disabled[LayerUnprivileged]:
	case unprivErr != nil:
		h.ready.Missing[LayerUnprivileged] = unprivErr.Error()
	default:
		h.ready.Missing[LayerUnprivileged] = "commands run as the host's root: the file system view is needed to map them to an unprivileged uid"
	}
	switch {
	case iso.lease != nil && h.uid == iso.lease.id:
		h.ready.Layers = append(h.ready.Layers, LayerUIDPerSandbox)
	case os.Geteuid() != 0:
		// A subordinate uid (/etc/subuid, newuidmap) could not write the caller's workspace: only
		// root may make the idmapped mount that would let it (see docs/local.md).
		h.ready.Missing[LayerUIDPerSandbox] = fmt.Sprintf("commands run as the caller's uid %d, shared with its other sandboxes and processes: a uid of their own needs root (for the idmapped workspace)", h.uid)
	case iso.uidErr != nil:
		h.ready.Missing[LayerUIDPerSandbox] = fmt.Sprintf("no uid could be leased, sandboxes share uid %d: %v", HostUID, iso.uidErr)
	case h.uid == 0:
		h.ready.Missing[LayerUIDPerSandbox] = "commands run as the host's root (see " + LayerUnprivileged + ")"
	}
	// In the host's network namespace the supervisor tells the sandbox's sockets by their uid:
	// a uid other processes have too tells nothing.
	if i := slices.Index(h.ready.Layers, LayerUnixConnect); i >= 0 && peers == peersUID && !slices.Contains(h.ready.Layers, LayerUIDPerSandbox) {
		h.ready.Layers = slices.Delete(h.ready.Layers, i, i+1)
		h.ready.Missing[LayerUnixConnect] = "in the host's network namespace (a command with network) the sandbox's sockets are told from others by a uid of its own (" + LayerUIDPerSandbox + "), which it has not"
	}
	switch {
	case iso.quota != nil:
		h.ready.Layers = append(h.ready.Layers, LayerDisk)
	case iso.quotaErr != nil:
		h.ready.Missing[LayerDisk] = iso.quotaErr.Error()
	}
	return h, nil
}

// ensureTmp creates the private TMPDIR before the first command. Mkdir, not MkdirAll: the name
// is random, and a directory someone else planted there is refused.
func (iso *isolation) ensureTmp() error {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	return iso.makeTmp()
}

// makeTmp is ensureTmp with iso.mu held.
func (iso *isolation) makeTmp() error {
	if iso.tmpMade {
		return nil
	}
	if iso.stopped {
		return errs.New(errs.SandboxUnavailable, "exec", "", "sandbox is stopped")
	}
	if err := os.Mkdir(iso.tmp, 0o700); err != nil {
		return errs.Wrap(errs.Internal, "exec", "", err)
	}
	lookAfter(janitorDir, iso.tmp)
	iso.tmpMade = true
	return nil
}

func (iso *isolation) stop() error {
	iso.mu.Lock()
	iso.stopped = true
	hs := iso.helpers
	iso.mu.Unlock()
	for _, h := range hs {
		if h != nil {
			h.kill()
		}
	}
	if iso.cg != nil {
		iso.cg.close()
	}
	if iso.limits != nil {
		iso.limits.release()
	}
	// Last, once the helpers (PID 1 of their namespaces: the kernel ended every process in them
	// before their own exit) are reaped: nothing of the sandbox's uid runs any more, and no
	// overlay stacks on the caches' upper directories.
	waitReaped(hs[:])
	if iso.lease != nil {
		iso.lease.release()
		released(janitorUID, iso.lease.path())
	}
	err := iso.cacheDir.remove()
	if q := iso.quota; q != nil {
		path := q.lease.path()
		if qerr := q.release(); qerr != nil {
			err = errors.Join(err, qerr)
		} else {
			released(janitorPrj, path)
		}
	}
	if rerr := os.RemoveAll(iso.tmp); rerr != nil {
		err = errors.Join(err, rerr)
	} else {
		released(janitorDir, iso.tmp)
	}
	return err
}

// enforced turns a helper's layers into the result's Isolation for one command.
func (iso *isolation) enforced(h *helperProc, network, cgroup, init bool) adapter.Isolation {
	var is adapter.Isolation
	if h != nil {
		is.Layers = slices.Clone(h.ready.Layers)
	}
	if cgroup {
		is.Layers = append(is.Layers, LayerCgroup)
	}
	if h != nil && h.limited {
		is.Layers = append(is.Layers, LayerLimits)
		is.Limits = true
	}
	if init {
		is.Layers = append(is.Layers, LayerPIDNSCommand)
	}
	has := func(l string) bool { return slices.Contains(is.Layers, l) }
	is.Network = !network && has(LayerNetNS)
	is.Filesystem = has(LayerLandlock) && has(LayerFSView)
	is.ProcessTree = cgroup || init
	return is
}

// missing lists what a command with this isolation lacks (fail closed): a layer of needed, the
// limits, or the process tree's kill (cgroup, or pidns-command without cgroups).
func (iso *isolation) missing(is adapter.Isolation, network bool) []string {
	var m []string
	for _, l := range iso.need[netIndex(network)] {
		if !slices.Contains(is.Layers, l) {
			m = append(m, l)
		}
	}
	if !is.ProcessTree && needProcessTree(iso.cfg) {
		m = append(m, "processTree")
	}
	return m
}

// helperProcess is a command started by a helper.
type helperProcess struct {
	h      *helperProc
	id     uint64
	status *os.File // the read end of its status pipe: readable once it has exited (or the helper died)
	pool   *cgroupPool

	mu       sync.Mutex // a background process is signalled from other goroutines than the one that finishes it
	cg       *cgroupDir // nil once finish has put it back in the pool
	finished bool       // its id may now name another command: signal nothing
	// meter measures the command from before its start until finish, which ends it into
	// measured before the cgroup goes back to the pool.
	meter    *cgstat.Meter
	measured adapter.Receipt
}

func (p *helperProcess) exitFile() *os.File { return p.status }

// receipt: what the meter read of the command's cgroup and the helper's pid namespace.
func (p *helperProcess) receipt(r *adapter.Receipt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.CPUUs, r.PeakMemoryBytes, r.Processes = p.measured.CPUUs, p.measured.PeakMemoryBytes, p.measured.Processes
	r.DiskReadBytes, r.DiskWriteBytes = p.measured.DiskReadBytes, p.measured.DiskWriteBytes
}

func (p *helperProcess) wait() (int, error) {
	kind, value, err := readRecord(p.status)
	if err != nil || kind != recExited {
		return -1, errs.New(errs.SandboxUnavailable, "exec", "", "the isolation helper died")
	}
	ws := syscall.WaitStatus(value)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

func (p *helperProcess) signal(sig syscall.Signal) {
	p.mu.Lock()
	finished := p.finished
	if sig == syscall.SIGKILL && p.cg != nil {
		p.cg.kill() // under mu: the cgroup cannot be back in the pool, serving another command
	}
	p.mu.Unlock()
	if !finished {
		_ = p.h.send(&request{Op: "signal", ID: p.id, Sig: int(sig)}, nil)
	}
}

func (p *helperProcess) abandon() { p.h.kill() }

func (p *helperProcess) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.meter != nil {
		p.meter.End(&p.measured)
		p.meter = nil
	}
	if p.cg != nil {
		p.pool.put(p.cg)
		p.cg = nil
	}
	p.finished = true
	p.status.Close()
}

// start asks the helper to run one command with the given stdio.
func (iso *isolation) start(c adapter.Command, prog, dir string, env []string, outW, errW *os.File) (*helperProcess, adapter.Isolation, error) {
	h, herr := iso.helper(c.AllowNetwork)
	if herr != nil && !errors.Is(herr, errNoHelper) { // stopped, or a layer missing: never a plain process
		return nil, adapter.Isolation{}, herr
	}
	var cg *cgroupDir
	if h != nil && iso.cg != nil {
		cg, _ = iso.cg.get()
	}
	init := h != nil && cg == nil && iso.exe != "" && !iso.disabled[LayerPIDNSCommand]
	is := iso.enforced(h, c.AllowNetwork, cg != nil, init)
	// Fail closed: isolation on means every layer not disabled by name (herr: errNoHelper, or nil).
	if m := iso.missing(is, c.AllowNetwork); len(m) > 0 {
		if cg != nil {
			iso.cg.put(cg)
		}
		return nil, is, iso.unavailable(m, herr, is.Layers)
	}
	if h == nil {
		return nil, is, nil // the caller runs the command without the helper
	}
	// Stdin is made a file only now: a fallback to a plain process must find Command.Stdin
	// unread.
	stdin, closeStdin, err := stdinFile(c.Stdin)
	if err != nil {
		if cg != nil {
			iso.cg.put(cg)
		}
		return nil, is, errs.Wrap(errs.Internal, "exec", "", err)
	}
	if h.uid != os.Geteuid() {
		// Commands reopen their stdio (/dev/stdout is /proc/self/fd/1): the pipes this process
		// made must be their user's, as pipes a shell makes are its own. A file given as stdin
		// is left as it is.
		_ = outW.Chown(h.uid, h.uid)
		_ = errW.Chown(h.uid, h.uid)
		if _, given := c.Stdin.(*os.File); c.Stdin != nil && !given {
			_ = stdin.Chown(h.uid, h.uid)
		}
	}
	// The command's status pipe: the helper writes its start and its exit there (see recStarted).
	var sfd [2]int
	if err := unix.Pipe2(sfd[:], unix.O_CLOEXEC); err != nil {
		closeStdin()
		if cg != nil {
			iso.cg.put(cg)
		}
		return nil, is, errs.Wrap(errs.Internal, "exec", "", err)
	}
	status, statusW := os.NewFile(uintptr(sfd[0]), "status"), os.NewFile(uintptr(sfd[1]), "status-w")
	files := []*os.File{statusW, stdin, outW, errW}
	if cg != nil {
		files = append(files, cg.dir)
	}
	env = append(env, cacheEnv(iso.caches, h.ready.Caches, env)...)
	req := request{Op: "spawn", Path: prog, Args: c.Args, Env: env, Dir: dir, Cgroup: cg != nil, Init: init}
	meter := iso.meter(h, cg)
	err = h.send(&req, files)
	statusW.Close() // the helper's copy is the only one: its death ends the pipe
	closeStdin()
	var kind, value uint32
	if err == nil {
		kind, value, err = awaitRecord(h, status)
	}
	if err != nil || kind != recStarted {
		meter.End(&adapter.Receipt{}) // releases what it holds
		status.Close()
		if cg != nil {
			iso.cg.put(cg)
		}
		switch {
		case err != nil:
			return nil, is, errs.Wrap(errs.SandboxUnavailable, "exec", "", err)
		case kind == recFailed:
			return nil, is, errs.New(errs.ProcessFailed, "exec", c.Args[0], "%s", syscall.Errno(value).Error())
		default:
			return nil, is, errs.New(errs.ProcessFailed, "exec", c.Args[0], "the isolation helper could not take the command's descriptors")
		}
	}
	return &helperProcess{h: h, id: req.ID, status: status, cg: cg, pool: iso.cg, meter: meter}, is, nil
}

// meter begins the receipt's measurement of a command the helper h is about to start in cg
// (nil: none): the CPU time (and, with the controllers, memory, pids and I/O) of its own cgroup,
// and the memory and block I/O of the sandbox's v1 limit cgroups; nil when it has neither.
func (iso *isolation) meter(h *helperProc, cg *cgroupDir) *cgstat.Meter {
	var v2 string
	if cg != nil {
		v2 = cg.path
	}
	var v1 []string
	if iso.limits != nil && h.limited {
		v1 = iso.limits.dirs
	}
	g := cgstat.Of(v2, v1)
	if g.Zero() {
		return nil
	}
	return cgstat.Begin(g)
}

// awaitRecord waits for the first record of a command's status pipe. A helper that leaves it
// unanswered for unresponsive is taken for dead (killed, which ends the pipe).
func awaitRecord(h *helperProc, status *os.File) (kind, value uint32, err error) {
	err = withFDs([]*os.File{status}, func(fds []int) error {
		deadline := time.Now().Add(unresponsive)
		for {
			ms := -1
			if !deadline.IsZero() {
				ms = max(0, int((time.Until(deadline)+time.Millisecond-1)/time.Millisecond))
			}
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fds[0]), Events: unix.POLLIN}}, ms)
			switch {
			case err != nil && !errors.Is(err, unix.EINTR):
				return err
			case n > 0:
				return nil
			case !deadline.IsZero() && !time.Now().Before(deadline):
				h.kill() // it does not answer: taken for dead, and restarted by the next call
				deadline = time.Time{}
			}
		}
	})
	if err == nil {
		kind, value, err = readRecord(status)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the isolation helper died")
	}
	return kind, value, err
}

// ---- cgroups ----

// cgroupPool hands out empty cgroup v2 directories under this process's own cgroup, one per
// running command, and reuses them once empty. The pool owns every directory it made (all): a
// directory is released (its descriptor closed, the cgroup removed) exactly once, by put when it
// was killed, or by close for every directory still in the pool, handed out or not.
type cgroupPool struct {
	base   string
	dir    *os.File // base's directory: the helper is born there (clone3(CLONE_INTO_CGROUP))
	owner  int      // the uid the helper runs as, given cgroup.procs of base and each cgroup; -1: none
	mu     sync.Mutex
	free   []*cgroupDir
	n      int
	all    []*cgroupDir
	closed bool
}

type cgroupDir struct {
	path   string
	dir    *os.File // the cgroup's directory, for clone3(CLONE_INTO_CGROUP)
	events *os.File // its cgroup.events, read (one pread) to see whether it is empty
	killed atomic.Bool
}

var cgroupBase = sync.OnceValues(func() (string, error) {
	mnt, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mnt, rest), nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
})

func cgroup2Mount() (string, error) {
	mounts, err := cgstat.Mounts()
	if err != nil {
		return "", err
	}
	for _, m := range mounts {
		if m.V2 {
			return m.Dir, nil
		}
	}
	return "", errors.New("cgroup v2 is not mounted")
}

// removeStale removes, once per process, the cgroups that processes which have since died left
// behind (killed, or never stopped their sandboxes).
var removeStale = sync.OnceFunc(func() {
	base, err := cgroupParent()
	if err != nil {
		return
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if p, ok := strings.CutPrefix(e.Name(), mainLeafPrefix); ok {
			// A dead process's own leaf (moveToLeaf): removed only when empty, never killed.
			if pid, err := strconv.Atoi(p); err == nil && pid > 0 && !alive(pid) {
				_ = os.Remove(filepath.Join(base, e.Name()))
			}
			continue
		}
		pid, ok := stalePID(e.Name())
		if !ok || alive(pid) {
			continue // still alive (or not ours to judge)
		}
		dir := filepath.Join(base, e.Name())
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		kids, _ := os.ReadDir(dir)
		for _, k := range kids {
			if k.IsDir() {
				_ = os.Remove(filepath.Join(dir, k.Name()))
			}
		}
		_ = os.Remove(dir)
	}
})

// stalePID is the pid in the name of a sandbox's cgroup, "sandboxer-<pid>-<random>".
func stalePID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "sandboxer-")
	if !ok {
		return 0, false
	}
	// Exactly this adapter's shape: another tool's "sandboxer-<id>" (runc's cgroups of oci
	// sandboxes) must never be taken for a dead process's and killed.
	pidStr, suffix, ok := strings.Cut(rest, "-")
	if !ok || len(suffix) != 16 || strings.Trim(suffix, "0123456789abcdef") != "" ||
		pidStr == "" || strings.Trim(pidStr, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(pidStr)
	return pid, err == nil && pid > 0
}

// alive reports whether process pid exists (or cannot be judged).
func alive(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// newCgroupPool makes the sandbox's cgroup, or returns nil when this process cannot. owner (-1:
// none) is the host uid of the helper's root: it may move processes into the sandbox's cgroups
// (cgroup.procs of each), as the helper does when it starts a command in one, and nothing else.
func newCgroupPool(owner int) *cgroupPool {
	base, err := cgroupParent()
	if err != nil {
		return nil
	}
	removeStale()
	dir := filepath.Join(base, fmt.Sprintf("sandboxer-%d-%s", os.Getpid(), randomSuffix()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	lookAfter(janitorCg2, dir)
	p := &cgroupPool{base: dir, owner: owner}
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err == nil {
		err = p.delegate(dir)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		if os.Remove(dir) == nil {
			released(janitorCg2, dir)
		}
		return nil
	}
	p.dir = f
	return p
}

// delegate lets the pool's owner write the cgroup's cgroup.procs. Its group stays root's, and
// may write too: a helper that could not run as the owner runs as the host's root in a user
// namespace where the owner's uid is not mapped (no capability applies to the file), and moves
// commands in through the group's bit.
func (p *cgroupPool) delegate(dir string) error {
	if p.owner < 0 {
		return nil
	}
	procs := filepath.Join(dir, "cgroup.procs")
	if err := os.Chown(procs, p.owner, 0); err != nil {
		return err
	}
	return os.Chmod(procs, 0o664)
}

var errPoolClosed = errors.New("the sandbox's cgroups are released")

func (p *cgroupPool) get() (*cgroupDir, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	if n := len(p.free); n > 0 {
		d := p.free[n-1]
		p.free = p.free[:n-1]
		return d, nil
	}
	p.n++
	path := filepath.Join(p.base, fmt.Sprintf("c%d", p.n))
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	var events *os.File
	if err == nil {
		events, err = os.Open(filepath.Join(path, "cgroup.events"))
		if err == nil {
			err = p.delegate(path)
		}
		if err != nil {
			f.Close()
			if events != nil {
				events.Close()
			}
		}
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	d := &cgroupDir{path: path, dir: f, events: events}
	p.all = append(p.all, d)
	return d, nil
}

// put empties the cgroup (killing whatever is left in it) and returns it to the pool. A cgroup that
// was killed is removed instead of reused: on some kernels (6.18 here) a process cloned into a
// cgroup after a cgroup.kill is killed at once, as the fork compares kill sequence numbers.
// After close, the directory is close's to release.
func (p *cgroupPool) put(d *cgroupDir) {
	if !d.killed.Load() && d.empty() {
		p.mu.Lock()
		if !p.closed {
			p.free = append(p.free, d)
		}
		p.mu.Unlock()
		return
	}
	d.kill()
	for i := 0; !d.empty(); i++ {
		if i > 500 { // 5s: leave it for close rather than block longer
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.mu.Lock()
	owned := !p.closed
	if owned {
		p.all = slices.DeleteFunc(p.all, func(x *cgroupDir) bool { return x == d })
	}
	p.mu.Unlock()
	if owned {
		d.release()
	}
}

func (d *cgroupDir) kill() {
	d.killed.Store(true)
	_ = os.WriteFile(filepath.Join(d.path, "cgroup.kill"), []byte("1"), 0)
}

// empty reports whether no process is left in the cgroup: "populated 0" in its cgroup.events
// (one pread, where reading cgroup.procs costs an open, a read and a close per command).
func (d *cgroupDir) empty() bool {
	var buf [64]byte
	n, err := d.events.ReadAt(buf[:], 0)
	if n == 0 && err != nil {
		return cgroupEmpty(d.path)
	}
	return bytes.Contains(buf[:n], []byte("populated 0"))
}

// cgroupEmpty reports whether no process is left in the cgroup at path (or it is gone).
func cgroupEmpty(path string) bool {
	data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	return err != nil || len(strings.TrimSpace(string(data))) == 0
}

// release closes the directory and removes the (empty) cgroup.
func (d *cgroupDir) release() {
	d.dir.Close()
	d.events.Close()
	_ = os.Remove(d.path)
}

// close kills every process in the sandbox's cgroups and releases them all. A command still
// being started with one of them then fails to start (its directory is closed).
func (p *cgroupPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	all := p.all
	p.all, p.free, p.closed = nil, nil, true
	p.mu.Unlock()
	p.dir.Close()
	_ = os.WriteFile(filepath.Join(p.base, "cgroup.kill"), []byte("1"), 0)
	// Killed processes leave their cgroups within milliseconds on a quiet machine; a loaded one
	// (CI at a load of 30) took over a second. One deadline bounds all the waits.
	deadline := time.Now().Add(cgroupDrain)
	for _, d := range all {
		for !d.empty() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		d.release()
	}
	// The helper lived in the base itself.
	for !cgroupEmpty(p.base) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for {
		err := os.Remove(p.base)
		if err == nil {
			released(janitorCg2, p.base)
			return
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cgroupDrain bounds how long closing a sandbox's cgroups waits for killed processes to leave.
const cgroupDrain = 10 * time.Second

// ---- probe ----

var probeOnce = sync.OnceValue(probe)

// Probe reports which isolation layers the local adapter can apply on this machine, and why not the
// others. It starts a helper once to find out (a few milliseconds); `sandboxer doctor` prints it.
func Probe() Report { return probeOnce() }

// probedLayers are the layers a probe helper reports.
var probedLayers = []string{LayerUserNS, LayerPIDNS, LayerIPCNS, LayerUTSNS, LayerProc, LayerFSView, LayerNetNS, LayerLandlock, LayerLandlockScope, LayerKeyring, LayerNoCaps, LayerNoSetuid, LayerUnixConnect, LayerUnprivileged, LayerUIDPerSandbox}

func probe() Report {
	var rep Report
	abi, abiErr := landlockABI()
	rep.LandlockABI = abi
	set := func(name string, ok bool, reason string) {
		rep.Layers = append(rep.Layers, LayerStatus{Name: name, Available: ok, Reason: reason})
	}
	// The probe's workspace is a directory of its own, as a sandbox's is: the system's temporary
	// directory itself may hold mounts an idmapped mount cannot take (another tool's overlay or
	// namespace files), which a workspace there never includes.
	ws, err := os.MkdirTemp("", "sandboxer-probe-")
	if err != nil {
		ws = os.TempDir()
	} else {
		defer os.RemoveAll(ws)
	}
	probeIso := &isolation{rules: buildRules(DefaultReadPaths, DefaultDenyRead(), []string{ws}, DefaultDevices, nil), disabled: map[string]bool{}}
	if os.Geteuid() == 0 {
		probeIso.leaseUID()
		defer probeIso.lease.release()
	}
	if exe, err := os.Executable(); err == nil {
		probeIso.exe = cleanAbs(exe)
		probeIso.rules.Exe = []string{probeIso.exe}
	}
	view := probeIso.viewSpec(false)
	spec := helperSpec{Probe: true, Net: true, Proc: true, Landlock: true, Rules: probeIso.rules, View: &view, Exe: probeIso.exe, UnixPeers: peersNetNS}
	h, err := probeIso.launch(spec, syscall.CLONE_NEWUSER|syscall.CLONE_NEWPID|syscall.CLONE_NEWNS|syscall.CLONE_NEWNET|sandboxNamespaces, nil)
	if err != nil {
		reason := "cannot create user, PID and network namespaces: " + err.Error()
		for _, l := range probedLayers {
			set(l, false, reason)
		}
	} else {
		h.kill()
		for _, l := range probedLayers {
			ok := slices.Contains(h.ready.Layers, l)
			reason := h.ready.Missing[l]
			if !ok && reason == "" {
				switch {
				case l == LayerLandlockScope && abi < 6:
					reason = fmt.Sprintf("landlock ABI %d has no scoping (needs 6)", abi)
				case abiErr != nil:
					reason = "landlock: " + abiErr.Error()
				}
			}
			set(l, ok, reason)
		}
	}
	if abi >= 4 {
		set(LayerLandlockNet, true, "")
	} else {
		set(LayerLandlockNet, false, fmt.Sprintf("landlock ABI %d cannot restrict TCP (needs 4)", abi))
	}
	// The limits are judged on a sandbox's cgroup as prepare makes it: on cgroup v2 where it has
	// the controllers, else on the v1 hierarchies.
	var pool *cgroupPool
	if base, err := cgroupParent(); err != nil {
		set(LayerCgroup, false, err.Error())
	} else if pool = newCgroupPool(-1); pool == nil {
		set(LayerCgroup, false, "cannot create a cgroup under "+base)
	} else {
		d, err := pool.get()
		if err == nil {
			_, err = os.Stat(filepath.Join(d.path, "cgroup.kill"))
		}
		if err != nil {
			set(LayerCgroup, false, "cgroup.kill unavailable (needs Linux 5.14): "+err.Error())
		} else {
			set(LayerCgroup, true, "")
		}
	}
	if l, err := newLimitGroups(Config{}.limitValues(), pool); err != nil {
		set(LayerLimits, false, err.Error())
	} else {
		l.release()
		set(LayerLimits, true, "")
	}
	if pool != nil {
		pool.close()
	}
	// The disk layer depends on the workspace's file system: judged here for the current
	// directory, the default workspace.
	if wd, err := os.Getwd(); err != nil {
		set(LayerDisk, false, err.Error())
	} else if err := quotaUsable(wd); err != nil {
		set(LayerDisk, false, err.Error())
	} else {
		set(LayerDisk, true, "")
	}
	rep.Network = rep.Available(LayerNetNS)
	rep.Filesystem = rep.Available(LayerLandlock) && rep.Available(LayerFSView)
	rep.ProcessTree = rep.Available(LayerCgroup) && rep.Available(LayerPIDNS)
	return rep
}

// startIsolated starts a command through the sandbox's helper. It returns a nil process and a nil
// error when no helper can run here and the configuration does not require one: the caller then
// runs the command as a plain process, and the result says nothing was enforced.
func (s *Sandbox) startIsolated(c adapter.Command, prog, dir string, env []string, outW, errW *os.File) (process, adapter.Isolation, error) {
	p, is, err := s.iso.start(c, prog, dir, env, outW, errW)
	if p == nil {
		return nil, is, err
	}
	return p, is, err
}

// stdinFile turns Command.Stdin into a file a helper can receive: /dev/null for none, the file
// itself, or a pipe fed by a goroutine. The returned function closes the caller's copy.
func stdinFile(r io.Reader) (*os.File, func(), error) {
	if r == nil {
		if f := devNull(); f != nil {
			return f, func() {}, nil // shared, never closed
		}
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}
	if f, ok := r.(*os.File); ok {
		f.Fd() // blocking, as the command expects its stdin to be (and as os/exec makes it)
		return f, func() {}, nil
	}
	// The read end stays blocking (a command reads it as its stdin); the write end is
	// non-blocking before its File is made, so the copy waits in the runtime's poller.
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	pr := os.NewFile(uintptr(fds[0]), "|0")
	if err := unix.SetNonblock(fds[1], true); err != nil {
		pr.Close()
		unix.Close(fds[1])
		return nil, nil, err
	}
	pw := os.NewFile(uintptr(fds[1]), "|1")
	go func() {
		_, _ = io.Copy(pw, r)
		pw.Close()
	}()
	return pr, func() { pr.Close() }, nil
}

// capabilities are what the sandbox's own helper (network off) has in force: asking starts it,
// as the sandbox's first command would (no separate probe helper is started for it).
func (iso *isolation) capabilities() (adapter.FSIsolation, adapter.NetworkIsolation) {
	fsIso, netIso := adapter.FSNone, adapter.NetHost
	h, err := iso.helper(false)
	if err != nil {
		return fsIso, netIso
	}
	is := iso.enforced(h, false, false, false)
	if is.Filesystem {
		fsIso = adapter.FSJail
	}
	if is.Network {
		netIso = adapter.NetNamespace
	}
	return fsIso, netIso
}

// limitHit names the limit that ended a command that exited with code, if one did.
func (iso *isolation) limitHit(code int) string {
	if code == 128+int(syscall.SIGKILL) && iso.limits != nil && iso.limits.oomKilled() {
		return "memory"
	}
	return ""
}
