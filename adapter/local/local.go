// Package local is the adapter that runs commands as host processes in a workspace directory.
//
// Every file call goes through an os.Root opened on the workspace, so "..", absolute paths
// elsewhere and symlinks that lead out (dangling ones and symlinked parents included) are refused
// by the kernel-backed resolver, not by string prefixes. Writes are atomic (a temporary file in the
// target's directory, then rename). Commands run from argv (no shell) in their own process group
// with a minimal environment and no stdin unless given; on timeout or cancellation the group gets
// SIGTERM, then SIGKILL after a short grace, and whatever a command leaves in its group when it exits
// is killed too.
//
// Kernel isolation (Config.Isolation, on by default where the kernel allows it): each sandbox has
// a helper, this binary re-executed (see the package's init), that is PID 1 of new user, PID and
// mount namespaces, with a network namespace holding only loopback for commands whose network is
// off, and Landlock rules that confine writes to the workspace, a private TMPDIR and HOME and
// reads to system directories minus a deny list. The helper starts commands on request, each in a
// cgroup of its own where this process can create cgroups, so every descendant dies with the
// command.
// Result.Isolation says what was enforced for each command; Config.RequireIsolation refuses a
// command when a layer is missing; Probe tells which layers this machine allows. docs/local.md has
// the details. With Config.Isolation "off" a command can read and write anything the host user can,
// reach the network, and escape the kill by calling setsid.
package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/procs"
	"github.com/sandboxer/sandboxer/adapter/workspace"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// DefaultPath lists the system directories PATH ends with when Config.Path is empty.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// Config configures a local sandbox. The zero value is valid: a fresh temporary workspace that Stop
