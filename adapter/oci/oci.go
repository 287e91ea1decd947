// Package oci is the sandbox adapter that runs each sandbox as one OCI container, without a
// daemon: it writes a bundle (config.json, built with github.com/opencontainers/runtime-spec)
// and runs it with an OCI runtime binary, runc (the default), crun, or runsc (gVisor, which puts
// a user-space kernel between the sandbox and the host's).
//
// Everything lives under the state directory (Config.StateDir), in oci/: the root file system,
// unpacked once per content hash from the recipe of package rootfs (busybox, rg, the sandbox
// agent) and shared read-only by every sandbox (rootfs/), or the image of Config.Image, unpacked
// once per digest (images/, with the host's agent beside it in agent/); the runtime's own state (runtime/NAME,
// its --root, never the runtime's global default); one directory per sandbox with its bundle and
// a record of who owns it (sandboxes/ID); and the workspaces the sandboxes made (workspaces/ID),
// host directories mounted read-write at /workspace; the commands' HOME (adapter.DefaultHome) is
// a directory of the sandbox's own beside it, and both are on one file system of
// Config.WorkspaceBytes where the host allows it.
//
// The sandbox agent (package agent) is the container's PID 1: it reaps orphans and serves every
// command over the container's stdio, so a command costs a fork in the container and a round
// trip over a pipe. Another process reaches the same sandbox by id (Attach) through an agent of
// its own started with the runtime's exec. File calls do not go through the container: they run
// on the host through an os.Root on the workspace directory (see files.go), which is both faster
// and safe against links made inside the container.
//
// Containers are hardened by default (see Config): a user namespace that maps the container's
// root to an unprivileged host uid (runc and crun, where the state directory allows it), a
// non-root user, every capability dropped, no-new-privileges, the default seccomp profile of
// github.com/moby/profiles/seccomp, a read-only root with a private /tmp, masked and read-only
// /proc paths, 512 MiB of memory, 1 CPU and 256 pids in a cgroup, and an empty network namespace
// (loopback only) unless the network is allowed, in which case the container shares the host's
// network namespace. Each result's Isolation lists the layers that were checked in force for the
// sandbox; docs/oci.md has the details and what this host's runtimes enforce.
package oci

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/adapter/internal/cgstat"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// Runtimes this adapter drives.
const (
	Runc  = "runc"
	Runsc = "runsc"
	Crun  = "crun"
)

// Runtimes lists the runtime names Config.Runtime accepts, the default first.
var Runtimes = []string{Runc, Runsc, Crun}

// Defaults of the zero Config.
const (
	DefaultMemoryBytes = 512 << 20
	DefaultMilliCPUs   = 1000
	DefaultPids        = 256
	// DefaultWorkspaceBytes caps the workspace a sandbox makes (Config.WorkspaceBytes).
	DefaultWorkspaceBytes = 10 << 30
	// DefaultUIDBase is the host uid the container's root is mapped to in the user namespace;
	// container uids 0..65535 are host uids DefaultUIDBase..DefaultUIDBase+65535, a range no
	// account and no systemd convention uses.
	DefaultUIDBase = 2_000_000_000
)

// idRange is the number of uids and gids the user namespace maps.
const idRange = 65536

// User namespace modes of Config.UserNamespace.
const (
	UserNSAuto = "auto"
	UserNSOn   = "on"
	UserNSOff  = "off"
)

