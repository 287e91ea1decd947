package oci

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// With a user namespace, the container's process reaches its root file system as the mapped
// root, a host uid that owns nothing on the host: every directory above the tree must be
// searchable by others. A state directory under /root (mode 0700, the CLI's default for root)
// is not. Rather than give up the user namespace there, the runtime is started in a private mount
// namespace of its own in which the highest unsearchable directory is covered by a tmpfs
// (mode 0755) that holds only what the runtime needs, bind-mounted back at the same paths: the
// adapter's directory in the state directory, and a given workspace below the cover. The paths
// in config.json are the real ones; the host's mount table never changes, and the namespace ends
// when the runtime's start command exits (the container has its own, made from it, and detaches
// everything outside its root).

// The same private namespace serves crun on a hybrid cgroup host (see hybridCgroup): there the
// cgroup v2 hierarchy at /sys/fs/cgroup/unified is detached in the namespace, so that crun sees
// the v1 hierarchies alone, which hold every controller the sandbox is limited by.

// reachPlan says how the runtime is started: directly (the zero plan), or in a private mount
// namespace with a directory covered and mounts detached.
type reachPlan struct {
	cover  string   // the directory to cover with a tmpfs
	keep   []string // directories bind-mounted back below the cover
	detach []string // mount points detached (lazily unmounted) in the namespace
}

// planReach finds the highest directory above dir (dir excluded) that uid cannot search.
func planReach(dir string, uid uint32, keep ...string) reachPlan {
	dir = filepath.Clean(dir)
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	p := "/"
	for _, c := range parts[:len(parts)-1] {
		p = filepath.Join(p, c)
		if ok, _ := searchable(p, uid, uid); !ok {
			plan := reachPlan{cover: p, keep: []string{dir}}
			for _, k := range keep {
				if k != "" && within(k, p) && !within(k, dir) {
					plan.keep = append(plan.keep, k)
				}
			}
			return plan
		}
	}
	return reachPlan{}
}

func within(p, base string) bool {
	r, err := filepath.Rel(base, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../")
}

// start starts cmd, in a private mount namespace laid out as the plan says when it has a cover
// or mounts to detach.
func (pl reachPlan) start(cmd *exec.Cmd) error {
	if pl.cover == "" && len(pl.detach) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends with this goroutine, and its mount namespace
		// with it (and with the runtime, its only other user).
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			errc <- pl.startInNamespace(cmd)
			return
		}
		// The main thread is never ended, and its namespace is what /proc/self shows: keep it
		// out of this by holding it while another thread, which cannot be it, does the work.
		defer runtime.UnlockOSThread()
		done := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			done <- pl.startInNamespace(cmd)
		}()
		errc <- <-done
	}()
	return <-errc
}

func (pl reachPlan) startInNamespace(cmd *exec.Cmd) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("private mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mount namespace: %w", err)
	}
	for _, d := range pl.detach {
		if err := unix.Unmount(d, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("detach %s: %w", d, err)
		}
	}
	if pl.cover == "" {
		return cmd.Start()
	}
	// Descriptors of what stays visible, opened before the cover hides them (and in the new
	// namespace: a bind mount takes its source from the caller's own mounts).
	fds := make([]int, len(pl.keep))
	for i, k := range pl.keep {
		fd, err := unix.Open(k, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, f := range fds[:i] {
				unix.Close(f)
			}
			return fmt.Errorf("open %s: %w", k, err)
		}
		fds[i] = fd
	}
	defer func() {
		for _, f := range fds {
			unix.Close(f)
		}
	}()
	if err := unix.Mount("tmpfs", pl.cover, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("cover %s: %w", pl.cover, err)
	}
	for i, k := range pl.keep {
		if err := os.MkdirAll(k, 0o755); err != nil {
			return fmt.Errorf("cover %s: %w", pl.cover, err)
		}
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fds[i]), k, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", k, err)
		}
	}
	return cmd.Start()
}

// unifiedCgroup is where a hybrid cgroup host mounts its cgroup v2 hierarchy.
const unifiedCgroup = "/sys/fs/cgroup/unified"

// hybridCgroup reports whether this host has the hybrid cgroup layout that crun refuses: the v1
// hierarchies on a tmpfs at /sys/fs/cgroup and a v2 hierarchy at /sys/fs/cgroup/unified with
// controllers of its own (crun 1.8: "cgroups in hybrid mode not supported, drop all controllers
// from cgroupv2", whatever its --cgroup-manager). The controllers the sandbox is limited by
// (memory, pids, cpu) are then v1 ones, which is where runc puts the limits too.
func hybridCgroup() bool {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) != nil || st.Type != unix.TMPFS_MAGIC {
		return false
	}
	if unix.Statfs(unifiedCgroup, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return false
	}
	b, err := os.ReadFile(filepath.Join(unifiedCgroup, "cgroup.controllers"))
	return err == nil && strings.TrimSpace(string(b)) != ""
}