// removes, a PATH made from the caller's, and the default kill timings.
type Config struct {
	// Root is the workspace directory; it is created if missing and kept by Stop. Empty means a new
	// temporary directory that Stop removes. It must pass workspace.Vet (not `/`, a system
	// directory, a home directory, nor one holding this program or a Protect path).
	Root string `mapstructure:"root"`
	// Protect lists the caller's own files and directories (its configuration, state, journal,
	// other executables) that neither Root nor a WritePaths entry may contain: a command could
	// replace them. This program's executable and $XDG_RUNTIME_DIR are always protected.
	Protect []string `mapstructure:"protect"`
	// Path is the PATH of commands, also used to find Args[0]. Empty means the caller's PATH
	// (this process's) limited to the directories commands can see, with the toolchain
	// directories under the caller's home directory it names shown read-only (credential stores
	// inside them still denied), then DefaultPath's directories (see findToolchain and
	// docs/local.md). Commands' HOME is always a private directory of the sandbox's.
	Path string `mapstructure:"path"`
	// KillGrace is how long a process group has between SIGTERM and SIGKILL on timeout or
	// cancellation. Zero means 200ms.
	KillGrace time.Duration `mapstructure:"kill_grace"`
	// WaitDelay bounds how long a call waits, once the command has exited and its group is killed,
	// for a descendant that left the group and still holds stdout or stderr. Zero means 100ms.
	WaitDelay time.Duration `mapstructure:"wait_delay"`
	// Env is added to every command's environment ("KEY=VALUE"), before Command.Env.
	Env []string `mapstructure:"env"`

	// Isolation is "auto" (also the zero value "") for the kernel isolation layers (see
	// docs/local.md and Probe), or "off" for plain host processes. "auto" fails closed: a
	// command runs only with every layer it needs (the helper's, the network's, unprivileged
	// for a root caller, the limits when set, and the process tree's kill), less those
	// DisableLayers names; otherwise it is refused with errs.IsolationUnavailable naming them
	// (Details.missing), nothing run, and the next command tries again.
	Isolation string `mapstructure:"isolation"`
	// RequireIsolation is what "auto" always does now (issue 33); it is kept so configurations
	// that set it stay valid, and still contradicts Isolation "off".
	RequireIsolation bool `mapstructure:"require_isolation"`
	// DisableLayers opts out of single layers by name (the Layer constants), for a machine that
	// lacks one or where one misbehaves: they are no longer required, and those the adapter can
	// leave out (netns, landlock, landlock-tcp, cgroup, pidns-command, proc, fs-view, limits,
	// unprivileged; userns or pidns: no helper at all) are left out. ipcns, utsns, keyring,
	// no-caps, no-setuid and landlock-scope are still applied wherever they can be.
	DisableLayers []string `mapstructure:"disable_layers"`
	// ReadPaths are host paths commands may read and execute from, added to DefaultReadPaths.
	ReadPaths []string `mapstructure:"read_paths"`
	// DenyRead are host paths commands may never read, added to DefaultDenyRead(); they are cut
	// out of any read path that contains them.
	DenyRead []string `mapstructure:"deny_read"`
	// WritePaths are host directories commands may write besides the workspace and their TMPDIR.
	WritePaths []string `mapstructure:"write_paths"`
	// Caches names the caches shown to commands copy-on-write (they read the caller's files
	// and write a private copy; see caches.go), as "VAR=/path" (VAR, such as GOCACHE, is set to
	// the path) or "/path". nil means the caller's, found when the sandbox is made: Go's
	// GOCACHE and GOMODCACHE, pip's, npm's and cargo's registry. Each must be a directory of
	// the caller's outside any deny entry, the workspace and WritePaths. Only with isolation on.
	Caches []string `mapstructure:"caches"`
	// NoCaches shows commands none of the caller's caches (nor Caches).
	NoCaches bool `mapstructure:"no_caches"`

	// Memory bounds the memory of the sandbox's commands together, in bytes: 0 means
	// DefaultMemoryBytes, NoLimit none. A command the kernel kills for it exits 137 with
	// Result.Limit "memory".
	Memory int64 `mapstructure:"memory"`
	// Pids bounds the number of processes and threads of the sandbox's commands together: 0 means
	// DefaultPids, NoLimit none.
	Pids int `mapstructure:"pids"`
	// CPUs bounds the CPU time of the sandbox's commands together, in CPUs (1.5 = one and a half
	// cores' time); 0 means no cap.
	CPUs float64 `mapstructure:"cpus"`
	// Disk bounds how much the workspace may grow while the sandbox lives, in bytes (and its new
	// inodes, one per 4 KiB of it): what it held before does not count, what commands delete
	// makes room again. 0 (the default) is no cap. It is a project quota (LayerDisk): where the
	// workspace's file system does not enforce them, or the caller is not root, commands are
	// refused unless DisableLayers names LayerDisk. WritePaths and TMPDIR are not part of it
	// (TMPDIR is capped by Memory).
	Disk int64 `mapstructure:"disk"`
	// MaxProcesses bounds the background processes (Start) running at once; 0 means
	// adapter.DefaultMaxProcesses.
	MaxProcesses int `mapstructure:"max_processes"`

	// AllowHosts gives the sandbox an egress proxy (package egress, issue 16): commands keep the
	// network namespace's empty network, and the proxy, listening on the namespace's
	// 127.0.0.1:egress.Port from the first command on, is their only way out, to these hosts
	// (egress.ParseAllowlist syntax). Every command without Command.AllowNetwork gets
	// egress.Env. Without a network namespace (isolation off, or a kernel without it) there is
	// no proxy and nothing is enforced: only command inspection applies, as with the network off.
	AllowHosts []string `mapstructure:"allow_hosts"`
	// Egress tunes the egress proxy (its resolver, and address exceptions for tests); its
	// AllowHosts is ignored: AllowHosts above is the list.
	Egress egress.Config `mapstructure:"-" json:"-"`

	// ForkMaxFileBytes bounds the size of each file Fork copies: a larger file fails the fork
	// with errs.FileTooLarge. 0 means adapter.DefaultCopyMaxFileBytes (1 GiB), NoLimit none.
	ForkMaxFileBytes int64 `mapstructure:"fork_max_file_bytes"`
}