// Config configures an oci sandbox. The zero value is the hardened default described in the
// package documentation, with runc, under DefaultStateDir(), and a fresh workspace that Stop
// removes.
type Config struct {
	// Runtime is "runc" (""), "runsc" or "crun".
	Runtime string `mapstructure:"runtime"`
	// RuntimePath is the runtime's executable; "" looks Runtime up on PATH.
	RuntimePath string `mapstructure:"runtime_path"`
	// StateDir holds the root file system, the runtime's state and the sandboxes (see the package
	// documentation); "" is DefaultStateDir().
	StateDir string `mapstructure:"state_dir"`
	// Workspace is a host directory to mount at /workspace; it is made owned by the sandbox user
	// (recursively) and kept by Stop. "" makes a new one in the sandbox's directory, which Stop
	// removes unless KeepWorkspace is set.
	Workspace string `mapstructure:"workspace"`
	// KeepWorkspace keeps a workspace the sandbox made when it stops.
	KeepWorkspace bool `mapstructure:"keep_workspace"`
	// AllowNetwork runs the container in the host's network namespace instead of an empty one.
	// This is weaker than docker's bridge: the sandbox sees every host interface and can reach
	// services that listen on the host's loopback.
	AllowNetwork bool `mapstructure:"allow_network"`
	// AllowHosts gives the sandbox an egress proxy (package egress, issue 16): the container
	// keeps its empty network namespace, and the proxy, listening on the container's
	// 127.0.0.1:egress.Port from the first command on, is the only way out, to these hosts.
	// Every command gets egress.Env. Exclusive with AllowNetwork.
	AllowHosts []string `mapstructure:"allow_hosts"`
	// Egress tunes the egress proxy (resolver, test-only address exceptions); its AllowHosts is
	// ignored.
	Egress egress.Config `mapstructure:"-" json:"-"`
	// UserNamespace is "auto" (""), "on" or "off". With runc and crun, "auto" maps the container's
	// uids to UIDBase.. when the runtime can reach the sandbox's files from that namespace (every
	// directory above the state directory searchable by others), and runs without a user namespace
	// otherwise; "on" refuses to run without one. runsc always runs without (gVisor's kernel has
	// its own users): "on" is refused there.
	UserNamespace string `mapstructure:"user_namespace"`
	// UIDBase is the host uid of the container's root in the user namespace; 0 is DefaultUIDBase.
	UIDBase uint32 `mapstructure:"uid_base"`
	// MemoryBytes limits memory (no swap); 0 is DefaultMemoryBytes, -1 is unlimited.
	MemoryBytes int64 `mapstructure:"memory_bytes"`
	// MilliCPUs limits CPU time in thousandths of a CPU; 0 is DefaultMilliCPUs, -1 is unlimited.
	MilliCPUs int64 `mapstructure:"milli_cpus"`
	// Pids limits the number of processes; 0 is DefaultPids, -1 is unlimited. Under runsc the
	// host's limit is on gVisor's host tasks, Pids*16+128 (see hostPids): reaching it ends the
	// whole sandbox rather than failing a fork.
	Pids int64 `mapstructure:"pids"`
	// TmpBytes is the size of the /tmp tmpfs; 0 is half the memory limit (adapter.TmpBytes).
	TmpBytes int64 `mapstructure:"tmp_bytes"`
	// WorkspaceBytes caps the workspace the sandbox makes (Workspace ""): it is an ext4 file
	// system of that size in a sparse file of the sandbox's directory, loop-mounted on the host
	// (package adapter/internal/diskcap), so that a command writing past it gets ENOSPC and the
	// host's disk loses at most that much. 0 is DefaultWorkspaceBytes, -1 is no cap. It needs
	// root, a loop device and mkfs.ext4; without them, and for a given or kept workspace (a host
	// directory the sandbox does not own), the sandbox runs without the cap and its results leave
	// the layer "disk:SIZE" out (WorkspaceCap says why).
	WorkspaceBytes int64 `mapstructure:"workspace_bytes"`
	// WritableRootfs makes the root file system writable. The tree is shared by every sandbox:
	// only with a user namespace (where the sandbox user cannot write it anyway) is this harmless.
	WritableRootfs bool `mapstructure:"writable_rootfs"`
	// CapAdd gives capabilities back (all are dropped by default), e.g. "CAP_NET_BIND_SERVICE".
	CapAdd []string `mapstructure:"cap_add"`
	// AllowPrivilegeEscalation drops the no-new-privileges flag.
	AllowPrivilegeEscalation bool `mapstructure:"allow_privilege_escalation"`
	// NoSeccomp runs without the default seccomp profile. runsc never gets it: gVisor's kernel
	// is the barrier between the sandbox's system calls and the host (confined by gVisor's own
	// filter), and the runsc of Debian 12 answers the profile's ENOSYS rules with EPERM, which
	// breaks glibc's fallback from clone3 to clone (threads cannot start).
	NoSeccomp bool `mapstructure:"no_seccomp"`
	// Persist marks the sandbox as outliving the process that created it (CLI `sandbox create`):
	// its agent stays when the creator's stream ends, and Prune leaves it.
	Persist bool `mapstructure:"persist"`
	// Env is added to the minimal environment of every command.
	Env []string `mapstructure:"env"`
	// ForkMaxFileBytes bounds the size of each file Fork copies: a larger file fails the fork with
	// errs.FileTooLarge. 0 is adapter.DefaultCopyMaxFileBytes (1 GiB), -1 is unlimited.
	ForkMaxFileBytes int64 `mapstructure:"fork_max_file_bytes"`
	// Mounts are host directories mounted read-only under /mnt (a toolchain, a data set).
	Mounts []Mount `mapstructure:"mounts"`
	// Image is the root file system: "" is sandboxer's own (package rootfs: busybox, rg, the
	// agent); otherwise an image, unpacked once per digest under the state directory (images/)
	// and shared read-only, from oci-layout:PATH[:TAG|@DIGEST] (an OCI image layout directory),
	// docker-archive:PATH (a `docker save` tarball) or, any other name, the local docker daemon.
	// No registry is ever contacted. The host's agent is mounted read-only at agent.BroughtPath;
	// the commands get the image's environment (its PATH), HOME staying adapter.DefaultHome; the image's
	// entrypoint, command, user and working directory are not used. An image of another
	// platform is refused (errs.InvalidInput). See docs/oci.md, "Any image".
	Image string `mapstructure:"image"`
	// RunscPlatform is gVisor's platform under runsc: "auto" ("") uses kvm where /dev/kvm exists
	// and a probe sandbox runs on it within DefaultPlatformProbeTimeout (the decision is kept in
	// the state directory for the boot), runsc's default otherwise (ptrace, or systrap in newer
	// runsc); "kvm", "ptrace" or "systrap" forces one, refused (errs.SandboxUnavailable) when this
	// runsc lacks it or, for kvm, there is no /dev/kvm. Other runtimes ignore it.
	RunscPlatform string `mapstructure:"runsc_platform"`
	// Busybox, Ripgrep and Agent choose the host files of the root file system (see
	// rootfs.Options); "" takes the defaults. With Image they are not used.
	Busybox string `mapstructure:"busybox"`
	Ripgrep string `mapstructure:"ripgrep"`
	Agent   string `mapstructure:"agent"`
}

