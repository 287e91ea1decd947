package oci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/cgstat"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/errs"
)

// cgroupPath is the cgroupsPath of sandbox id: absolute, so that every process (the creator, a
// later prune) finds it at the same place of each hierarchy.
func cgroupPath(id string) string { return "/sandboxer-" + id }

// cgroupMount is one mounted cgroup hierarchy; cgroupMounts lists them (shared with the
// receipts' statistics).
type cgroupMount = cgstat.Mount

var cgroupMounts = cgstat.Mounts

// removeCgroups removes the cgroup directories at path in every hierarchy, deepest first: what
// a runtime leaves behind when a start fails, or when its delete returns before the last process
// of the container is gone (runsc). Processes still in them are killed; removal is retried for a
// few seconds while they die. Missing directories are fine.
func removeCgroups(path string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errList []error
	for _, m := range mounts {
		dir := filepath.Join(m.Dir, path)
		var dirs []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := rmdirCgroup(dirs[i]); err != nil {
				errList = append(errList, fmt.Errorf("cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errList...)
}

func rmdirCgroup(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		if b, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, perr := strconv.Atoi(f); perr == nil && pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leftoverCgroups lists the cgroup directories of path that exist in any hierarchy.
func leftoverCgroups(path string) []string {
	mounts, _ := cgroupMounts()
	var out []string
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m.Dir, path)); err == nil {
			out = append(out, filepath.Join(m.Dir, path))
		}
	}
	return out
}

// procCgroups maps each controller (v1) or "" (v2) to the cgroup of process pid.
func procCgroups(pid int) map[string]string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// readLimit reads the first word of a cgroup file.
func readLimit(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// cgroupLayers checks, from the host, which limits are in force on process pid: the cgroup it is
// in has the configured memory (with swap), pids and CPU limits, in a v1 hierarchy or the v2
// one, whichever holds the controller.
func cgroupLayers(pid int, cfg Config) []string {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil
	}
	cg := procCgroups(pid)
	// file returns the path of a controller's file for the process, v1 or v2.
	file := func(ctrl, v1, v2 string) string {
		for _, m := range mounts {
			if !m.V2 {
				for _, c := range m.Controllers {
					if c == ctrl {
						if p, ok := cg[ctrl]; ok {
							return filepath.Join(m.Dir, p, v1)
						}
					}
				}
			}
		}
		for _, m := range mounts {
			if m.V2 {
				if p, ok := cg[""]; ok {
					f := filepath.Join(m.Dir, p, v2)
					if _, err := os.Stat(f); err == nil {
						return f
					}
				}
			}
		}
		return ""
	}
	var layers []string
	if mem := orDefault(cfg.MemoryBytes, DefaultMemoryBytes); mem > 0 {
		v := readLimit(file("memory", "memory.limit_in_bytes", "memory.max"))
		if v == strconv.FormatInt(mem, 10) {
			layers = append(layers, "cgroup:memory")
		}
	}
	if pids := cfg.hostPids(); pids > 0 {
		if readLimit(file("pids", "pids.max", "pids.max")) == strconv.FormatInt(pids, 10) {
			layers = append(layers, "cgroup:pids")
		}
	}
	if cpus := orDefault(cfg.MilliCPUs, DefaultMilliCPUs); cpus > 0 {
		want := strconv.FormatInt(cpus*100, 10) // quota in µs per 100 ms period
		if f := file("cpu", "cpu.cfs_quota_us", "cpu.max"); f != "" && readLimit(f) == want {
			layers = append(layers, "cgroup:cpu")
		}
	}
	return layers
}

// procStatus returns the fields of /proc/PID/status.
func procStatus(pid int) map[string]string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// netIsolated reports whether process pid is in a network namespace other than this process's
// with no interface but loopback.
func netIsolated(pid int) bool {
	theirs, err1 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	ours, err2 := os.Readlink("/proc/self/ns/net")
	if err1 != nil || err2 != nil || theirs == ours {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/dev")
	if err != nil {
		return false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines[min(2, len(lines)):] {
		name, _, _ := strings.Cut(strings.TrimSpace(l), ":")
		if name != "lo" {
			return false
		}
	}
	return true
}

// rootReadOnly reports whether process pid's root is mounted read-only.
func rootReadOnly(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return false
	}
	ro := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[4] == "/" {
			ro = strings.Contains(","+f[5]+",", ",ro,") // the last mount on / wins
		}
	}
	return ro
}

// observeLayers checks from the host which isolation layers are in force for the container: the
// process pid the runtime reports (the container's PID 1 for runc and crun, the sandbox's kernel for
// runsc) is inspected through /proc, its cgroups through the cgroup file system. What runsc
// enforces inside its own kernel (capabilities, no-new-privileges, seccomp) cannot be seen from
// the host: those layers are listed as configured, and the tests check them from inside.
func (s *Sandbox) observeLayers(pid int) []string {
	layers := []string{"container"}
	if pid <= 0 {
		return layers
	}
	if s.rt.name == Runsc {
		layers = append(layers, "gvisor")
		if !s.cfg.AllowNetwork {
			layers = append(layers, "network:none")
		}
		if sp := s.spec; sp != nil && sp.Process != nil {
			if c := sp.Process.Capabilities; c != nil && (len(c.Effective) == 0 || agent.Separates(sp.Process.Args) && len(c.Effective) == len(agent.Caps)) {
				layers = append(layers, "caps:none")
			}
			if agent.Separates(sp.Process.Args) {
				layers = append(layers, "agent:own-user")
			}
			if sp.Process.NoNewPrivileges {
				layers = append(layers, "no-new-privileges")
			}
			if sp.Linux != nil && sp.Linux.Seccomp != nil {
				layers = append(layers, "seccomp")
			}
			if sp.Root != nil && sp.Root.Readonly {
				layers = append(layers, "rootfs:ro")
			}
		}
	} else {
		if sp := s.spec; sp != nil && sp.Process != nil && len(sp.Process.Args) > 0 {
			waitExec(pid, sp.Process.Args[0], 2*time.Second)
		}
		status := procStatus(pid)
		if uidMapped(pid) {
			layers = append(layers, "userns")
		}
		// The container's process is the agent: with its own user (agent.RunAs), it holds
		// agent.Caps and the commands none.
		var agentCaps uint64
		if sp := s.spec; sp != nil && sp.Process != nil && agent.Separates(sp.Process.Args) && procUID(status) == s.rootHostUID() {
			agentCaps = agent.CapsMask
			layers = append(layers, "agent:own-user")
		}
		if capsWithin(status["CapEff"], agentCaps) && capsWithin(status["CapPrm"], agentCaps) {
			layers = append(layers, "caps:none")
		}
		if status["NoNewPrivs"] == "1" {
			layers = append(layers, "no-new-privileges")
		}
		if status["Seccomp"] == "2" {
			layers = append(layers, "seccomp")
		}
		if rootReadOnly(pid) {
			layers = append(layers, "rootfs:ro")
		}
		if netIsolated(pid) {
			layers = append(layers, "network:none")
		}
	}
	if s.diskInForce(pid) {
		layers = append(layers, diskcap.Layer(s.cfg.workspaceBytes()))
	}
	return append(layers, cgroupLayers(pid, s.cfg)...)
}

// diskInForce reports whether the workspace's file system of Config.WorkspaceBytes is mounted
// on the host where the bundle binds it, and, for runc and crun, whether the container's
// /workspace is that file system (runsc's gofer serves the host's directory to its kernel).
func (s *Sandbox) diskInForce(pid int) bool {
	if s.rec.Disk == "" || !diskcap.Mounted(s.rec.Disk, s.rec.diskMount()) {
		return false
	}
	if s.rt.name == Runsc {
		return true
	}
	var host, inside syscall.Stat_t
	return syscall.Stat(s.rec.Workspace, &host) == nil &&
		syscall.Stat("/proc/"+strconv.Itoa(pid)+"/root"+adapter.DefaultWorkspace, &inside) == nil &&
		host.Dev == inside.Dev
}

// rootHostUID is the host uid of the container's root.
func (s *Sandbox) rootHostUID() int {
	if s.rec.UserNS {
		return int(s.cfg.uidBase())
	}
	return 0
}

// capsWithin reports whether set, a capability set as /proc/PID/status shows it, holds no
// capability outside mask.
func capsWithin(set string, mask uint64) bool {
	v, err := strconv.ParseUint(set, 16, 64)
	return err == nil && v&^mask == 0
}

// procUID is the real uid of a /proc/PID/status, -1 if unknown.
func procUID(status map[string]string) int {
	f := strings.Fields(status["Uid"])
	if len(f) == 0 {
		return -1
	}
	uid, err := strconv.Atoi(f[0])
	if err != nil {
		return -1
	}
	return uid
}

// waitExec waits, up to limit, until process pid runs program (its comm is the program's base
// name, cut to 15 bytes). crun's start returns before the container's process has loaded its
// seccomp filter and exec'd the agent (runc's waits for both): what /proc shows of the process
// before that is crun's, not the sandbox's.
func waitExec(pid int, program string, limit time.Duration) {
	want := filepath.Base(program)
	if len(want) > 15 {
		want = want[:15]
	}
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil || strings.TrimSpace(string(b)) == want {
			return
		}
	}
}

// uidMapped reports whether process pid is in a user namespace that maps its root elsewhere.
func uidMapped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) >= 3 && !(f[0] == "0" && f[1] == "0")
}