// Resource limits (Config.Memory, Config.Pids) of a sandbox when its Config leaves them zero.
const (
	DefaultMemoryBytes = 2 << 30
	DefaultPids        = 1024
	// NoLimit as Config.Memory, Config.Pids or Config.ForkMaxFileBytes sets no limit.
	NoLimit = -1
)

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.KillGrace < 0 || c.WaitDelay < 0 || c.MaxProcesses < 0 {
		return errs.New(errs.InvalidInput, "local", "", "kill_grace, wait_delay and max_processes must not be negative")
	}
	switch c.Isolation {
	case "", IsolationAuto, IsolationOff:
	default:
		return errs.New(errs.InvalidInput, "local", "", "isolation must be %q or %q, not %q", IsolationAuto, IsolationOff, c.Isolation)
	}
	if c.Memory < NoLimit || c.Pids < NoLimit || c.ForkMaxFileBytes < NoLimit || c.CPUs < 0 || c.Disk < 0 {
		return errs.New(errs.InvalidInput, "local", "", "memory, pids and fork_max_file_bytes must be positive, 0 (default) or -1 (none); cpus and disk positive or 0 (none)")
	}
	if c.RequireIsolation && c.Isolation == IsolationOff {
		return errs.New(errs.InvalidInput, "local", "", "require_isolation contradicts isolation: off")
	}
	known := []string{LayerUserNS, LayerPIDNS, LayerIPCNS, LayerUTSNS, LayerProc, LayerFSView, LayerNetNS, LayerLandlock,
		LayerLandlockScope, LayerLandlockNet, LayerKeyring, LayerNoCaps, LayerNoSetuid, LayerUnixConnect, LayerUnprivileged, LayerUIDPerSandbox, LayerCgroup,
		LayerPIDNSCommand, LayerLimits, LayerDisk}
	for _, l := range c.DisableLayers {
		if !slices.Contains(known, l) {
			return errs.New(errs.InvalidInput, "local", "", "unknown isolation layer %q in disable_layers", l)
		}
	}
	for _, p := range slices.Concat(c.ReadPaths, c.DenyRead, c.WritePaths) {
		if !filepath.IsAbs(p) {
			return errs.New(errs.InvalidInput, "local", p, "read_paths, deny_read and write_paths must be absolute")
		}
	}
	for _, e := range c.Caches {
		if _, p := splitCache(e); !filepath.IsAbs(p) {
			return errs.New(errs.InvalidInput, "local", e, "caches entries must be /path or VAR=/path, absolute")
		}
	}
	for _, p := range slices.Concat([]string{c.Root}, c.WritePaths) {
		if p == "" {
			continue // a temporary workspace of New's
		}
		if err := workspace.Vet(p, c.Protect...); err != nil {
			return err
		}
	}
	for _, p := range slices.Concat(c.ReadPaths, c.WritePaths) {
		if sock := findSocket(p); sock != "" {
			return errs.New(errs.InvalidInput, "local", p, "%s would show commands the unix socket %s (a daemon's way in): bind a directory without sockets", p, sock)
		}
	}
	if len(c.AllowHosts) > 0 {
		if err := egress.ValidateHosts(c.AllowHosts); err != nil {
			return err
		}
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return errs.New(errs.InvalidInput, "local", "", "env entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

// Sandbox is a local workspace. It is safe for concurrent use.
type Sandbox struct {
	cfg     Config
	dir     string // absolute, symlinks resolved
	given   string // absolute as configured (may differ from dir by symlinks)
	root    *os.Root
	temp    bool // dir was created by New and is removed by Stop
	env     []string
	path    string // commands' PATH: Config.Path, or what findToolchain made
	pathDir []string
	home    *homeDir // commands' HOME
	tempID  string   // names this sandbox's temporary files

	iso *isolation // nil when Config.Isolation is "off"

	noPidfd bool // collect plain commands as on a kernel without pidfds (tests)

	procs *procs.Table // started processes (Start)
	ports portSet      // connections and listeners of DialPort and ListenPort

	egress *egress.Proxy // Config.AllowHosts' proxy; nil without an allowlist

	forkSkipped adapter.CopyReport // set by Fork before the sandbox is returned, then only read

	mu      sync.Mutex
	stopped bool
	running map[int]struct{} // process group ids of running commands
}

var _ interface {
	adapter.Sandbox
	adapter.Capable
	adapter.Identified
	adapter.Lister
	adapter.Statter
	adapter.Remover
	adapter.Forker
	adapter.BulkReader
	adapter.BulkWriter
} = (*Sandbox)(nil)

// New opens (or creates) the workspace and returns a started sandbox.
func New(cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = 200 * time.Millisecond
	}
	if cfg.WaitDelay == 0 {
		cfg.WaitDelay = 100 * time.Millisecond
	}
	s := &Sandbox{cfg: cfg, running: map[int]struct{}{}, procs: procs.NewTable(cfg.MaxProcesses)}
	if cfg.Root == "" {
		d, err := os.MkdirTemp("", "sandboxer-local-")
		if err != nil {
			return nil, errs.Wrap(errs.SandboxUnavailable, "new", "", err)
		}
		lookAfter(janitorDir, d)
		cfg.Root, s.temp = d, true
	} else if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, "new", cfg.Root, err)
	}
	given, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, "new", cfg.Root, err)
	}
	dir, err := filepath.EvalSymlinks(given)
	if err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, "new", cfg.Root, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, "new", cfg.Root, err)
	}
	s.cfg, s.dir, s.given, s.root, s.tempID = cfg, dir, given, root, randomSuffix()
	s.path, s.home = cfg.Path, newHomeDir()
	var tc toolchain
	isolated := cfg.Isolation != IsolationOff && KernelIsolation
	home, _ := os.UserHomeDir()
	if cfg.Path == "" { // cfg keeps it empty: a fork finds the toolchain again
		var view []string // nil: commands see every directory
		if isolated {
			view = slices.Concat(viewSystemPaths, cfg.ReadPaths, cfg.WritePaths, []string{dir})
		}
		tc = findToolchain(os.Getenv("PATH"), home, append(DefaultDenyRead(), cfg.DenyRead...), view)
		s.path = strings.Join(tc.dirs, string(filepath.ListSeparator))
	}
	s.pathDir = filepath.SplitList(s.path)
	var caches []cache // only where an overlay can show them: with isolation on
	if isolated && !slices.Contains(cfg.DisableLayers, LayerFSView) {
		if caches, err = findCaches(cfg, os.Getenv, home, dir, s.pathDir, tc.roots); err != nil {
			root.Close()
			if s.temp {
				_ = os.RemoveAll(dir)
			}
			return nil, err
		}
	}
	s.env = append([]string{
		"PATH=" + s.path,
		"HOME=" + s.home.path,
		"LANG=C.UTF-8",
		"TZ=UTC",
	}, tc.env...)
	if cfg.Isolation != IsolationOff {
		if s.iso, err = newIsolation(cfg, dir, s.home, tc.roots, caches); err != nil {
			root.Close()
			if s.temp {
				_ = os.RemoveAll(dir)
			}
			return nil, errs.Wrap(errs.SandboxUnavailable, "new", "", err)
		}
		s.env = append(s.env, "TMPDIR="+s.iso.tmp)
	}
	s.env = append(s.env, cfg.Env...)
	if s.egress, err = egress.NewFor(cfg.AllowHosts, cfg.Egress); err != nil {
		s.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

// Dir returns the workspace directory (absolute, symlinks resolved).
func (s *Sandbox) Dir() string { return s.dir }

// Workspace is Capabilities().Workspace, the workspace directory, without the kernel probe that
// Capabilities costs (adapter.Workspaced).
func (s *Sandbox) Workspace() string { return s.dir }

// ID returns the workspace directory: a local sandbox is found again by its directory.
func (s *Sandbox) ID() string { return s.dir }

var _ adapter.NetworkEnforcer = (*Sandbox)(nil)

// EnforcesNetworkOff: a command without the network runs in the sandbox's network namespace,
// with only its loopback (adapter.NetworkEnforcer).
func (s *Sandbox) EnforcesNetworkOff() bool { return s.Capabilities().Network == adapter.NetNamespace }

// Capabilities of the local adapter: FSIsolation is FSJail and Network NetNamespace when isolation
// is on and the sandbox's helper has Landlock and the file system view, and the network
// namespace, in force. The first call starts that helper (the first command would), so a caller
// that only needs the workspace asks Workspace.
func (s *Sandbox) Capabilities() adapter.Capabilities {
	fsIso, netIso := adapter.FSNone, adapter.NetHost
	if s.iso != nil {
		fsIso, netIso = s.iso.capabilities()
	}
	return adapter.Capabilities{
		Adapter:     "local",
		FSIsolation: fsIso,
		Network:     netIso,
		Exec:        adapter.ExecHost,
		Signals:     true,
		Symlinks:    true,
		Workspace:   s.dir,
		Ports:       true,
		Processes:   true,
	}
}

func (s *Sandbox) checkOpen(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errs.New(errs.SandboxUnavailable, op, "", "sandbox is stopped")
	}
	return nil
}

