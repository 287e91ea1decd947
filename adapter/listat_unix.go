//go:build unix

package adapter

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// ListFilesAt is Lister.ListFiles for adapters that hold the workspace open on the host (local,
// oci): it walks the open directory d (closed on return) with directory file descriptors (openat,
// fstatat, never following a symbolic link), so the walk can neither leave the workspace nor be
// redirected mid-way. Paths are prefix joined with the names under d. A file or directory removed
// during the walk is left out (with what it held), never an error; hide, when set, leaves out the
// names it is true for and what is under them. Errors are returned as they are, for the caller's
// own mapping.
func ListFilesAt(ctx context.Context, d *os.File, prefix string, hide func(name string) bool) ([]FileInfo, error) {
	var out []FileInfo
	err := listAt(ctx, d, prefix, hide, &out, nil)
	return out, err
}

// ListDirsAt is DirLister.ListDirs for the same adapters: every directory under d (not d
// itself), walked as ListFilesAt walks.
func ListDirsAt(ctx context.Context, d *os.File, prefix string, hide func(name string) bool) ([]string, error) {
	var dirs []string
	err := listAt(ctx, d, prefix, hide, nil, &dirs)
	return dirs, err
}

// listAt walks d, appending its files and links to out and its directories to dirs (each when
// not nil).
func listAt(ctx context.Context, d *os.File, prefix string, hide func(string) bool, out *[]FileInfo, dirs *[]string) error {
	defer d.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	if errors.Is(err, unix.ENOENT) { // removed while walking: it is simply gone, with what it held
		return nil
	}
	if err != nil {
		return err
	}
	fd := int(d.Fd())
	for _, name := range names {
		if hide != nil && hide(name) {
			continue
		}
		rel := path.Join(prefix, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return &fs.PathError{Op: "fstatat", Path: rel, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if out == nil {
				continue
			}
			*out = append(*out, FileInfo{Path: rel, Size: st.Size, Mode: fs.FileMode(st.Mode & 0o777),
				ModTime: statTime(st.Mtim), Inode: st.Ino})
		case unix.S_IFLNK:
			if out == nil {
				continue
			}
			info, err := LinkInfoAt(fd, name, rel, &st)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) { // gone, or no longer a link
				continue
			}
			if err != nil {
				return err
			}
			*out = append(*out, info)
		case unix.S_IFDIR:
			if dirs != nil {
				*dirs = append(*dirs, rel)
			}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return &fs.PathError{Op: "openat", Path: rel, Err: err}
			}
			if err := listAt(ctx, os.NewFile(uintptr(cfd), rel), rel, hide, out, dirs); err != nil {
				return err
			}
		}
	}
	return nil
}

// LinkInfoAt reports the symbolic link name of the directory open as fd, whose lstat is st, as
// the entry rel.
func LinkInfoAt(fd int, name, rel string, st *unix.Stat_t) (FileInfo, error) {
	target, err := ReadlinkAt(fd, name)
	if err != nil {
		return FileInfo{}, &fs.PathError{Op: "readlinkat", Path: rel, Err: err}
	}
	return FileInfo{Path: rel, Size: st.Size, Mode: fs.ModeSymlink | 0o777, ModTime: statTime(st.Mtim), Inode: st.Ino, Link: target}, nil
}

// ReadlinkAt returns the target text of the symbolic link name of the directory open as fd.
func ReadlinkAt(fd int, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) > 1<<16 {
			return "", unix.ENAMETOOLONG
		}
		buf = make([]byte, 2*len(buf))
	}
}

func statTime(ts unix.Timespec) time.Time { return time.Unix(ts.Unix()) }