// searchable reports whether every directory on the way to dir (dir included) can be searched by
// uid:gid, which is what a runtime needs to reach the sandbox's files from inside the user
// namespace (where host root's files belong to nobody).
func searchable(dir string, uid, gid uint32) (bool, string) {
	dir = filepath.Clean(dir)
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return false, p
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return false, p
		}
		m := fi.Mode().Perm()
		ok = m&0o001 != 0 || (st.Uid == uid && m&0o100 != 0) || (st.Gid == gid && m&0o010 != 0)
		if !ok {
			return false, p
		}
		if p == "/" || p == "." {
			return true, ""
		}
	}
}

// useUserNS decides whether the sandbox gets a user namespace (see Config.UserNamespace), and how
// the runtime then reaches the root file system. Only the tree itself must be reachable from
// the namespace: bind mounts (the workspace) are opened by the runtime before it enters it.
func useUserNS(cfg Config, lay layout) (bool, reachPlan, error) {
	if cfg.runtime() == Runsc || cfg.UserNamespace == UserNSOff {
		return false, reachPlan{}, nil
	}
	base := cfg.uidBase()
	if ok, _ := searchable(lay.rootfs(), base, base); ok {
		return true, reachPlan{}, nil
	}
	plan := planReach(lay.dir, base, cfg.Workspace)
	if plan.cover != "" {
		return true, plan, nil
	}
	if cfg.UserNamespace == UserNSOn {
		_, where := searchable(lay.rootfs(), base, base)
		return false, reachPlan{}, errs.New(errs.SandboxUnavailable, "oci create", "",
			"user namespace: %s cannot be searched by the container's root (host uid %d): make it searchable (chmod o+x), or use UserNamespace auto or off", where, base)
	}
	return false, reachPlan{}, nil
}
