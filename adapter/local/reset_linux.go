//go:build linux && !sandboxer_portable

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sandboxHostname is the hostname commands see (their own UTS namespace).
const sandboxHostname = "sandbox"

// What a recycled sandbox must not carry from one caller to the next besides its workspace
// (Sandbox.Recycle): the kernel objects of its namespaces (System V IPC, the hostname), its
// keyrings, and its temporary directories with their contents, modes, extended attributes and
// times. The helper makes them anew on a "reset" request; TMPDIR, a host directory, is renewed
// by the adapter.

// viewTmpDirs are the view's own temporary directories (tmpfs of the helper), made anew by a reset.
var viewTmpDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// reset runs on the helper's serving thread, the one every command is forked from, while no
// command runs: new IPC and UTS namespaces and a new session keyring for the commands it starts
// from now on (the old namespaces, and every object in them, go with the last process in them),
// the user keyrings cleared when req.ClearKeys says they are the sandbox's own, and each
// directory of req.Args emptied and made as new (mode 01777), and req.Path (TMPDIR, 0700).
func (h *helperServer) reset(req request) {
	err := renewNamespaces()
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
		err = errors.Join(err, fmt.Errorf("join a new session keyring: %w", e))
	}
	if req.ClearKeys {
		for _, ring := range []int{unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_USER_SESSION_KEYRING} {
			if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_CLEAR, uintptr(ring), 0); e != 0 {
				err = errors.Join(err, fmt.Errorf("clear keyring %d: %w", ring, e))
			}
		}
	}
	for _, dir := range req.Args {
		err = errors.Join(err, renewDir(dir, 0o1777))
	}
	if req.Path != "" {
		err = errors.Join(err, renewDir(req.Path, 0o700))
	}
	r := reply{ID: req.ID}
	if err != nil {
		r.Err = err.Error()
	}
	h.reply(r)
}

// renewNamespaces moves this thread into new IPC and UTS namespaces, with the sandbox's hostname.
func renewNamespaces() error {
	if err := unix.Unshare(sandboxNamespaces); err != nil {
		return fmt.Errorf("new IPC and UTS namespaces: %w", err)
	}
	if err := unix.Sethostname([]byte(sandboxHostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	return nil
}

// renewDir empties dir and gives it mode, no extended attributes and the current time, as if
// just made. What another file system mounts inside it (the workspace or TMPDIR, when the host
// keeps them under /tmp, where the view's /tmp is) is neither entered nor removed; links are
// removed, never followed. A dir that does not exist is no error.
func renewDir(dir string, mode uint32) error {
	var top unix.Stat_t
	if err := unix.Lstat(dir, &top); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if top.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory", dir)
	}
	err := emptyDir(dir, top.Dev)
	if e := unix.Chmod(dir, mode); e != nil {
		err = errors.Join(err, e)
	}
	err = errors.Join(err, dropXattrs(dir))
	now := time.Now()
	if e := os.Chtimes(dir, now, now); e != nil {
		err = errors.Join(err, e)
	}
	return err
}

// emptyDir removes what dir holds on the file system dev, depth first.
func emptyDir(dir string, dev uint64) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return err
		}
		switch {
		case st.Dev != dev:
			continue // a mount of the view's (the workspace, TMPDIR): not the sandbox's to remove
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			if err := emptyDir(p, dev); err != nil {
				return err
			}
			if err := unix.Rmdir(p); err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENOTEMPTY) {
				return err
			}
		default:
			if err := unix.Unlink(p); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
		}
	}
	return nil
}

// dropXattrs removes every extended attribute of p (not following a link) that this process may
// remove; a file system without them is no error.
func dropXattrs(p string) error {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	if err != nil {
		return err
	}
	for name := range strings.SplitSeq(string(buf[:n]), "\x00") {
		if name == "" || strings.HasPrefix(name, "security.") || strings.HasPrefix(name, "system.") {
			continue // the LSMs' and the ACLs' (a tmpfs the helper made has none of the user's)
		}
		if err := unix.Lremovexattr(p, name); err != nil && !errors.Is(err, unix.ENODATA) {
			return fmt.Errorf("remove %s of %s: %w", name, p, err)
		}
	}
	return nil
}

// resetTimeout bounds a helper's reset: one that does not answer is dead.
const resetTimeout = 10 * time.Second

// reset makes the sandbox's isolation as new for the next caller (Sandbox.Recycle): each live
// helper renews its namespaces, keyrings and view's temporary directories, TMPDIR is emptied,
// and the workspace's disk cap is Config.Disk from what it holds now. A helper that fails is killed (the next command starts a fresh one), and the error
// says so: the caller stops the sandbox rather than hand it out.
func (iso *isolation) reset(ctx context.Context) error {
	cacheErr := iso.resetCaches() // may end helpers: before they are listed
	iso.mu.Lock()
	hs := iso.helpers
	tmpMade := iso.tmpMade
	quota := iso.quota
	iso.mu.Unlock()
	err := cacheErr
	for _, h := range hs {
		if h == nil || !h.alive() {
			continue
		}
		req := request{Op: "reset", ClearKeys: os.Geteuid() == 0 && h.uid != 0}
		if slices.Contains(h.ready.Layers, LayerFSView) {
			req.Args, req.Path = viewTmpDirs, iso.tmp // TMPDIR is the view's too
		}
		if e := h.call(ctx, &req, resetTimeout); e != nil {
			h.kill()
			err = errors.Join(err, fmt.Errorf("reset the helper: %w", e))
		}
	}
	if tmpMade {
		err = errors.Join(err, renewDir(iso.tmp, 0o700))
	}
	if quota != nil { // the next call's budget is Config.Disk again
		err = errors.Join(err, quota.rebase())
	}
	return err
}

// call sends req (an op answered on the connection, without a socket) and waits for its reply
// until ctx ends or timeout passes.
func (h *helperProc) call(ctx context.Context, req *request, timeout time.Duration) error {
	wake, done, err := wakeOn(ctx)
	if err != nil {
		return err
	}
	defer done()
	h.sockMu.Lock()
	defer h.sockMu.Unlock()
	if err := h.send(req, nil); err != nil {
		return err
	}
	r, err := h.reply(req.ID, wake, time.Now().Add(timeout))
	switch {
	case errors.Is(err, errCanceled):
		return ctx.Err()
	case err != nil:
		return err
	case r.socket != nil:
		r.socket.Close()
	}
	if r.Err != "" {
		return errors.New(r.Err)
	}
	return nil
}
