// Package docker is the sandbox adapter that runs each sandbox as one container of the Docker
// Engine, driven through its API (github.com/moby/moby/client) with the workspace at /workspace.
//
// Containers are hardened by default (see Config): no network, every capability dropped,
// no-new-privileges, a read-only root file system with a writable /workspace and HOME
// (adapter.DefaultHome, outside the workspace: both on a 10 GiB file system of their own where the
// host allows it, see disk.go; else anonymous volumes) and /tmp (tmpfs), a non-root user, memory, CPU and pids limits, the daemon's default seccomp
// profile, docker-init as PID 1, and labels that mark them as sandboxer's. The Docker socket is
// never mounted.
//
// Calls go to a long-lived agent in the container (package agent) over one attached stream, so a
// call costs a fork in the container instead of a daemon exec; images without the agent get one
// daemon exec per call. Each command runs in its own session with a marker in its environment, so
// that its exit, a timeout or a cancelled context kills the whole tree (natively in the agent, or
// under a small sh wrapper for daemon execs); file calls run short busybox scripts that resolve
// every path through its symlinks inside the container and refuse anything that leaves
// /workspace. The image is built locally by the adapter/docker/image package (`sandboxer image
// build`).
package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/adapter/internal/shellfs"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// Labels put on every container of this adapter.
const (
	LabelManaged = "org.sandboxer.managed" // "true"
	LabelID      = "org.sandboxer.sandbox" // the sandbox id
	LabelOwner   = "org.sandboxer.owner"   // "hostname:pid" of the process that created it
	LabelPersist = "org.sandboxer.persist" // "true": outlives its creator, Prune leaves it
	LabelPool    = "org.sandboxer.pool"    // id of the warm pool that started it, if any
	LabelUser    = "org.sandboxer.user"    // the user commands run as, when the container's is the agent's
	LabelDisk    = "org.sandboxer.disk"    // the size in bytes of the capped file system at /workspace
)

// Defaults of the zero Config.
const (
	DefaultMemoryBytes = 512 << 20
	DefaultNanoCPUs    = 1_000_000_000
	DefaultPids        = 256
)

// namePrefix + id is the container name of a sandbox.
const namePrefix = "sandboxer-"