// rel jails a caller's path lexically, accepting absolute paths under either spelling of the root.
func (s *Sandbox) rel(op, p string) (string, error) {
	r, err := adapter.Rel(op, s.dir, p)
	if err != nil && s.given != s.dir && filepath.IsAbs(p) {
		if r2, err2 := adapter.Rel(op, s.given, p); err2 == nil {
			return r2, nil
		}
	}
	return r, err
}

// Stop kills running commands, closes the workspace and removes it if New created it.
func (s *Sandbox) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	for pgid := range s.running {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	s.mu.Unlock()
	s.ports.close()
	err := s.stopProcesses(ctx)
	err = errors.Join(err, s.root.Close())
	err = errors.Join(err, s.egress.Close())
	if s.iso != nil {
		err = errors.Join(err, s.iso.stop())
	}
	err = errors.Join(err, s.home.remove())
	if s.temp {
		rerr := os.RemoveAll(s.dir)
		if rerr == nil {
			released(janitorDir, s.given)
		}
		err = errors.Join(err, rerr)
	}
	return errs.Wrap(errs.Internal, "stop", "", err)
}

// ---- files ----

// mapErr turns an error of an os.Root call into a coded error.
func mapErr(op, p string, err error) error {
	switch {
	case err == nil:
		return nil
	case adapter.IsRootEscape(err):
		return errs.Wrap(errs.PathEscape, op, p, err)
	case errors.Is(err, os.ErrClosed): // the workspace's root was closed by a concurrent Stop
		return errs.Wrap(errs.SandboxUnavailable, op, p, err)
	case errors.Is(err, fs.ErrNotExist):
		return errs.Wrap(errs.NotFound, op, p, err)
	case errors.Is(err, syscall.ENOTDIR):
		return errs.Wrap(errs.NotFound, op, p, err)
	case errors.Is(err, syscall.ELOOP):
		return errs.Wrap(errs.PathEscape, op, p, err)
	}
	return errs.Wrap(errs.Internal, op, p, err)
}