// Mount is a host directory mounted read-only in the sandbox.
type Mount struct {
	Source string `mapstructure:"source"` // absolute host path of a directory
	Target string `mapstructure:"target"` // /mnt/NAME (one level below /mnt)
}

// Validate reports a configuration that cannot be used, as errs.InvalidInput.
func (c Config) Validate() error {
	bad := func(f string, a ...any) error { return errs.New(errs.InvalidInput, "oci config", "", f, a...) }
	if len(c.AllowHosts) > 0 {
		if c.AllowNetwork {
			return bad("AllowHosts and AllowNetwork exclude each other")
		}
		if err := egress.ValidateHosts(c.AllowHosts); err != nil {
			return err
		}
	}
	if c.Runtime != "" && !slices.Contains(Runtimes, c.Runtime) {
		return bad("Runtime %q: want one of %v", c.Runtime, Runtimes)
	}
	if c.RunscPlatform != "" && !slices.Contains(platformNames, c.RunscPlatform) {
		return bad("RunscPlatform %q: want one of %v", c.RunscPlatform, platformNames)
	}
	switch c.UserNamespace {
	case "", UserNSAuto, UserNSOn, UserNSOff:
	default:
		return bad("UserNamespace %q: want auto, on or off", c.UserNamespace)
	}
	if c.runtime() == Runsc && c.UserNamespace == UserNSOn {
		return bad("UserNamespace on: runsc runs without a user namespace (gVisor's kernel has its own users)")
	}
	if c.UIDBase != 0 && (c.UIDBase < idRange || uint64(c.UIDBase)+idRange > 1<<31-1) {
		return bad("UIDBase %d: want at least %d (not a host account) and below 2^31-%d", c.UIDBase, idRange, idRange)
	}
	for name, v := range map[string]int64{"MemoryBytes": c.MemoryBytes, "MilliCPUs": c.MilliCPUs, "Pids": c.Pids, "ForkMaxFileBytes": c.ForkMaxFileBytes, "WorkspaceBytes": c.WorkspaceBytes} {
		if v < -1 {
			return bad("%s must be -1 (unlimited), 0 (default) or positive, not %d", name, v)
		}
	}
	if c.MemoryBytes > 0 && c.MemoryBytes < 16<<20 {
		return bad("MemoryBytes must be at least 16 MiB")
	}
	if c.MilliCPUs > 0 && c.MilliCPUs < 10 {
		return bad("MilliCPUs must be at least 10")
	}
	if c.TmpBytes < 0 {
		return bad("TmpBytes must not be negative")
	}
	if c.WorkspaceBytes > 0 && c.WorkspaceBytes < diskcap.MinBytes {
		return bad("WorkspaceBytes must be at least %d", diskcap.MinBytes)
	}
	if c.Image != "" {
		if err := validImageRef(c.Image); err != nil {
			return bad("%v", err)
		}
	}
	if c.Workspace != "" && !filepath.IsAbs(c.Workspace) {
		return bad("Workspace %q must be an absolute path", c.Workspace)
	}
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		return bad("StateDir %q must be an absolute path", c.StateDir)
	}
	for _, cp := range c.CapAdd {
		if !strings.HasPrefix(cp, "CAP_") || strings.ToUpper(cp) != cp {
			return bad("CapAdd %q: want a name like CAP_NET_BIND_SERVICE", cp)
		}
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" || strings.IndexByte(e, 0) >= 0 {
			return bad("Env entry %q is not KEY=VALUE", e)
		}
	}
	targets := map[string]bool{}
	for _, m := range c.Mounts {
		name, ok := strings.CutPrefix(m.Target, "/mnt/")
		if !ok || name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
			return bad("Mounts target %q: want /mnt/NAME", m.Target)
		}
		if targets[m.Target] {
			return bad("Mounts target %q given twice", m.Target)
		}
		targets[m.Target] = true
		if !filepath.IsAbs(m.Source) {
			return bad("Mounts source %q must be an absolute path", m.Source)
		}
		if fi, err := os.Stat(m.Source); err != nil || !fi.IsDir() {
			return bad("Mounts source %q is not a directory", m.Source)
		}
	}
	return nil
}