// Config configures a docker sandbox. The zero value is the hardened default: image
// image.DefaultTag, network mode "none", all capabilities dropped, no-new-privileges, read-only root
// file system, user 1000:1000, 512 MiB of memory without swap, 1 CPU, 256 pids, a /tmp of half the memory limit,
// the daemon's default seccomp profile, docker-init as PID 1, against DOCKER_HOST or the default
// socket.
type Config struct {
	// Host is the Docker Engine endpoint ("unix:///var/run/docker.sock", "tcp://host:2375"); ""
	// uses DOCKER_HOST and the default socket.
	Host string `mapstructure:"host"`
	// Image is the image to run; "" is image.DefaultTag. It must contain busybox (sh, setsid,
	// readlink, stat, find, tar, grep, kill) as the default image does.
	Image string `mapstructure:"image"`
	// AllowNetwork connects the container to Network instead of network mode "none".
	AllowNetwork bool `mapstructure:"allow_network"`
	// Network is the network mode used when AllowNetwork is set; "" is "bridge". "host" is refused.
	Network string `mapstructure:"network"`
	// AllowHosts gives the sandbox an egress proxy (package egress, issue 16): the container
	// keeps network mode "none", and the proxy, listening on the container's 127.0.0.1:egress.Port
	// from the first command on, is the only way out, to these hosts. Every command gets
	// egress.Env. Exclusive with AllowNetwork.
	AllowHosts []string `mapstructure:"allow_hosts"`
	// Egress tunes the egress proxy (resolver, test-only address exceptions); its AllowHosts is
	// ignored.
	Egress egress.Config `mapstructure:"-" json:"-"`
	// User runs the container and its commands; "" is image.User (1000:1000). "0" or "root" is
	// allowed but loses one layer of defence.
	User string `mapstructure:"user"`
	// MemoryBytes limits memory (swap included); 0 is DefaultMemoryBytes, -1 is unlimited.
	MemoryBytes int64 `mapstructure:"memory_bytes"`
	// NanoCPUs limits CPU time in 1e-9 CPUs; 0 is DefaultNanoCPUs (1 CPU), -1 is unlimited.
	NanoCPUs int64 `mapstructure:"nano_cpus"`
	// Pids limits the number of processes; 0 is DefaultPids, -1 is unlimited.
	Pids int64 `mapstructure:"pids"`
	// TmpBytes is the size of the /tmp tmpfs; 0 is half the memory limit (adapter.TmpBytes).
	TmpBytes int64 `mapstructure:"tmp_bytes"`
	// WorkspaceBytes caps /workspace: with a daemon on this host, the workspace is an ext4 file
	// system of that size in a sparse file under StateDir, loop-mounted on the host and bound at
	// /workspace instead of the anonymous volume (see disk.go), so that a command writing past it
	// gets ENOSPC and the host's disk loses at most that much. 0 is DefaultWorkspaceBytes (10
	// GiB), -1 is no cap. It needs root, a loop device, mkfs.ext4 and a numeric User; without
	// them, or with a remote daemon, the sandbox keeps the volume, without a cap, and its results
	// leave the layer "disk:SIZE" out (WorkspaceCap says why).
	WorkspaceBytes int64 `mapstructure:"workspace_bytes"`
	// StateDir holds the workspaces' file systems (docker/disks/ID); "" is
	// $XDG_STATE_HOME/sandboxer or ~/.local/state/sandboxer, as the CLI's and the oci adapter's.
	StateDir string `mapstructure:"state_dir"`
	// WritableRootfs makes the root file system writable (read-only by default).
	WritableRootfs bool `mapstructure:"writable_rootfs"`
	// CapAdd gives capabilities back (all are dropped by default), e.g. "NET_BIND_SERVICE".
	CapAdd []string `mapstructure:"cap_add"`
	// AllowPrivilegeEscalation drops the no-new-privileges flag.
	AllowPrivilegeEscalation bool `mapstructure:"allow_privilege_escalation"`
	// Seccomp is a seccomp profile (JSON text) or "unconfined"; "" keeps the daemon's default.
	Seccomp string `mapstructure:"seccomp"`
	// NoInit runs the container without docker-init as PID 1 (zombies are then not reaped).
	NoInit bool `mapstructure:"no_init"`
	// NoAgent runs every call as a daemon exec of its own, even when the image has the agent
	// (see package agent). Images without the agent always do.
	NoAgent bool `mapstructure:"no_agent"`
	// Persist marks the container as outliving the process that created it (CLI `sandbox
	// create`): Prune leaves it unless asked for all. A sandbox that is not persistent and runs
	// the agent is removed by the daemon as soon as its creator's stream ends, even when the
	// creator is killed; one without the agent is left for Prune.
	Persist bool `mapstructure:"persist"`
	// Env is added to the minimal environment of every command.
	Env []string `mapstructure:"env"`
	// Labels are added to the container's labels (the org.sandboxer.* ones cannot be overridden).
	Labels map[string]string `mapstructure:"labels"`
}

// Validate reports a configuration that cannot be used, as errs.InvalidInput.
func (c Config) Validate() error {
	bad := func(f string, a ...any) error { return errs.New(errs.InvalidInput, "docker config", "", f, a...) }
	for name, v := range map[string]int64{"MemoryBytes": c.MemoryBytes, "NanoCPUs": c.NanoCPUs, "Pids": c.Pids, "WorkspaceBytes": c.WorkspaceBytes} {
		if v < -1 {
			return bad("%s must be -1 (unlimited), 0 (default) or positive, not %d", name, v)
		}
	}
	if c.MemoryBytes > 0 && c.MemoryBytes < 6<<20 {
		return bad("MemoryBytes must be at least 6 MiB")
	}
	if c.TmpBytes < 0 {
		return bad("TmpBytes must not be negative")
	}
	if c.WorkspaceBytes > 0 && c.WorkspaceBytes < diskcap.MinBytes {
		return bad("WorkspaceBytes must be at least %d", diskcap.MinBytes)
	}
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		return bad("StateDir %q must be an absolute path", c.StateDir)
	}
	if c.AllowNetwork && c.Network == "host" {
		return bad("Network \"host\" would share the host's network stack; use a bridge network")
	}
	if !c.AllowNetwork && c.Network != "" {
		return bad("Network is set but AllowNetwork is false")
	}
	if len(c.AllowHosts) > 0 {
		if c.AllowNetwork {
			return bad("AllowHosts and AllowNetwork exclude each other")
		}
		if err := egress.ValidateHosts(c.AllowHosts); err != nil {
			return err
		}
	}
	for _, e := range c.Env {
		if k, _, ok := cutEnv(e); !ok || k == "" {
			return bad("Env entry %q is not KEY=VALUE", e)
		}
	}
	return nil
}

