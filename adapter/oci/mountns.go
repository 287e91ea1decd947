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

// reachPlan says how the runtime reaches the bundle: directly (cover == ""), or under a cover.
type reachPlan struct {
	cover string   // the directory to cover with a tmpfs
	keep  []string // directories bind-mounted back below the cover
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

// start starts cmd, in a private mount namespace laid out as the plan says when it has a cover.
func (pl reachPlan) start(cmd *exec.Cmd) error {
	if pl.cover == "" {
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