// Host tasks of a runsc sandbox: on gVisor's ptrace platform every process of the sandbox costs
// the host a stub process with a traced thread per kernel thread that has run it (11 to 14 host
// tasks per sleeping process here, on 2 CPUs), and gVisor's kernel has ~40 threads of its own.
// The host's pids cgroup counts all of them, and gVisor's kernel dies when it cannot make a
// thread (gVisor issue 2490), so a runsc sandbox's host limit is scaled from Pids.
const (
	runscTasksPerProcess = 16
	runscKernelTasks     = 128
)

// hostPids is the pids.max of the sandbox's host cgroup, or 0 for none: Pids itself, or for
// runsc the host tasks that Pids processes cost (see runscTasksPerProcess).
func (c Config) hostPids() int64 {
	pids := orDefault(c.Pids, DefaultPids)
	if pids <= 0 {
		return 0
	}
	if c.runtime() == Runsc {
		return pids*runscTasksPerProcess + runscKernelTasks
	}
	return pids
}

func (c Config) runtime() string {
	if c.Runtime == "" {
		return Runc
	}
	return c.Runtime
}

func (c Config) stateDir() string {
	if c.StateDir == "" {
		return DefaultStateDir()
	}
	return c.StateDir
}

func (c Config) uidBase() uint32 {
	if c.UIDBase == 0 {
		return DefaultUIDBase
	}
	return c.UIDBase
}

func (c Config) forkMaxFileBytes() int64 {
	if c.ForkMaxFileBytes == 0 {
		return adapter.DefaultCopyMaxFileBytes
	}
	return c.ForkMaxFileBytes
}

// tmpOptions are the size options of /tmp: adapter.TmpBytes of the setting and the memory limit.
func (c Config) tmpOptions() []string {
	if tmp := adapter.TmpBytes(c.TmpBytes, orDefault(c.MemoryBytes, DefaultMemoryBytes)); tmp > 0 {
		return []string{fmt.Sprintf("size=%d", tmp)}
	}
	return nil
}

// workspaceBytes is the cap of a workspace the sandbox makes, 0 for none.
func (c Config) workspaceBytes() int64 { return orDefault(c.WorkspaceBytes, DefaultWorkspaceBytes) }

func (c Config) rootfsOptions() rootfs.Options {
	return rootfs.Options{Busybox: c.Busybox, Ripgrep: c.Ripgrep, Agent: c.Agent}
}

func orDefault(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// DefaultStateDir is sandboxer's state directory, as the CLI's: $XDG_STATE_HOME/sandboxer, or
// ~/.local/state/sandboxer, or sandboxer-state under the system temporary directory.
func DefaultStateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sandboxer")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "sandboxer")
	}
	return filepath.Join(os.TempDir(), "sandboxer-state")
}

// layout names the adapter's places under the state directory.
type layout struct{ dir string } // STATE/oci

func layoutOf(stateDir string) layout           { return layout{filepath.Join(stateDir, "oci")} }
func (l layout) rootfs() string                 { return filepath.Join(l.dir, "rootfs") }
func (l layout) images() string                 { return filepath.Join(l.dir, "images") }
func (l layout) agent() string                  { return filepath.Join(l.dir, "agent") }
func (l layout) runtimeRoot(name string) string { return filepath.Join(l.dir, "runtime", name) }
func (l layout) sandboxes() string              { return filepath.Join(l.dir, "sandboxes") }
func (l layout) sandbox(id string) string       { return filepath.Join(l.sandboxes(), id) }
func (l layout) workspace(id string) string     { return filepath.Join(l.dir, "workspaces", id) }

// disk is the file holding the file system of sandbox id's capped workspace (WorkspaceBytes).
func (l layout) disk(id string) string { return filepath.Join(l.sandbox(id), diskcap.ImageName) }

// diskMount is where that file system is mounted on the host.
func (l layout) diskMount(id string) string { return filepath.Join(l.sandbox(id), "disk") }

