package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/errs"
)

// baseEnv is the minimal environment of the container and of every command.
var baseEnv = []string{
	"PATH=" + rootfs.DefPath,
	"HOME=" + adapter.DefaultHome,
	"LANG=C.UTF-8",
	"TZ=UTC",
}

// maskedPaths and readonlyPaths are the /proc and /sys entries Docker hides or freezes by default.
var (
	maskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// specVersion is the version config.json declares: the newest that runc 1.1, crun 1.8 and the
// runsc of Debian 12 all accept (crun refuses a newer one); nothing newer is used.
const specVersion = "1.0.2"

// bundle is what a sandbox's config.json is made from.
type bundle struct {
	root       sandboxRoot // the shared, read-only tree (and the agent brought into an image)
	workspace  string      // host directory mounted at /workspace
	home       string      // host directory mounted at HOME (adapter.DefaultHome)
	persist    bool        // the agent stays when its stream ends
	cfg        Config
	userns     bool   // a user namespace maps container uid 0.. to cfg.uidBase()..
	cgroup     string // cgroupsPath
	seccomp    bool   // apply the default seccomp profile
	resolvConf string // the host's resolv.conf, mounted when the network is allowed
	streams    string // host directory of the agent's direct streams, read-only inside ("": none)
}

// spec builds the container's configuration: the agent as PID 1 (see agent.ServeInit) serving its
// stdio, as the sandbox user, without capabilities, with no-new-privileges and the default
// seccomp profile of moby/profiles, a read-only root, a private /tmp, masked and read-only /proc
// paths, cgroup limits, and new pid, ipc, uts, mount and cgroup namespaces, a new (empty) network
// namespace unless the network is allowed, and a user namespace when b.userns is set.
func (b bundle) spec() (*specs.Spec, error) {
	c := b.cfg
	flags := []string{"-init"}
	if b.persist {
		flags = append(flags, "-idle")
	}
	// The agent runs as the container's root with the capabilities to start the commands as the
	// sandbox user, who has none and cannot touch the agent (agent.RunAs).
	args := agent.Argv(sandboxUser, flags...)
	if b.root.agentFile != "" {
		args = agent.ArgvAt(agent.BroughtPath, sandboxUser, flags...)
	}
	agentCaps := make([]string, len(agent.Caps))
	for i, c := range agent.Caps {
		agentCaps[i] = "CAP_" + c
	}
	s := &specs.Spec{
		Version:  specVersion,
		Root:     &specs.Root{Path: b.root.dir, Readonly: !c.WritableRootfs},
		Hostname: "sandbox",
		Process: &specs.Process{
			Args: args,
			Env:  append(adapter.ImageEnv(baseEnv, b.root.imageEnv), c.Env...),
			Cwd:  adapter.DefaultWorkspace,
			User: specs.User{UID: 0, GID: 0},
			Capabilities: &specs.LinuxCapabilities{
				Bounding: agentCaps, Effective: slices.Clone(agentCaps), Permitted: slices.Clone(agentCaps),
				Inheritable: []string{}, Ambient: []string{},
			},
			NoNewPrivileges: !c.AllowPrivilegeEscalation,
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: append([]string{"nosuid", "nodev", "mode=1777"}, c.tmpOptions()...)},
			{Destination: adapter.DefaultWorkspace, Type: "bind", Source: b.workspace, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
			{Destination: adapter.DefaultHome, Type: "bind", Source: b.home, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
				{Type: specs.MountNamespace}, {Type: specs.CgroupNamespace},
			},
			CgroupsPath:   b.cgroup,
			MaskedPaths:   maskedPaths,
			ReadonlyPaths: readonlyPaths,
			Resources:     b.resources(),
		},
	}
	if b.root.agentFile != "" {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: agent.BroughtPath, Type: "bind", Source: b.root.agentFile, Options: []string{"bind", "ro", "nosuid", "nodev"}})
	}
	if b.streams != "" {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: agent.DirectSandboxDir, Type: "bind", Source: b.streams, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}})
	}
	if b.resolvConf != "" {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: "/etc/resolv.conf", Type: "bind", Source: b.resolvConf, Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
	}
	if len(c.Mounts) > 0 {
		// A tmpfs holds the mount points: the root file system is read-only and shared.
		s.Mounts = append(s.Mounts, specs.Mount{Destination: "/mnt", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=755", "size=64k"}})
		for _, m := range c.Mounts {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: m.Target, Type: "bind", Source: m.Source, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
		}
	}
	if !c.AllowNetwork {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	if b.userns {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
		m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: c.uidBase(), Size: idRange}}
		s.Linux.UIDMappings, s.Linux.GIDMappings = m, m
	}
	if len(c.CapAdd) > 0 {
		caps := s.Process.Capabilities
		for _, cp := range c.CapAdd {
			caps.Bounding = append(caps.Bounding, cp)
			caps.Effective = append(caps.Effective, cp)
			caps.Permitted = append(caps.Permitted, cp)
		}
	}
	if b.seccomp {
		// The profile depends on the capabilities: set them first.
		sc, err := defaultSeccomp(s)
		if err != nil {
			return nil, fmt.Errorf("seccomp profile: %w", err)
		}
		s.Linux.Seccomp = sc
	}
	return s, nil
}

