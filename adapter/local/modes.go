package local

import (
	"context"
	"errors"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Symlink implements adapter.ModeWriter: a link made under a temporary name in the parent (opened
// through os.Root) and renamed over the path, so a reader sees the old entry or the link.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	const op = "symlink"
	if err := s.checkOpen(op); err != nil {
		return err
	}
	r, err := s.rel(op, p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
	}
	if err := adapter.CheckLinkTarget(op, p, target); err != nil {
		return err
	}
	d, err := s.openDir(op, p, path.Dir(r), true)
	if err != nil {
		return err
	}
	defer d.Close()
	fd, name := int(d.Fd()), path.Base(r)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return errs.New(errs.InvalidInput, op, p, "a directory is in the way")
	}
	for {
		tmp := ".sandboxer-" + s.tempID + "-" + strconv.FormatUint(tempSeq.Add(1), 36)
		err := unix.Symlinkat(target, fd, tmp)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return mapErr(op, p, err)
		}
		if err := unix.Renameat(fd, tmp, fd, name); err != nil {
			_ = unix.Unlinkat(fd, tmp, 0)
			return mapErr(op, p, err)
		}
		return nil
	}
}

// SetExecutable implements adapter.ModeWriter. The file is opened with O_NOFOLLOW relative to its
// parent and changed through that descriptor, so a link swapped in cannot redirect it.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	const op = "chmod"
	if err := s.checkOpen(op); err != nil {
		return err
	}
	r, err := s.rel(op, p)
	if err != nil {
		return err
	}
	d, err := s.openDir(op, p, path.Dir(r), false)
	if err != nil {
		return err
	}
	defer d.Close()
	fd, err := unix.Openat(int(d.Fd()), path.Base(r), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return errs.New(errs.NotFound, op, p, "a symbolic link, not a regular file")
	}
	if err != nil {
		return mapErr(op, p, err)
	}
	f := os.NewFile(uintptr(fd), r)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return mapErr(op, p, err)
	}
	if !fi.Mode().IsRegular() {
		return errs.New(errs.NotFound, op, p, "not a regular file (%s)", fi.Mode().Type())
	}
	perm := os.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	return mapErr(op, p, f.Chmod(perm))
}

var _ adapter.ModeWriter = (*Sandbox)(nil)
