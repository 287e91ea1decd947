package local

import (
	"context"
	"errors"
	"path"
	"strconv"

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
	tmp := func() string { return ".sandboxer-" + s.tempID + "-" + strconv.FormatUint(tempSeq.Add(1), 36) }
	err = adapter.SymlinkAt(d, path.Base(r), target, tmp, -1, -1)
	if errors.Is(err, adapter.ErrDirInTheWay) {
		return errs.New(errs.InvalidInput, op, p, "a directory is in the way")
	}
	return mapErr(op, p, err)
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
