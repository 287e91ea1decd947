package oci

import (
	"context"
	"errors"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// openParent opens the directory of r (workspace-relative) through the root, creating it (owned
// by the sandbox user) when create is set.
func (s *Sandbox) openParent(op, p, dir string, create bool) (*os.File, error) {
	var d *os.File
	err := s.retry(op, p, dir, func(dir string) (err error) {
		if create {
			if err = s.mkdirAll(dir); err != nil {
				return err
			}
		}
		d, err = s.ws.Open(dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	fi, err := d.Stat()
	if err != nil {
		d.Close()
		return nil, mapErr(op, p, err)
	}
	if !fi.IsDir() {
		d.Close()
		return nil, errs.New(errs.InvalidInput, op, p, "a parent is not a directory")
	}
	return d, nil
}

// Symlink implements adapter.ModeWriter on the host, through the root: the link is made under a
// temporary name in the parent, given to the sandbox user and renamed over the path.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	const op = "symlink"
	if err := s.checkOpen(op); err != nil {
		return err
	}
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
	}
	if err := adapter.CheckLinkTarget(op, p, target); err != nil {
		return err
	}
	d, err := s.openParent(op, p, path.Dir(r), true)
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
		tmp := tmpPrefix + newID()
		err := unix.Symlinkat(target, fd, tmp)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return mapErr(op, p, err)
		}
		err = unix.Fchownat(fd, tmp, s.rec.HostUID, s.rec.HostUID, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			err = unix.Renameat(fd, tmp, fd, name)
		}
		if err != nil {
			unix.Unlinkat(fd, tmp, 0)
			return mapErr(op, p, err)
		}
		return nil
	}
}

// SetExecutable implements adapter.ModeWriter on the host: the file is opened with O_NOFOLLOW in
// its parent and changed through that descriptor.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	const op = "chmod"
	if err := s.checkOpen(op); err != nil {
		return err
	}
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	d, err := s.openParent(op, p, path.Dir(r), false)
	if err != nil {
		return err
	}
	defer d.Close()
	return mapErr(op, p, adapter.SetExecutableAt(d, op, p, path.Base(r), exec))
}

var _ adapter.ModeWriter = (*Sandbox)(nil)