func cutEnv(e string) (k, v string, ok bool) {
	for i := 0; i < len(e); i++ {
		if e[i] == '=' {
			return e[:i], e[i+1:], true
		}
	}
	return "", "", false
}

func (c Config) image() string {
	if c.Image == "" {
		return image.DefaultTag
	}
	return c.Image
}

func (c Config) user() string {
	if c.User == "" {
		return image.User
	}
	return c.User
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

// Sandbox is one container. It implements adapter.Sandbox, Capable, Identified, Lister, Statter,
// Remover, BulkReader, BulkWriter and Forker. Safe for concurrent use.
type Sandbox struct {
	cfg         Config
	eng         engine
	ownEngine   bool
	id          string
	containerID string

	mu      sync.Mutex
	stopped bool

	// agentVersion is the agent protocol version of the container ("" when it has none).
	agentVersion string
	agentBin     string   // where the agent is in the container ("" is agent.Path)
	imageEnv     []string // the environment the image sets (see commandEnv)
	agent        agentproc.Slot[*agentConn]
	agentFailed  time.Time // last failed start of an agent exec (under agent's lock)
	streams      string    // host directory of the agent's direct streams ("": none)
	lookedAfter  bool      // the janitor removes streams if this process dies before Stop

	// workspaceHome: the container has nothing at adapter.DefaultHome (made before commands had
	// a HOME of their own): its commands' HOME stays the workspace.
	workspaceHome bool

	disk            disk  // the capped workspace, or none
	diskBytes       int64 // its size
	diskLookedAfter bool  // the janitor releases it if this process dies before Stop
	diskErr         error // why the workspace is not capped (set by create)
	diskOnce        sync.Once
	diskLayer       string // diskcap.Layer(diskBytes) once checked in force, else ""

	egress egress.Holder // the proxy of cfg.AllowHosts

	host hostView // where receipts read the container's statistics (receipt.go)
}

var (
	_ adapter.Sandbox    = (*Sandbox)(nil)
	_ adapter.Capable    = (*Sandbox)(nil)
	_ adapter.Identified = (*Sandbox)(nil)
	_ adapter.Lister     = (*Sandbox)(nil)
	_ adapter.Statter    = (*Sandbox)(nil)
	_ adapter.Remover    = (*Sandbox)(nil)
	_ adapter.BulkReader = (*Sandbox)(nil)
	_ adapter.BulkWriter = (*Sandbox)(nil)
	_ adapter.Forker     = (*Sandbox)(nil)
)

// New creates and starts a container for a new sandbox. Errors: errs.InvalidInput (bad Config),
// errs.SandboxUnavailable (daemon unreachable, or the image is missing: the message says to run
// `sandboxer image build`), errs.Internal.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	eng, err := newEngine(ctx, cfg.Host)
	if err != nil {
		return nil, err
	}
	s, err := create(ctx, eng, cfg, "")
	if err != nil {
		eng.Close()
		return nil, err
	}
	s.ownEngine = true
	return s, nil
}

// newID returns a random sandbox id (16 hex digits).
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func owner() string {
	h, _ := os.Hostname()
	return h + ":" + strconv.Itoa(os.Getpid())
}