// home is sandbox id's HOME where it has no capped file system to hold it.
func (l layout) home(id string) string { return filepath.Join(l.sandbox(id), "home") }

// diskMount is where the record's capped file system is mounted (Workspace in the layout made
// before HOME).
func (r record) diskMount() string { return cmp.Or(r.DiskMount, r.Workspace) }

// streams is the host directory of a sandbox's direct streams (see package agent), mounted
// read-only at agent.DirectSandboxDir: a dialled port or an accepted connection is a unix
// connection of its own instead of a stream multiplexed over the runtime's pipes.
func (l layout) streams(id string) string { return filepath.Join(l.sandbox(id), "streams") }

// execFile is the process (in the bundle directory) of an agent started with the runtime's exec.
const execFile = "exec.json"

// containerID is the runtime's name of sandbox id.
func containerID(id string) string { return "sandboxer-" + id }

// record is what a sandbox's directory says about it (record.json), for Attach, List and Prune.
type record struct {
	ID            string `json:"id"`
	Runtime       string `json:"runtime"`
	RuntimePath   string `json:"runtimePath"`
	Owner         string `json:"owner"`      // hostname:pid of the creator
	OwnerStart    uint64 `json:"ownerStart"` // the creator's start time (clock ticks after boot)
	Persist       bool   `json:"persist"`
	Workspace     string `json:"workspace"`
	OwnWorkspace  bool   `json:"ownWorkspace"` // made by the sandbox, removed with it unless kept
	KeepWorkspace bool   `json:"keepWorkspace"`
	// Disk is the file of the capped file system (see Config.WorkspaceBytes), set before it is
	// made: removal unmounts and removes it. It is mounted at DiskMount, whose directories
	// workspace and home are Workspace and Home; a record without DiskMount (made before HOME) has
	// it mounted at Workspace.
	Disk      string `json:"disk,omitempty"`
	DiskMount string `json:"diskMount,omitempty"`
	// Home is the host directory mounted at HOME (adapter.DefaultHome): on the capped file
	// system, else the sandbox's directory's home. "" in a record made before HOME had it: such a
	// sandbox's commands keep the workspace as HOME.
	Home         string `json:"home,omitempty"`
	UserNS       bool   `json:"userns"`
	HostUID      int    `json:"hostUid"` // host uid (and gid) of the sandbox user
	AllowNetwork bool   `json:"allowNetwork"`
	// ImageEnv is the environment of Config.Image, the base of every command's.
	ImageEnv []string `json:"imageEnv,omitempty"`
	// ImageTree is the hex digest of Config.Image's tree under images/: Prune keeps a tree that a
	// record names.
	ImageTree string `json:"imageTree,omitempty"`
	// Platform is gVisor's platform of a runsc sandbox (see Config.RunscPlatform).
	Platform string    `json:"platform,omitempty"`
	Created  time.Time `json:"created"`
	// Config is the configuration the sandbox was made with: an attached handle and a fork use
	// it (limits, environment, mounts), whatever configuration Attach was given.
	Config Config `json:"config"`
}

func (l layout) readRecord(id string) (record, error) {
	var r record
	b, err := os.ReadFile(filepath.Join(l.sandbox(id), "record.json"))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.ID != id {
		return r, fmt.Errorf("record of %s names %q", id, r.ID)
	}
	return r, nil
}

func (l layout) writeRecord(r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(l.sandbox(r.ID), "record.json"), append(b, '\n'), 0o600)
}