// open opens a regular file of the workspace for reading, with its size.
func (s *Sandbox) open(p string) (*os.File, int64, error) {
	if err := s.checkOpen("read"); err != nil {
		return nil, 0, err
	}
	r, err := s.rel("read", p)
	if err != nil {
		return nil, 0, err
	}
	// O_NONBLOCK: a FIFO planted in the workspace must not hang the call.
	f, err := s.root.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, mapErr("read", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, mapErr("read", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, errs.New(errs.NotFound, "read", p, "not a regular file (%s)", fi.Mode().Type())
	}
	return f, fi.Size(), nil
}

// OpenFile opens a regular file of the workspace for reading (adapter.FileStreamer).
func (s *Sandbox) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	f, size, err := s.open(p)
	if err != nil {
		return nil, 0, err
	}
	return f, size, nil
}

// ReadFile reads a regular file of the workspace.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	f, size, err := s.open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size of the file opened (a symlink's target), checked before anything is allocated.
	limit := adapter.ReadLimit(ctx)
	if size > limit {
		return nil, adapter.FileTooLarge("read", p, size, limit)
	}
	data := make([]byte, 0, size+1)
	for {
		if int64(len(data)) > limit { // it grew while being read
			return nil, adapter.FileTooLarge("read", p, int64(len(data)), limit)
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, mapErr("read", p, err)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// resolve follows a final symlink of r (the parent directories are resolved safely by os.Root)
// and returns the workspace-relative path a write must replace. A link chain that leaves the
// workspace, dangling or not, is errs.PathEscape.
func (s *Sandbox) resolve(op, p, r string) (target string, mode fs.FileMode, err error) {
	for range 40 {
		fi, err := s.root.Lstat(r)
		if errors.Is(err, fs.ErrNotExist) {
			return r, 0o644, nil
		}
		if err != nil {
			return "", 0, mapErr(op, p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return "", 0, errs.New(errs.InvalidInput, op, p, "not a regular file (%s)", fi.Mode().Type())
			}
			return r, fi.Mode().Perm(), nil
		}
		link, err := s.root.Readlink(r)
		if err != nil {
			return "", 0, mapErr(op, p, err)
		}
		if filepath.IsAbs(link) {
			r, err = s.rel(op, link)
		} else {
			r, err = adapter.Rel(op, s.dir, path.Join(path.Dir(r), link)) // a leading ".." is an escape
		}
		if err != nil {
			return "", 0, errs.New(errs.PathEscape, op, p, "symlink leads outside the workspace")
		}
	}
	return "", 0, errs.New(errs.PathEscape, op, p, "too many levels of symbolic links")
}

// WriteFile writes data atomically: a temporary file next to the target, then rename.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	_, err := s.WriteFileFrom(ctx, p, bytes.NewReader(data))
	return err
}

// WriteFileFrom writes what src yields as WriteFile writes data (adapter.FileStreamer).
func (s *Sandbox) WriteFileFrom(ctx context.Context, p string, src io.Reader) (int64, error) {
	if err := s.checkOpen("write"); err != nil {
		return 0, err
	}
	r, err := s.rel("write", p)
	if err != nil {
		return 0, err
	}
	if r == "." {
		return 0, errs.New(errs.InvalidInput, "write", p, "the workspace root is a directory")
	}
	d, err := s.openDir("write", p, path.Dir(r), true)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n, err := s.writeFrom(d, "write", p, path.Base(r), src)
	if errors.Is(err, errFinalSymlink) {
		return s.writeThroughLink(p, r, src)
	}
	return n, err
}

// writeThroughLink writes the file a final symlink leads to, when it stays inside the workspace.
func (s *Sandbox) writeThroughLink(p, r string, src io.Reader) (int64, error) {
	target, _, err := s.resolve("write", p, r)
	if err != nil {
		return 0, err
	}
	d, err := s.openDir("write", p, path.Dir(target), true)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n, err := s.writeFrom(d, "write", p, path.Base(target), src)
	if errors.Is(err, errFinalSymlink) { // replaced by a link meanwhile
		return 0, errs.New(errs.PathEscape, "write", p, "the target changed into a symlink while writing")
	}
	return n, err
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ---- exec ----

// ExecuteCommand runs argv in its own process group. See adapter.Sandbox for the contract.
func (s *Sandbox) ExecuteCommand(ctx context.Context, c adapter.Command) (adapter.Result, error) {
	prog, dir, err := s.prepare("exec", c)
	if err != nil {
		return adapter.Result{}, err
	}
	if c.Env, err = s.egressEnv(ctx, c); err != nil {
		return adapter.Result{}, err
	}
	return s.run(ctx, c, prog, dir)
}

// prepare checks a command before it starts and returns its program and working directory.
func (s *Sandbox) prepare(op string, c adapter.Command) (prog, dir string, err error) {
	if err := s.checkOpen(op); err != nil {
		return "", "", err
	}
	if len(c.Args) == 0 || c.Args[0] == "" {
		return "", "", errs.New(errs.InvalidInput, op, "", "args must name a program")
	}
	if c.MaxOutputBytes < 0 || c.Timeout < 0 {
		return "", "", errs.New(errs.InvalidInput, op, "", "limits must not be negative")
	}
	dir, err = s.workDir(c.Dir)
	if err != nil {
		return "", "", err
	}
	if err := s.home.ensure(); err != nil {
		return "", "", err
	}
	if s.iso != nil {
		if err := s.iso.ensureTmp(); err != nil {
			return "", "", err
		}
	}
	prog, err = s.lookPath(c.Args[0], dir)
	if err != nil {
		return "", "", err
	}
	return prog, dir, nil
}

// workDir resolves Command.Dir to a host directory inside the workspace.
func (s *Sandbox) workDir(d string) (string, error) {
	if d == "" {
		return s.dir, nil
	}
	r, err := s.rel("exec", d)
	if err != nil {
		return "", err
	}
	if r == "." {
		return s.dir, nil
	}
	// Open through the root (refusing escapes), then use the directory's real path.
	sub, err := s.root.OpenRoot(r)
	if err != nil {
		return "", mapErr("exec", d, err)
	}
	defer sub.Close()
	real, err := filepath.EvalSymlinks(filepath.Join(s.dir, filepath.FromSlash(r)))
	if err != nil {
		return "", mapErr("exec", d, err)
	}
	if real != s.dir && !strings.HasPrefix(real, s.dir+string(filepath.Separator)) {
		return "", errs.New(errs.PathEscape, "exec", d, "working directory leaves the workspace")
	}
	return real, nil
}

// lookPath finds a program on the sandbox's PATH (never the server's).
func (s *Sandbox) lookPath(name, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", errs.Wrap(errs.ProcessFailed, "exec", name, err)
		}
		return p, nil
	}
	for _, d := range s.pathDir {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errs.New(errs.ProcessFailed, "exec", name, "executable not found in PATH %s", s.path)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// readBufs recycles the pipe read buffers: two per command would otherwise be garbage.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

// process is a started command as run sees it: a plain child in its own process group, or a
// command started by the isolation helper.
type process interface {
	wait() (code int, err error) // blocks until the main process exits
	signal(sig syscall.Signal)   // to the command's process group (SIGKILL: its whole tree)
	finish()                     // after exit: kill whatever the command left behind
	abandon()                    // its helper does not answer: kill it, which ends wait
	// exitFile is readable once the main process has exited (wait then does not block), or
	// nil: collect then waits in a goroutine (collectAsync).
	exitFile() *os.File
	// receipt fills what was measured of the command (CPU, memory, processes, disk), after
	// finish.
	receipt(r *adapter.Receipt)
}

// groupProcess is a plain host child in its own process group.
type groupProcess struct {
	s     *Sandbox
	cmd   *exec.Cmd
	pgid  int
	pidfd *os.File // readable once the child has exited; nil where the kernel has no pidfd

	mu       sync.Mutex // a background process is signalled from other goroutines than the one that finishes it
	finished bool       // its group id may now be another process's: signal nothing
}

func (p *groupProcess) wait() (int, error) {
	err := p.cmd.Wait()
	return exitCode(p.cmd.ProcessState, err), nil
}

func (p *groupProcess) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.finished {
		_ = syscall.Kill(-p.pgid, sig)
	}
}

func (p *groupProcess) abandon() {} // a plain child's SIGKILL always ends its wait

func (p *groupProcess) exitFile() *os.File { return p.pidfd }

// receipt: the CPU time and peak resident size wait4 reported for the main process, which
// include those of the descendants it waited for (a shell's commands), not of ones it left.
func (p *groupProcess) receipt(r *adapter.Receipt) {
	ps := p.cmd.ProcessState
	if ps == nil {
		return
	}
	r.CPUUs = adapter.Int64((ps.UserTime() + ps.SystemTime()).Microseconds())
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
		r.PeakMemoryBytes = adapter.Int64(maxRSSBytes(ru))
	}
}