// create makes and starts a container on eng; the sandbox shares eng (the caller closes it).
func create(ctx context.Context, eng engine, cfg Config, pool string) (*Sandbox, error) {
	id := newID()
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[LabelManaged] = "true"
	labels[LabelID] = id
	labels[LabelOwner] = owner()
	labels[LabelPersist] = strconv.FormatBool(cfg.Persist)
	if pool != "" {
		labels[LabelPool] = pool
	}
	network := container.NetworkMode("none")
	if cfg.AllowNetwork {
		network = "bridge"
		if cfg.Network != "" {
			network = container.NetworkMode(cfg.Network)
		}
	}
	sec := []string{}
	if !cfg.AllowPrivilegeEscalation {
		sec = append(sec, "no-new-privileges:true")
	}
	if cfg.Seccomp != "" {
		sec = append(sec, "seccomp="+cfg.Seccomp)
	}
	mem := orDefault(cfg.MemoryBytes, DefaultMemoryBytes)
	pids := orDefault(cfg.Pids, DefaultPids)
	tmpOpt := "" // no size of its own when memory is not limited: the kernel's default
	if tmp := adapter.TmpBytes(cfg.TmpBytes, mem); tmp > 0 {
		tmpOpt = fmt.Sprintf(",size=%d", tmp)
	}
	init := !cfg.NoInit
	hc := &container.HostConfig{
		NetworkMode:    network,
		CapDrop:        []string{"ALL"},
		CapAdd:         cfg.CapAdd,
		SecurityOpt:    sec,
		ReadonlyRootfs: !cfg.WritableRootfs,
		// exec: docker's tmpfs is noexec unless told, and toolchains run what they build there
		// (go test's test binaries); /workspace runs programs anyway.
		Tmpfs: map[string]string{"/tmp": "rw,exec,nosuid,nodev,mode=1777" + tmpOpt},
		Init:  &init,
		Resources: container.Resources{
			Memory:    mem,
			NanoCPUs:  orDefault(cfg.NanoCPUs, DefaultNanoCPUs),
			PidsLimit: &pids,
		},
	}
	if mem > 0 {
		hc.Resources.MemorySwap = mem // no swap: a memory hog is killed, not slowed down
	}
	img, err := eng.ImageInspect(ctx, cfg.image())
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, missingImage(cfg.image())
		}
		return nil, classify("docker create", err)
	}
	var imageEnv []string
	if img.Config != nil {
		imageEnv = img.Config.Env
	}
	useAgent := !cfg.NoAgent && img.Config != nil && img.Config.Labels[image.LabelAgent] == agent.Version
	// An image without the agent (any image: Debian, python, a user's own) gets the host's,
	// mounted read-only, where the daemon shares this host's file system.
	agentBin := ""
	if !cfg.NoAgent && !useAgent {
		if host, err := bringAgent(eng, cfg); err == nil {
			useAgent, agentBin = true, agent.BroughtPath
			hc.Binds = append(hc.Binds, host+":"+agent.BroughtPath+":ro")
			labels[LabelAgentPath] = agent.BroughtPath
		}
	}
	cc := &container.Config{
		Image:      cfg.image(),
		User:       cfg.user(),
		Labels:     labels,
		Entrypoint: []string{}, // the image's would run first
		Cmd:        []string{"/bin/sleep", "infinity"},
		WorkingDir: adapter.DefaultWorkspace,
		Env:        commandEnv(imageEnv),
		// Without a capped disk, the workspace and HOME are anonymous volumes, removed with the
		// container.
		Volumes: map[string]struct{}{adapter.DefaultWorkspace: {}, adapter.DefaultHome: {}},
	}
	// The janitor releases the disk of a sandbox that goes with its owner (the agent's); one
	// without the agent outlives its owner until Prune, which releases it then.
	d, diskErr := newDisk(ctx, eng, cfg, id, useAgent && !cfg.Persist)
	d.bind(cc, hc)
	if d.dir != "" {
		labels[LabelDisk] = strconv.FormatInt(cfg.workspaceBytes(), 10)
	}
	streams := ""
	if useAgent {
		if streams = newStreamsDir(eng, id, !cfg.Persist); streams != "" {
			hc.Binds = append(hc.Binds, streams+":"+agent.DirectSandboxDir+":ro")
		}
		// The agent is the main process and serves the stream of the attach below; stdin closes
		// when that stream does (StdinOnce), and the agent then kills what it runs. A persistent
		// sandbox's agent then stays idle; any other's exits, and the daemon removes the
		// container: a sandbox whose owner died, even by SIGKILL, goes with it. Nothing of the
		// stream goes to the daemon's log.
		labels[LabelAgent] = agent.Version
		var flags []string
		if cfg.Persist {
			flags = append(flags, "-idle")
		}
		cc.Cmd = agent.ArgvAt(cmp.Or(agentBin, agent.Path), cfg.user(), flags...)
		if agent.SeparateUser(cfg.user()) {
			// The agent runs as the container's root with the capabilities to start commands as
			// the sandbox user, who has none and cannot touch the agent (agent.RunAs). Daemon
			// execs name the sandbox user.
			cc.User = "0"
			labels[LabelUser] = cfg.user()
			hc.CapAdd = append(append([]string{}, agent.Caps...), hc.CapAdd...)
		}
		if !cfg.Persist {
			hc.AutoRemove = true
		}
		cc.OpenStdin, cc.StdinOnce = true, true
		cc.AttachStdin, cc.AttachStdout, cc.AttachStderr = true, true, true
		hc.LogConfig = container.LogConfig{Type: "none"}
	}
	// The create itself is not cancelled: a request cut off midway may still create the container,
	// unknown to us and never removed. A cancelled ctx removes what was created instead.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	res, err := eng.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cc, HostConfig: hc, Name: namePrefix + id})
	cancel()
	if err == nil && ctx.Err() != nil {
		eng.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		removeStreamsDir(streams)
		releaseDisk(d, useAgent && !cfg.Persist)
		return nil, ctx.Err()
	}
	if err != nil {
		removeStreamsDir(streams)
		releaseDisk(d, useAgent && !cfg.Persist)
		if cerrdefs.IsNotFound(err) {
			return nil, missingImage(cfg.image())
		}
		return nil, classify("docker create", err)
	}
	s := &Sandbox{cfg: cfg, eng: eng, id: id, containerID: res.ID, agentBin: agentBin, imageEnv: imageEnv,
		streams: streams, lookedAfter: streams != "" && !cfg.Persist,
		disk: d, diskBytes: cfg.workspaceBytes(), diskLookedAfter: d.dir != "" && useAgent && !cfg.Persist, diskErr: diskErr}
	if useAgent {
		s.agentVersion = agent.Version
		att, err := eng.ContainerAttach(ctx, res.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		if err != nil {
			s.remove(context.WithoutCancel(ctx))
			return nil, classify("docker attach", err)
		}
		s.agent.Set(s.newAgentConn(att.HijackedResponse))
	}
	if _, err := eng.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		s.agent.Close()
		s.remove(context.WithoutCancel(ctx))
		return nil, classify("docker start", err)
	}
	return s, nil
}