func (b bundle) resources() *specs.LinuxResources {
	c := b.cfg
	r := &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
	if mem := orDefault(c.MemoryBytes, DefaultMemoryBytes); mem > 0 {
		r.Memory = &specs.LinuxMemory{Limit: &mem, Swap: &mem} // no swap: a memory hog is killed
	}
	if cpus := orDefault(c.MilliCPUs, DefaultMilliCPUs); cpus > 0 {
		period := uint64(100000)
		quota := cpus * int64(period) / 1000
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if pids := c.hostPids(); pids > 0 {
		r.Pids = &specs.LinuxPids{Limit: &pids}
	}
	return r
}

// sandboxUser is the user the commands run as: the image's (see rootfs).
var sandboxUser = fmt.Sprintf("%d:%d", rootfs.UID, rootfs.GID)

// execProcess is the process of a `runtime exec` of the agent (another handle on a running
// sandbox): the same user, capabilities and environment as the container's own process.
func execProcess(s *specs.Spec) *specs.Process {
	p := *s.Process
	p.Args = agent.ArgvAt(s.Process.Args[0], sandboxUser) // the same agent: the tree's or the host's
	return &p
}

// Bundle writes into dir (created if needed) the bundle a sandbox of cfg would run, with args as
// its process instead of the agent, over an empty workspace dir/workspace (and HOME dir/home), and returns the
// command line that runs it in the foreground with cfg's runtime as one container (which the
// runtime deletes when it exits, so the command can run again), and a clean-up that removes
// what may remain of it (its container and cgroups): the bare runtime that the benchmarks
// measure the adapter against. The runtime's state goes to cfg's state directory, as the
// adapter's does. A state directory the user namespace cannot reach (see Config.UserNamespace)
// is refused: the bare runtime has no way around it.
func Bundle(cfg Config, dir string, args []string) (argv []string, cleanup func() error, err error) {
	const op = "oci bundle"
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if len(args) == 0 {
		return nil, nil, errs.New(errs.InvalidInput, op, "", "empty command")
	}
	rt, err := findRuntime(cfg)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Image, err = AbsImage(cfg.Image, filepath.Abs); err != nil {
		return nil, nil, errs.Wrap(errs.InvalidInput, op, "", err)
	}
	lay := layoutOf(cfg.stateDir())
	if _, err := rt.usePlatform(context.Background(), cfg); err != nil {
		return nil, nil, err
	}
	root, err := rootOf(context.Background(), cfg, lay)
	if err != nil {
		return nil, nil, err
	}
	// The image's tree stays leased until cleanup: no record names it.
	ok := false
	defer func() {
		if !ok {
			root.release()
		}
	}()
	userns, reach, err := useUserNS(cfg, lay)
	if err != nil {
		return nil, nil, err
	}
	if reach.cover != "" {
		return nil, nil, errs.New(errs.SandboxUnavailable, op, "", "%s cannot be searched from the user namespace", reach.cover)
	}
	if len(rt.detach) > 0 {
		return nil, nil, errs.New(errs.SandboxUnavailable, op, "", "%s runs only in the adapter's private mount namespace on this hybrid cgroup host", rt.name)
	}
	ws, home := filepath.Join(dir, "workspace"), filepath.Join(dir, "home")
	uid := rootfs.UID
	if userns {
		uid += int(cfg.uidBase())
	}
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, errs.Wrap(errs.Internal, op, "", err)
		}
		if err := os.Lchown(d, uid, uid); err != nil {
			return nil, nil, errs.Wrap(errs.Internal, op, "", err)
		}
	}
	id := newID()
	b := bundle{root: root, workspace: ws, home: home, cfg: cfg, userns: userns, cgroup: cgroupPath(id),
		seccomp: !cfg.NoSeccomp && rt.name != Runsc}
	s, err := b.spec()
	if err != nil {
		return nil, nil, errs.Wrap(errs.Internal, op, "", err)
	}
	// args run as a command of the sandbox would: as the sandbox user, without capabilities.
	s.Process.Args = args
	s.Process.User = specs.User{UID: rootfs.UID, GID: rootfs.GID}
	none := []string{}
	s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: none, Effective: none, Permitted: none, Inheritable: none, Ambient: none}
	data, err := json.MarshalIndent(s, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600)
	}
	if err != nil {
		return nil, nil, errs.Wrap(errs.Internal, op, "", err)
	}
	argv = append(append([]string{rt.path, "--root", rt.root}, rt.flags...), "run", "--bundle", dir, containerID(id))
	cleanup = func() error {
		defer root.release()
		return errors.Join(rt.delete(context.Background(), containerID(id)), removeCgroups(cgroupPath(id)))
	}
	ok = true
	return argv, cleanup, nil
}
