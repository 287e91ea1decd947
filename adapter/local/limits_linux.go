//go:build linux && !sandboxer_portable

package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter/internal/cgstat"
)

// A sandbox's resource limits live in cgroups that hold its helpers, so every command (and all
// it starts) counts against them: memory, process count and, when set, CPU. Where cgroup v2 has
// the memory and pids controllers, they are set on the sandbox's own v2 cgroup (the parent of its
// per-command cgroups), made where the controllers reach it (see cgroupParent). Otherwise, on
// hybrid hosts (cgroup v2 without those controllers, v1 hierarchies for memory, pids and cpu), the
// sandbox gets a cgroup in each v1 hierarchy, and each helper is moved into them as it starts,
// before it runs anything. The limits are per sandbox: its commands share them.

// limitGroups are the cgroups holding one sandbox's limits.
type limitGroups struct {
	dirs   []string // cgroup directories the helpers join (v1: one per hierarchy; v2: none, see v2)
	v2     string   // the v2 directory carrying the limits (the pool's), or ""
	memDir string   // where the OOM kill count is read (memory.events or memory.oom_control)

	mu       sync.Mutex
	oomSeen  int64 // the count at the last attribution
	released bool
}

// limitValues are the limits to set, in kernel units: bytes, processes, CPU microseconds per
// 100 ms period (0: not set).
type limitValues struct {
	memory, pids, cpuQuota int64
}

func (c Config) limitValues() limitValues {
	v := limitValues{memory: c.Memory, pids: int64(c.Pids)}
	switch {
	case c.Memory == 0:
		v.memory = DefaultMemoryBytes
	case c.Memory < 0:
		v.memory = 0
	}
	switch {
	case c.Pids == 0:
		v.pids = DefaultPids
	case c.Pids < 0:
		v.pids = 0
	}
	if c.CPUs > 0 {
		v.cpuQuota = int64(c.CPUs * 100000)
	}
	return v
}

func (v limitValues) none() bool { return v.memory == 0 && v.pids == 0 && v.cpuQuota == 0 }

// newLimitGroups makes the cgroups of a sandbox's limits, on v2 under pool (nil without one) or on
// the v1 hierarchies. An error says why the limits cannot be set here.
func newLimitGroups(v limitValues, pool *cgroupPool) (*limitGroups, error) {
	var v2err error
	if pool != nil {
		l, err := v2Limits(v, pool.base)
		if err == nil {
			return l, nil
		}
		v2err = err
	}
	l, err := v1Limits(v)
	if err != nil && v2err != nil {
		return nil, fmt.Errorf("%w (and %w)", v2err, err)
	}
	return l, err
}

// v2Controllers are the cgroup v2 controllers the limits need; cpu is enabled with them where
// it can be, and needed only by a CPU limit.
var v2Controllers = []string{"memory", "pids"}

// cgroupParent is the cgroup v2 directory the sandboxes' cgroups are made in, chosen once per
// process so that the limits' controllers reach them:
//   - this process's own cgroup where they are enabled in its subtree, or can be enabled now;
//   - where its own cgroup has them but holds processes, none may be enabled there (cgroup v2's
//     "no internal processes" rule; the root cgroup excepted): if this process is alone in it (a
//     service's main process, a container's init), it moves into a leaf of its own first;
//   - else (a login session's scope, where the shell that started it lives too) the nearest
//     ancestor that passes the controllers to its children and where this process may make
//     cgroups: a delegated subtree's, or the root's for root.
//
// Where cgroup v2 has none of them (hybrid hosts, where the limits come from v1), or none of
// this can be done, it is the own cgroup: per-command cgroups without limits.
var cgroupParent = sync.OnceValues(func() (string, error) {
	own, err := cgroupBase()
	if err != nil {
		return "", err
	}
	mnt, err := cgroup2Mount()
	if err != nil || !controllersIn(filepath.Join(mnt, "cgroup.controllers")) {
		return own, nil
	}
	if controllersIn(filepath.Join(own, "cgroup.subtree_control")) {
		return own, nil
	}
	if controllersIn(filepath.Join(own, "cgroup.controllers")) {
		if enableControllers(own) == nil {
			return own, nil
		}
		if aloneIn(own) && moveToLeaf(own) == nil && enableControllers(own) == nil {
			return own, nil
		}
	}
	for dir := own; dir != mnt && strings.HasPrefix(dir, mnt); {
		dir = filepath.Dir(dir)
		if controllersIn(filepath.Join(dir, "cgroup.subtree_control")) && unix.Access(dir, unix.W_OK) == nil {
			return dir, nil
		}
	}
	return own, nil
})