func writeAtomic(name string, data []byte, perm fs.FileMode) error {
	tmp := name + ".tmp-" + newID()
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// newID returns a random sandbox id (16 hex digits).
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validID(id string) bool {
	if len(id) != 16 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// Sandbox is one container. It implements adapter.Sandbox, Capable, Identified, Lister, Statter,
// Remover and Forker (no bulk transfers: a file call on the host costs microseconds). Safe for
// concurrent use.
type Sandbox struct {
	cfg    Config
	rt     *runtimeBin
	lay    layout
	rec    record
	layers []string // isolation layers checked in force
	ws     *os.Root // the workspace
	spec   *specs.Spec
	// lookedAfter: this process made the sandbox, not persistent, and registered it with the
	// janitor (janitor.go).
	lookedAfter bool

	mu      sync.Mutex
	stopped bool

	agent agentproc.Slot[*agentConn]
	// held is the stdio of the container's main agent after a restore (Restore, Checkpoint):
	// no stream of this handle, only held open (see heldInit). Under agent's use: set before the
	// sandbox is handed out, and by Checkpoint with the slot emptied.
	held        *heldInit
	checkpoints sync.Mutex // one Checkpoint at a time
	agentFailed time.Time  // last failed start of an agent exec (it and agentErr under agent's lock)
	agentErr    error

	egress egress.Holder // the proxy of cfg.AllowHosts

	forkSkipped adapter.CopyReport // set by create for a fork, then only read
	diskErr     error              // why the workspace is not capped (set by create, then only read)

	// For receipts (cgstat): the container's cgroup, found on its first command.
	cgOnce sync.Once
	cg     cgstat.Group
}

var (
	_ adapter.Sandbox    = (*Sandbox)(nil)
	_ adapter.Capable    = (*Sandbox)(nil)
	_ adapter.Identified = (*Sandbox)(nil)
	_ adapter.Lister     = (*Sandbox)(nil)
	_ adapter.Statter    = (*Sandbox)(nil)
	_ adapter.Remover    = (*Sandbox)(nil)
	_ adapter.Forker     = (*Sandbox)(nil)
)

// New creates and starts a container for a new sandbox, unpacking the root file system first if
// the state directory has none for the current recipe (which compiles the agent: seconds, once)
// or for Config.Image's digest.
// Errors: errs.InvalidInput (bad Config), errs.SandboxUnavailable (the runtime binary is missing
// or cannot run a container here: the message names it and says why), errs.Internal.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var err error
	if cfg.Image, err = AbsImage(cfg.Image, filepath.Abs); err != nil {
		return nil, errs.Wrap(errs.InvalidInput, "oci create", "", err)
	}
	return create(ctx, cfg, origin{})
}

// origin is what a new sandbox starts from besides its configuration: nothing (New), a workspace
// to copy in before the start (Fork), or a checkpoint (Restore): its workspace and HOME copied
// in, and the container restored from its memory instead of started.
type origin struct {
	workspace, home *os.Root
	ck              *checkpoint
}

// create makes the sandbox from src.
func create(ctx context.Context, cfg Config, src origin) (*Sandbox, error) {
	const op = "oci create"
	rt, err := findRuntime(cfg)
	if err != nil {
		return nil, err
	}
	lay := layoutOf(cfg.stateDir())
	platform, err := rt.usePlatform(ctx, cfg)
	if err != nil {
		return nil, err
	}
	root, err := rootOf(ctx, cfg, lay)
	if err != nil {
		return nil, err
	}
	// The image's tree is leased until the record names it (or the create failed).
	defer root.release()
	if src.ck != nil {
		if err := src.ck.sameRoot(lay, root); err != nil {
			return nil, err
		}
	}
	userns, reach, err := useUserNS(cfg, lay)
	if err != nil {
		return nil, err
	}
	id := newID()
	dir := lay.sandbox(id)
	if err := os.MkdirAll(filepath.Join(dir, "bundle"), 0o711); err != nil {
		return nil, errs.Wrap(errs.Internal, op, "", err)
	}
	if err := os.Mkdir(lay.streams(id), 0o711); err != nil {
		return nil, errs.Wrap(errs.Internal, op, "", err)
	}
	rec := record{
		ID: id, Runtime: rt.name, RuntimePath: rt.path, Owner: owner(), OwnerStart: startTime(os.Getpid()),
		Persist: cfg.Persist, Workspace: cfg.Workspace, KeepWorkspace: cfg.KeepWorkspace,
		UserNS: userns, HostUID: rootfs.UID, AllowNetwork: cfg.AllowNetwork, ImageEnv: root.imageEnv, ImageTree: root.imageTree,
		Platform: platform.Platform, Created: time.Now().UTC(), Config: cfg,
	}
	if userns {
		rec.HostUID = int(cfg.uidBase()) + rootfs.UID
	}
	s := &Sandbox{cfg: cfg, rt: rt, lay: lay, rec: rec}
	fail := func(err error) (*Sandbox, error) {
		s.destroy(context.WithoutCancel(ctx))
		return nil, err
	}
	// The record first: whatever happens next, Prune finds the directory by it.
	if rec.Workspace == "" {
		s.rec.Workspace, s.rec.OwnWorkspace = lay.workspace(id), true
	}
	if err := lay.writeRecord(s.rec); err != nil {
		return fail(errs.Wrap(errs.Internal, op, "", err))
	}
	root.release()
	if !cfg.Persist {
		// Removed by the janitor if this process dies before Stop.
		s.lookedAfter = lookAfter(id, cfg.stateDir())
	}
	if err := s.prepareWorkspace(ctx, src); err != nil {
		if errs.CodeOf(err) == "" {
			err = errs.Wrap(errs.Internal, op, "", fmt.Errorf("workspace: %w", err))
		}
		return fail(err)
	}
	if src.ck != nil {
		if err := s.verifyFiles(src.ck); err != nil {
			return fail(err)
		}
	}
	b := bundle{root: root, workspace: s.rec.Workspace, home: s.rec.Home, persist: cfg.Persist, cfg: cfg, userns: userns, cgroup: cgroupPath(id),
		seccomp: !cfg.NoSeccomp && rt.name != Runsc, streams: lay.streams(id)}
	if cfg.AllowNetwork {
		if _, err := os.Stat("/etc/resolv.conf"); err == nil {
			b.resolvConf = "/etc/resolv.conf"
		}
	}
	spec, err := b.spec()
	if err != nil {
		return fail(errs.Wrap(errs.Internal, op, "", err))
	}
	s.spec = spec
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return fail(errs.Wrap(errs.Internal, op, "", err))
	}
	if err := writeAtomic(filepath.Join(dir, "bundle", "config.json"), data, 0o600); err != nil {
		return fail(errs.Wrap(errs.Internal, op, "", err))
	}
	if data, err = json.Marshal(execProcess(spec)); err == nil {
		err = writeAtomic(filepath.Join(dir, "bundle", execFile), data, 0o600)
	}
	if err != nil {
		return fail(errs.Wrap(errs.Internal, op, "", err))
	}
	if src.ck != nil {
		held, pid, err := rt.restore(ctx, containerID(id), filepath.Join(dir, "bundle"), src.ck.memory(), reach)
		if err != nil {
			return fail(err)
		}
		s.held = held
		s.layers = s.observeLayers(pid)
		return s, nil
	}
	conn, pid, err := rt.start(ctx, containerID(id), filepath.Join(dir, "bundle"), reach)
	if err != nil && strings.Contains(err.Error(), "container process is already dead") && ctx.Err() == nil {
		// runc 1.1 now and then loses the container's process between its create and start on a
		// loaded machine (its init is killed before it runs ours): a fresh try usually works.
		rt.delete(ctx, containerID(id))
		removeCgroups(cgroupPath(id))
		conn, pid, err = rt.start(ctx, containerID(id), filepath.Join(dir, "bundle"), reach)
	}
	if err != nil {
		return fail(err)
	}
	conn.SetDirect(lay.streams(id), agent.DirectSandboxDir)
	s.agent.Set(conn)
	s.layers = s.observeLayers(pid)
	return s, nil
}

