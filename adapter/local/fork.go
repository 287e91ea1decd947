package local

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Fork copies the workspace into a new temporary directory (removed by the fork's Stop) and returns
// a sandbox on it with the same configuration. Files, directories, permissions and symlinks (as
// links, never followed) are copied; the source is only read.
func (s *Sandbox) Fork(ctx context.Context) (adapter.Sandbox, error) {
	if err := s.checkOpen("fork"); err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.Root = ""
	child, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := copyTree(ctx, s.root, child.root); err != nil {
		_ = child.Stop(ctx)
		return nil, errs.Wrap(errs.Internal, "fork", "", err)
	}
	return child, nil
}

func copyTree(ctx context.Context, src, dst *os.Root) error {
	return fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil || p == "." {
			return gone(err)
		}
		info, err := d.Info()
		if err != nil {
			return gone(err)
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := src.Readlink(p)
			if err != nil {
				return gone(err)
			}
			return dst.Symlink(link, p)
		case d.IsDir():
			return dst.Mkdir(p, info.Mode().Perm()|0o700)
		case d.Type().IsRegular():
			data, err := src.ReadFile(p)
			if err != nil {
				return gone(err)
			}
			return dst.WriteFile(p, data, info.Mode().Perm())
		}
		return nil // sockets, FIFOs and devices are not copied
	})
}

// gone forgives an entry that a concurrent command or write removed (or renamed) between the
// listing and the copy: the fork is a copy of the moment, and it was not there any more.
func gone(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
