package oci

import (
	"fmt"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
)

// baseEnv is the minimal environment of the container and of every command.
var baseEnv = []string{
	"PATH=" + rootfs.DefPath,
	"HOME=" + adapter.DefaultWorkspace,
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
	rootfs     string // the shared, read-only tree
	workspace  string // host directory mounted at /workspace
	persist    bool   // the agent stays when its stream ends
	cfg        Config
	userns     bool   // a user namespace maps container uid 0.. to cfg.uidBase()..
	cgroup     string // cgroupsPath
	seccomp    bool   // apply the default seccomp profile
	resolvConf string // the host's resolv.conf, mounted when the network is allowed
}

// spec builds the container's configuration: the agent as PID 1 (see agent.Init) serving its
// stdio, as the sandbox user, without capabilities, with no-new-privileges and the default
// seccomp profile of moby/profiles, a read-only root, a private /tmp, masked and read-only /proc
// paths, cgroup limits, and new pid, ipc, uts, mount and cgroup namespaces, a new (empty) network
// namespace unless the network is allowed, and a user namespace when b.userns is set.
func (b bundle) spec() (*specs.Spec, error) {
	c := b.cfg
	args := []string{agent.Path, "-init"}
	if b.persist {
		args = append(args, "-idle")
	}
	s := &specs.Spec{
		Version:  specVersion,
		Root:     &specs.Root{Path: b.rootfs, Readonly: !c.WritableRootfs},
		Hostname: "sandbox",
		Process: &specs.Process{
			Args: args,
			Env:  append(append([]string{}, baseEnv...), c.Env...),
			Cwd:  adapter.DefaultWorkspace,
			User: specs.User{UID: rootfs.UID, GID: rootfs.GID},
			Capabilities: &specs.LinuxCapabilities{
				Bounding: []string{}, Effective: []string{}, Permitted: []string{},
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
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", fmt.Sprintf("size=%d", c.tmpBytes())}},
			{Destination: adapter.DefaultWorkspace, Type: "bind", Source: b.workspace, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
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
	if b.resolvConf != "" {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: "/etc/resolv.conf", Type: "bind", Source: b.resolvConf, Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
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
		sc, err := seccomp.GetDefaultProfile(s)
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
	if pids := orDefault(c.Pids, DefaultPids); pids > 0 {
		r.Pids = &specs.LinuxPids{Limit: &pids}
	}
	return r
}

// execProcess is the process of a `runtime exec` of the agent (another handle on a running
// sandbox): the same user, capabilities and environment as the container's own process.
func execProcess(s *specs.Spec) *specs.Process {
	p := *s.Process
	p.Args = []string{agent.Path}
	return &p
}