// Attach returns the sandbox with the given id, created earlier (possibly by another process)
// under cfg's state directory; its first call starts an agent of its own in the container
// through the runtime's exec. Only cfg's StateDir and ForkMaxFileBytes are used: the sandbox keeps
// the runtime and the configuration it was created with.
// Errors: errs.InvalidInput (a malformed id), errs.NotFound (no such sandbox),
// errs.SandboxUnavailable (its container is not running, or the runtime is missing).
func Attach(ctx context.Context, cfg Config, id string) (*Sandbox, error) {
	const op = "oci attach"
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !validID(id) {
		return nil, errs.New(errs.InvalidInput, op, "", "bad sandbox id %q", id)
	}
	lay := layoutOf(cfg.stateDir())
	rec, err := lay.readRecord(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.New(errs.NotFound, op, "", "no oci sandbox %s in %s", id, lay.dir)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, "", err)
	}
	stateDir, forkMax := cfg.stateDir(), cfg.ForkMaxFileBytes
	cfg = rec.Config
	cfg.StateDir, cfg.ForkMaxFileBytes = stateDir, forkMax
	rt, err := recordRuntime(cfg, rec)
	if err != nil {
		return nil, err
	}
	st, err := rt.state(ctx, containerID(id))
	if err != nil {
		return nil, err
	}
	if st.Status != specs.StateRunning && st.Status != statePaused { // paused: files on the host, no commands until resumed
		return nil, errs.New(errs.SandboxUnavailable, op, "", "sandbox %s is not running (%s)", id, orGone(st.Status))
	}
	data, err := os.ReadFile(filepath.Join(lay.sandbox(id), "bundle", "config.json"))
	if err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, op, "", err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, errs.Wrap(errs.Internal, op, "", err)
	}
	s := &Sandbox{cfg: cfg, rt: rt, lay: lay, rec: rec, spec: &spec}
	if s.ws, err = os.OpenRoot(rec.Workspace); err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("workspace: %w", err))
	}
	s.layers = s.observeLayers(st.Pid)
	return s, nil
}

func orGone(status specs.ContainerState) string {
	if status == "" {
		return "gone"
	}
	return string(status)
}

// ID returns the sandbox id: Attach finds the sandbox again by it; the runtime names its
// container "sandboxer-" + ID.
func (s *Sandbox) ID() string { return s.rec.ID }