func (p *groupProcess) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	released(janitorPG, strconv.Itoa(p.pgid))
	p.s.untrack(p.pgid)
	if p.pidfd != nil {
		p.pidfd.Close()
	}
}

// devNull is /dev/null, opened once for the process's lifetime and shared by every command with no
// stdin (exec.Cmd would open, register with the poller and close it per command: seven system
// calls). nil if it cannot be opened: exec.Cmd then opens its own.
var devNull = sync.OnceValue(func() *os.File {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), os.DevNull)
})

// startPlain starts argv as a host process in its own process group.
func (s *Sandbox) startPlain(c adapter.Command, prog, dir string, env []string, outW, errW *os.File) (process, error) {
	cmd := &exec.Cmd{
		Path:   prog,
		Args:   c.Args,
		Dir:    dir,
		Env:    env,
		Stdin:  c.Stdin,
		Stdout: outW,
		Stderr: errW,
	}
	if c.Stdin == nil {
		if f := devNull(); f != nil {
			cmd.Stdin = f
		}
	}
	pidFD := -1
	cmd.SysProcAttr = plainAttr(!s.noPidfd, &pidFD)
	if err := cmd.Start(); err != nil {
		return nil, errs.Wrap(errs.ProcessFailed, "exec", c.Args[0], err)
	}
	p := &groupProcess{s: s, cmd: cmd, pgid: cmd.Process.Pid}
	if pidFD >= 0 { // the kernel made one: a File owns it from here on
		p.pidfd = os.NewFile(uintptr(pidFD), "pidfd")
	}
	lookAfter(janitorPG, strconv.Itoa(p.pgid)) // killed by the janitor if this process dies first
	if !s.track(p.pgid) {                      // stopped meanwhile
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	}
	return p, nil
}

