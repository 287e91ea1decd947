package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// StatFile reports one entry of the workspace without following a final symlink.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	if err := s.checkOpen("stat"); err != nil {
		return adapter.FileInfo{}, err
	}
	r, err := s.rel("stat", p)
	if err != nil {
		return adapter.FileInfo{}, err
	}
	fi, err := s.root.Lstat(r)
	if err != nil {
		return adapter.FileInfo{}, mapErr("stat", p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A link is reported only if it stays inside; its target decides nothing else here.
		if _, _, err := s.resolve("stat", p, r); err != nil && errs.CodeOf(err) == errs.PathEscape {
			return adapter.FileInfo{}, err
		}
	}
	info := adapter.FileInfo{Path: r, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.Inode = st.Ino
	}
	return info, nil
}

// RemoveFile deletes one file, symlink or empty directory.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error {
	if err := s.checkOpen("remove"); err != nil {
		return err
	}
	r, err := s.rel("remove", p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, "remove", p, "cannot remove the workspace root")
	}
	return mapErr("remove", p, s.root.Remove(r))
}

// ListFiles walks dir with directory file descriptors (openat, fstatat, never following a
// symlink), so the walk can neither leave the workspace nor be redirected mid-way.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	if err := s.checkOpen("list"); err != nil {
		return nil, err
	}
	if dir == "" {
		dir = "."
	}
	r, err := s.rel("list", dir)
	if err != nil {
		return nil, err
	}
	var f *os.File
	if r == "." {
		f, err = s.root.Open(".")
	} else {
		var sub *os.Root
		if sub, err = s.root.OpenRoot(r); err == nil {
			f, err = sub.Open(".")
			sub.Close()
		}
	}
	if err != nil {
		return nil, mapErr("list", dir, err)
	}
	prefix := r
	if prefix == "." {
		prefix = ""
	}
	var out []adapter.FileInfo
	if err := walkFD(ctx, f, prefix, &out); err != nil {
		return nil, mapErr("list", dir, err)
	}
	return out, nil
}

// walkFD lists the regular files under the open directory d (closed on return).
func walkFD(ctx context.Context, d *os.File, prefix string, out *[]adapter.FileInfo) error {
	defer d.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	fd := int(d.Fd())
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) { // removed while walking: it is simply gone
				continue
			}
			return &fs.PathError{Op: "fstatat", Path: path.Join(prefix, name), Err: err}
		}
		rel := name
		if prefix != "" {
			rel = prefix + "/" + name
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			*out = append(*out, adapter.FileInfo{
				Path:    rel,
				Size:    st.Size,
				Mode:    fs.FileMode(st.Mode & 0o777),
				ModTime: timespec(st.Mtim),
				Inode:   st.Ino,
			})
		case unix.S_IFDIR:
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return &fs.PathError{Op: "openat", Path: rel, Err: err}
			}
			if err := walkFD(ctx, os.NewFile(uintptr(cfd), rel), rel, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func timespec(ts unix.Timespec) time.Time { return time.Unix(ts.Sec, ts.Nsec) }