func missingImage(name string) error {
	return errs.New(errs.SandboxUnavailable, "docker create", "",
		"image %s not found: build it with `sandboxer image build` (Go: image.Build) first", name)
}

// Attach returns the sandbox with the given id, created earlier (possibly by another process).
// Errors: errs.NotFound when no sandboxer container has that id, errs.SandboxUnavailable when the
// daemon is unreachable or the container is not running.
func Attach(ctx context.Context, cfg Config, id string) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	eng, err := newEngine(ctx, cfg.Host)
	if err != nil {
		return nil, err
	}
	s, err := attach(ctx, eng, cfg, id)
	if err != nil {
		eng.Close()
		return nil, err
	}
	s.ownEngine = true
	return s, nil
}

func attach(ctx context.Context, eng engine, cfg Config, id string) (*Sandbox, error) {
	if id == "" || len(id) > 64 {
		return nil, errs.New(errs.InvalidInput, "docker attach", "", "bad sandbox id %q", id)
	}
	ins, err := eng.ContainerInspect(ctx, namePrefix+id, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil, errs.New(errs.NotFound, "docker attach", "", "no sandbox %s", id)
	}
	if err != nil {
		return nil, classify("docker attach", err)
	}
	c := ins.Container
	if c.Config == nil || c.Config.Labels[LabelID] != id || c.Config.Labels[LabelManaged] != "true" {
		return nil, errs.New(errs.NotFound, "docker attach", "", "container %s is not a sandboxer sandbox", namePrefix+id)
	}
	if c.State == nil || !c.State.Running {
		return nil, errs.New(errs.SandboxUnavailable, "docker attach", "", "sandbox %s is not running", id)
	}
	cfg.Image = c.Config.Image
	cfg.User = c.Config.User
	if u := c.Config.Labels[LabelUser]; u != "" {
		cfg.User = u // the container's user is the agent's
	}
	if c.HostConfig != nil { // as made, whatever this handle's caller asks for
		cfg.AllowNetwork = c.HostConfig.NetworkMode != "none"
	}
	// The container's own stream belongs to its creator: this handle starts an agent exec of its
	// own at its first call.
	s := &Sandbox{cfg: cfg, eng: eng, id: id, containerID: c.ID, agentVersion: c.Config.Labels[LabelAgent],
		agentBin: c.Config.Labels[LabelAgentPath], imageEnv: c.Config.Env, streams: streamsDirOf(ins), disk: diskOf(ins)}
	s.workspaceHome = !slices.ContainsFunc(c.Mounts, func(m container.MountPoint) bool { return m.Destination == adapter.DefaultHome })
	s.diskBytes, _ = strconv.ParseInt(c.Config.Labels[LabelDisk], 10, 64)
	if s.disk.dir == "" || s.diskBytes <= 0 {
		s.disk, s.diskErr = disk{}, errors.New("the sandbox was made without a cap")
	}
	return s, nil
}

