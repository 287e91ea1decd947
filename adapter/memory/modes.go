package memory

import (
	"context"
	"io/fs"
	"path"
	"strconv"
	"sync/atomic"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

var linkSeq atomic.Uint64

// Symlink implements adapter.ModeWriter: the parent is resolved inside the workspace (created as
// needed), the link made under a temporary name and renamed over the path.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	const op = "symlink"
	if err := s.checkOpen(op); err != nil {
		return err
	}
	a, err := s.abs(op, p)
	if err != nil {
		return err
	}
	if a == Workspace {
		return errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
	}
	if err := adapter.CheckLinkTarget(op, p, target); err != nil {
		return err
	}
	if err := s.fs.MkdirAllJailed(path.Dir(a), Workspace, 0o755); err != nil {
		return fsErr(op, p, err)
	}
	dir, err := s.fs.Resolve(path.Dir(a), Workspace, true)
	if err != nil {
		return fsErr(op, p, err)
	}
	link := path.Join(dir, path.Base(a))
	if info, err := s.fs.Stat(link, false); err == nil && info.IsDir() {
		return errs.New(errs.InvalidInput, op, p, "a directory is in the way")
	}
	tmp := path.Join(dir, ".sandboxer-link-"+strconv.FormatUint(linkSeq.Add(1), 36))
	if err := s.fs.Symlink(target, tmp); err != nil {
		return fsErr(op, p, err)
	}
	if err := s.fs.Rename(tmp, link); err != nil {
		s.fs.Remove(tmp)
		return fsErr(op, p, err)
	}
	return nil
}

// SetExecutable implements adapter.ModeWriter.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	const op = "chmod"
	if err := s.checkOpen(op); err != nil {
		return err
	}
	a, err := s.abs(op, p)
	if err != nil {
		return err
	}
	info, resolved, err := s.fs.StatJailed(a, Workspace, false)
	if err != nil {
		return fsErr(op, p, err)
	}
	if !info.Mode().IsRegular() {
		return errs.New(errs.NotFound, op, p, "not a regular file (%s)", info.Mode().Type())
	}
	perm := fs.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	return fsErr(op, p, s.fs.Chmod(resolved, perm))
}

var _ adapter.ModeWriter = (*Sandbox)(nil)