// controllersIn reports whether the controllers file (cgroup.controllers or
// cgroup.subtree_control) lists every controller the limits need.
func controllersIn(file string) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	have := strings.Fields(string(data))
	for _, c := range v2Controllers {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

// enableControllers enables the limits' controllers in the subtree of the cgroup dir, and cpu
// too where it is available.
func enableControllers(dir string) error {
	file := filepath.Join(dir, "cgroup.subtree_control")
	if err := os.WriteFile(file, []byte("+"+strings.Join(v2Controllers, " +")), 0); err != nil {
		return err
	}
	_ = os.WriteFile(file, []byte("+cpu"), 0)
	return nil
}

// aloneIn reports whether this process is the only one in the cgroup dir.
func aloneIn(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && strings.TrimSpace(string(data)) == strconv.Itoa(os.Getpid())
}

// moveToLeaf moves this process (all its threads) from the cgroup dir into a new child of it,
// "sandboxer-main-PID", so that dir holds no process and may enable controllers. The leaf is
// removed, once empty, by removeStale of a later process.
func moveToLeaf(dir string) error {
	leaf := filepath.Join(dir, mainLeafPrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		_ = os.Remove(leaf)
		return err
	}
	return nil
}

// mainLeafPrefix names the cgroup a sandboxer process moved itself into (see moveToLeaf).
const mainLeafPrefix = "sandboxer-main-"

// v2Limits sets the limits on the sandbox's v2 cgroup, when its controllers are enabled there.
func v2Limits(v limitValues, dir string) (*limitGroups, error) {
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	have := strings.Fields(string(ctrl))
	files := map[string]string{}
	if v.memory > 0 {
		files["memory.max"] = strconv.FormatInt(v.memory, 10)
		files["memory.swap.max"] = "0"
	}
	if v.pids > 0 {
		files["pids.max"] = strconv.FormatInt(v.pids, 10)
	}
	if v.cpuQuota > 0 {
		files["cpu.max"] = fmt.Sprintf("%d 100000", v.cpuQuota)
	}
	for name, val := range files {
		if c, _, _ := strings.Cut(name, "."); !slices.Contains(have, c) {
			return nil, fmt.Errorf("cgroup v2 controller %s is not enabled for %s", c, dir)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(val), 0); err != nil && name != "memory.swap.max" {
			return nil, err
		}
	}
	return &limitGroups{v2: dir, memDir: dir}, nil
}

// v1Controllers are the v1 hierarchies the limits use, with the files they set.
var v1Controllers = []string{"memory", "pids", "cpu"}

// v1Limits makes a cgroup in each v1 hierarchy a limit needs and sets it.
func v1Limits(v limitValues) (*limitGroups, error) {
	l := &limitGroups{}
	name := fmt.Sprintf("sandboxer-%d-%s", os.Getpid(), randomSuffix())
	for _, c := range v1Controllers {
		files := map[string]string{}
		switch c {
		case "memory":
			if v.memory > 0 {
				files["memory.limit_in_bytes"] = strconv.FormatInt(v.memory, 10)
			}
		case "pids":
			if v.pids > 0 {
				files["pids.max"] = strconv.FormatInt(v.pids, 10)
			}
		case "cpu":
			if v.cpuQuota > 0 {
				files["cpu.cfs_period_us"] = "100000"
				files["cpu.cfs_quota_us"] = strconv.FormatInt(v.cpuQuota, 10)
			}
		}
		if len(files) == 0 {
			continue
		}
		base, err := v1Base(c)
		if err != nil {
			l.release()
			return nil, err
		}
		removeStaleIn(base)
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			l.release()
			return nil, fmt.Errorf("cgroup v1 %s: %w", c, err)
		}
		l.dirs = append(l.dirs, dir)
		lookAfter(janitorCg1, dir)
		for _, f := range []string{"cpu.cfs_period_us", "cpu.cfs_quota_us", "memory.limit_in_bytes", "pids.max"} {
			if val, ok := files[f]; ok {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(val), 0); err != nil {
					l.release()
					return nil, fmt.Errorf("cgroup v1 %s: %w", f, err)
				}
			}
		}
		if c == "memory" {
			// The memory limit covers swap too where swap accounting exists.
			_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(files["memory.limit_in_bytes"]), 0)
			l.memDir = dir
		}
	}
	return l, nil
}

// v1Base is this process's cgroup in the v1 hierarchy of controller c.
func v1Base(c string) (string, error) {
	mounts, err := cgstat.Mounts()
	if err != nil {
		return "", err
	}
	mnt := ""
	for _, m := range mounts {
		if !m.V2 && slices.Contains(m.Controllers, c) {
			mnt = m.Dir
			break
		}
	}
	if mnt == "" {
		return "", fmt.Errorf("no cgroup v1 hierarchy of %s is mounted", c)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), c) {
			return filepath.Join(mnt, parts[2]), nil
		}
	}
	return "", fmt.Errorf("this process is in no cgroup v1 of %s", c)
}

// add moves a helper into the sandbox's limit cgroups (v1; on v2 its commands are cloned into
// per-command cgroups below the limited one).
func (l *limitGroups) add(pid int) error {
	for _, d := range l.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// oomKilled reports whether the kernel's OOM killer ended a process of the sandbox since the
// last time it said so.
func (l *limitGroups) oomKilled() bool {
	if l.memDir == "" {
		return false
	}
	n := int64(-1)
	for _, f := range []string{"memory.events", "memory.oom_control"} {
		data, err := os.ReadFile(filepath.Join(l.memDir, f))
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok {
				n, _ = strconv.ParseInt(string(v), 10, 64)
			}
		}
		break
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > l.oomSeen {
		l.oomSeen = n
		return true
	}
	return false
}

// release removes the v1 cgroups once their processes are gone (the helpers are killed first).
func (l *limitGroups) release() {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return
	}
	l.released = true
	l.mu.Unlock()
	deadline := time.Now().Add(cgroupDrain) // see cgroupPool.close
	for _, d := range l.dirs {
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				released(janitorCg1, d)
				break
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// removeStaleIn removes, in a v1 hierarchy, the limit cgroups of sandboxer processes that have
// since died.
func removeStaleIn(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if pid, ok := stalePID(e.Name()); ok && e.IsDir() && !alive(pid) {
			_ = os.Remove(filepath.Join(base, e.Name()))
		}
	}
}
