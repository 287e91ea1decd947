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