// Runtime returns the name of the runtime that runs the sandbox.
func (s *Sandbox) Runtime() string { return s.rt.name }

// Platform returns gVisor's platform of a runsc sandbox (kvm, ptrace, systrap), "" for the other
// runtimes.
func (s *Sandbox) Platform() string { return s.rec.Platform }

// HostWorkspace returns the host directory mounted at /workspace. (Not Workspace: that name is
// adapter.Workspaced's, the workspace as commands see it, /workspace.)
func (s *Sandbox) HostWorkspace() string { return s.rec.Workspace }

// Image returns the image the sandbox was made from ("": the adapter's own root file system).
func (s *Sandbox) Image() string { return s.rec.Config.Image }

// Workspace is the workspace as commands see it, /workspace (adapter.Workspaced).
func (s *Sandbox) Workspace() string { return adapter.DefaultWorkspace }

var _ adapter.NetworkEnforcer = (*Sandbox)(nil)

// EnforcesNetworkOff: the container has an empty network namespace of its own
// (adapter.NetworkEnforcer).
func (s *Sandbox) EnforcesNetworkOff() bool { return !s.cfg.AllowNetwork }

// Capabilities describes the adapter.
func (s *Sandbox) Capabilities() adapter.Capabilities {
	return adapter.Capabilities{
		Adapter:     "oci",
		FSIsolation: adapter.FSImage,
		Network:     adapter.NetContainer,
		Exec:        adapter.ExecContainer,
		Signals:     true,
		Symlinks:    true,
		Workspace:   adapter.DefaultWorkspace,
		Ports:       true,
		Processes:   true,
	}
}

func (s *Sandbox) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func (s *Sandbox) errStopped(op string) error {
	return errs.New(errs.SandboxUnavailable, op, "", "sandbox %s is stopped", s.rec.ID)
}

// Stop ends the sandbox: its agent stream, its container (killed and deleted with everything in
// it), its cgroup and its directory; the workspace is removed when the sandbox made it, unless
// Config.KeepWorkspace. It is idempotent; every other call fails with errs.SandboxUnavailable
// afterwards. A container that is already gone is not an error.
func (s *Sandbox) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	s.egress.Close()
	return s.destroy(ctx)
}

// Detach ends this handle's use of the sandbox and leaves the sandbox running, for another handle
// (another process) to Attach to: the handle's agent stream is closed (that agent kills what it
// still runs for this handle) and every later call of the handle fails with
// errs.SandboxUnavailable. Use it on a persistent sandbox: the container's own agent (PID 1)
// of a sandbox that is not persistent exits when its stream closes, and the sandbox with it.
func (s *Sandbox) Detach() error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	s.agent.Close()
	s.held.Close()
	if s.ws != nil {
		s.ws.Close()
	}
	return nil
}

// destroy releases everything the sandbox holds.
func (s *Sandbox) destroy(ctx context.Context) error {
	s.agent.Close()
	s.held.Close()
	if s.ws != nil {
		s.ws.Close()
	}
	err := removeSandbox(ctx, s.rt, s.lay, s.rec)
	if err == nil && s.lookedAfter {
		released(s.rec.ID, s.cfg.stateDir())
	}
	return err
}

// removeSandbox kills and deletes the container of rec, removes its cgroups, the file system of
// its capped workspace (unmounted, its file removed), its workspace (when the sandbox made it and
// was not asked to keep it) and its directory.
func removeSandbox(ctx context.Context, rt *runtimeBin, lay layout, rec record) error {
	var errList []error
	if err := rt.delete(ctx, containerID(rec.ID)); err != nil {
		errList = append(errList, err)
	}
	if err := removeCgroups(cgroupPath(rec.ID)); err != nil {
		errList = append(errList, err)
	}
	if len(errList) == 0 && rec.Disk != "" {
		if err := diskcap.Release(rec.Disk, rec.diskMount()); err != nil {
			errList = append(errList, err)
		}
	}
	if len(errList) == 0 && rec.OwnWorkspace && !rec.KeepWorkspace {
		if err := os.RemoveAll(rec.Workspace); err != nil {
			errList = append(errList, err)
		}
	}
	if len(errList) == 0 {
		if err := os.RemoveAll(lay.sandbox(rec.ID)); err != nil {
			errList = append(errList, err)
		}
	}
	return errs.Wrap(errs.SandboxUnavailable, "oci stop", "", errors.Join(errList...))
}

func owner() string {
	h, _ := os.Hostname()
	return h + ":" + strconv.Itoa(os.Getpid())
}

// startTime returns a process's start time in clock ticks after boot (field 22 of
// /proc/PID/stat), or 0 when it cannot be read: with the pid it names the process across pid
// reuse.
func startTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}