// ID returns the sandbox id: Attach finds the sandbox again by it; the container is named
// "sandboxer-" + ID and labelled org.sandboxer.sandbox=ID.
func (s *Sandbox) ID() string { return s.id }

// ContainerID returns the Docker container id.
func (s *Sandbox) ContainerID() string { return s.containerID }

var _ adapter.NetworkEnforcer = (*Sandbox)(nil)

// EnforcesNetworkOff: the container's network mode is "none" (adapter.NetworkEnforcer).
func (s *Sandbox) EnforcesNetworkOff() bool { return !s.cfg.AllowNetwork }

// Capabilities describes the adapter.
func (s *Sandbox) Capabilities() adapter.Capabilities {
	return adapter.Capabilities{
		Adapter:     "docker",
		FSIsolation: adapter.FSImage,
		Network:     adapter.NetContainer,
		Exec:        adapter.ExecContainer,
		Signals:     true,
		Symlinks:    true,
		Workspace:   adapter.DefaultWorkspace,
		Ports:       s.hasAgent(),
		Processes:   s.hasAgent(),
	}
}

func (s *Sandbox) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func (s *Sandbox) errStopped(op string) error {
	return errs.New(errs.SandboxUnavailable, op, "", "sandbox %s is stopped", s.id)
}

// Stop removes the container and its workspace (the volume, or the capped file system). It is idempotent; every other call fails
// with errs.SandboxUnavailable afterwards. A container that is already gone is not an error.
func (s *Sandbox) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	s.egress.Close()
	s.agent.Close()
	err := s.remove(ctx)
	if s.ownEngine {
		s.eng.Close()
	}
	return err
}

// Detach ends this handle's use of the sandbox and leaves the container running, for another
// handle (another process) to Attach to: the handle's agent stream is closed (what it ran in the
// foreground is killed; background processes stay with the container's agent) and every later
// call of the handle fails with errs.SandboxUnavailable. Use it on a persistent sandbox: the agent
// of one that is not persistent exits when its creator's stream closes, and the sandbox with it.
func (s *Sandbox) Detach() error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	s.agent.Close()
	if s.ownEngine {
		s.eng.Close()
	}
	return nil
}

func (s *Sandbox) remove(ctx context.Context) error {
	_, err := s.eng.ContainerRemove(ctx, s.containerID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
		removeStreamsDir(s.streams)
		if s.lookedAfter {
			janitor.Release(s.streams)
		}
	}
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return releaseDisk(s.disk, s.diskLookedAfter)
	case cerrdefs.IsConflict(err):
		// Removal already in progress: the daemon's own (AutoRemove, when the agent exited).
		// Stop returns once the container is gone, as it does after its own removal.
		for i := 0; i < 100 && ctx.Err() == nil; i++ {
			if _, err := s.eng.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{}); cerrdefs.IsNotFound(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return releaseDisk(s.disk, s.diskLookedAfter)
	}
	return classify("docker stop", err)
}

// Fork starts a new sandbox with the same configuration whose workspace is a copy of this one's at
// this moment (one tar stream from the source into the new container). The source is not changed.
func (s *Sandbox) Fork(ctx context.Context) (adapter.Sandbox, error) {
	if s.isStopped() {
		return nil, s.errStopped("fork")
	}
	eng, err := newEngine(ctx, s.cfg.Host)
	if err != nil {
		return nil, err
	}
	f, err := create(ctx, eng, s.cfg, "")
	if err != nil {
		eng.Close()
		return nil, err
	}
	f.ownEngine = true
	if err := shellfs.CopyWorkspace(ctx, s.files(), f.files()); err != nil {
		f.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return f, nil
}
