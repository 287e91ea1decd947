package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// errBusy is why a sandbox cannot be recycled: something of it outlives the call.
var errBusy = errors.New("the sandbox has running commands, background processes or ports")

// Recycle says whether a sandbox that served a call can serve the next caller of the same
// workspace and configuration as if it had just been made, with its isolation helpers still
// running (the resident server of `sandboxer` keeps one per workspace warm). It fails, and the
// caller should Stop it, when anything of the last call is left: a running command, a background
// process, a port, or a file in its private temporary directories (TMPDIR, and the /tmp,
// /var/tmp and /dev/shm of each helper's file system view; empty directories do not count). It
// changes nothing: it only looks.
func (s *Sandbox) Recycle(ctx context.Context) error {
	s.mu.Lock()
	busy := s.stopped || len(s.running) > 0
	s.mu.Unlock()
	if busy || len(s.procs.List()) > 0 || s.ports.count() > 0 {
		return errBusy
	}
	if s.iso == nil {
		return nil
	}
	for _, root := range s.iso.viewRoots() {
		for _, dir := range []string{"tmp", "var/tmp", "dev/shm"} {
			if err := leftIn(filepath.Join(root, dir)); err != nil {
				return err
			}
		}
	}
	entries, err := os.ReadDir(s.iso.tmp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: TMPDIR holds %s", errBusy, entries[0].Name())
	}
	return nil
}

// leftIn fails when dir (a view's own temporary directory, a tmpfs, seen from the host through
// /proc/PID/root) holds a file other than a directory. What belongs to another file system is
// what the view mounts there (the workspace, TMPDIR, this binary, when they live under /tmp on
// the host), not the sandbox's: it is not entered.
func leftIn(dir string) error {
	var top syscall.Stat_t
	if err := syscall.Lstat(dir, &top); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		switch {
		case st.Dev != top.Dev && d.IsDir():
			return filepath.SkipDir
		case st.Dev != top.Dev:
			return nil
		case !d.IsDir():
			return fmt.Errorf("%w: %s holds %s", errBusy, filepath.Base(dir), p[len(dir):])
		}
		return nil
	})
}