// spawn starts a prepared command with its output on new pipes (which the caller closes), isolated
// when isolation is on.
func (s *Sandbox) spawn(c adapter.Command, prog, dir string) (process, *outPipes, adapter.Isolation, error) {
	pipes, err := newOutPipes()
	if err != nil {
		return nil, nil, adapter.Isolation{}, errs.Wrap(errs.Internal, "exec", "", err)
	}
	env := append(append([]string(nil), s.env...), c.Env...)
	var p process
	var iso adapter.Isolation
	if s.iso != nil {
		p, iso, err = s.startIsolated(c, prog, dir, env, pipes.w[0], pipes.w[1])
	}
	if p == nil && err == nil {
		p, err = s.startPlain(c, prog, dir, env, pipes.w[0], pipes.w[1])
	}
	pipes.closeWriters()
	if err != nil {
		pipes.close()
		return nil, nil, iso, err
	}
	return p, pipes, iso, nil
}

func (s *Sandbox) run(ctx context.Context, c adapter.Command, prog, dir string) (adapter.Result, error) {
	start := time.Now()
	p, pipes, iso, err := s.spawn(c, prog, dir)
	if err != nil {
		return adapter.Result{Isolation: iso}, err
	}
	defer pipes.close()

	limit := c.Limit()
	stdout, stderr := adapter.NewCappedBuffer(limit), adapter.NewCappedBuffer(limit)
	out := [2]io.Writer{stdout, stderr}
	if c.Stdout != nil {
		out[0] = io.MultiWriter(stdout, c.Stdout)
	}
	if c.Stderr != nil {
		out[1] = io.MultiWriter(stderr, c.Stderr)
	}
	ex, cause, err := s.collect(ctx, p, pipes, c.Timeout, out)
	if err != nil { // poll failed: end the command and say so
		p.signal(syscall.SIGKILL)
		_, _ = p.wait()
		p.finish()
		return adapter.Result{Isolation: iso}, errs.Wrap(errs.Internal, "exec", "", err)
	}

	res := adapter.Result{Duration: time.Since(start), ExitCode: ex.code, Isolation: iso}
	if s.iso != nil {
		res.Limit = s.iso.limitHit(ex.code)
	}
	adapter.Capture(&res, stdout, stderr)
	p.receipt(&res.Receipt)
	if cause == nil && ex.err != nil {
		cause = ex.err
	}
	if cause != nil {
		if e, ok := cause.(*errs.Error); ok {
			e.Details = map[string]any{"stdout": string(res.Stdout), "stderr": string(res.Stderr)}
		}
		return res, cause
	}
	return res, nil
}

// exit is how a command's main process ended.
type exit struct {
	code int
	err  error // the process could not be waited for (its helper died)
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func (s *Sandbox) track(pgid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[pgid] = struct{}{}
	return !s.stopped
}

func (s *Sandbox) untrack(pgid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, pgid)
}

// findSocket returns a unix socket at or under p (symlinks not followed below p), or "".
// Unreadable directories are skipped: commands cannot list them either.
func findSocket(p string) string {
	found := ""
	_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type()&fs.ModeSocket != 0 {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	if found == "" {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			found = p
		}
	}
	return found
}

// maxRSSBytes is a rusage's peak resident size in bytes: the kernel reports kilobytes, except
// on Darwin.
func maxRSSBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
