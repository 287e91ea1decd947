package local

import (
	"context"
	"errors"
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
	err = adapter.SetExecutableAt(d, op, p, path.Base(r), exec)
	if errs.CodeOf(err) != "" {
		return err
	}
	return mapErr(op, p, err)
}

var _ adapter.ModeWriter = (*Sandbox)(nil)
