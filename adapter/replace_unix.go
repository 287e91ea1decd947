//go:build unix

package adapter

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/errs"
)

// The host-side file writes of the adapters whose workspace is a host directory (local, oci).

// ErrFinalSymlink is ReplaceAt's answer when name is a symbolic link: the caller resolves it
// (inside the workspace) and writes its target instead.
var ErrFinalSymlink = errors.New("final component is a symlink")

// ErrNotRegular is ReplaceAt's answer when name is neither a regular file nor absent.
var ErrNotRegular = errors.New("not a regular file")

// SourceError carries a read error of ReplaceAt's source: the caller's (a request's body), not
// the file system's.
type SourceError struct{ Err error }

func (e SourceError) Error() string { return e.Err.Error() }
func (e SourceError) Unwrap() error { return e.Err }

type sourceReader struct{ r io.Reader }

func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = SourceError{err}
	}
	return n, err
}

// copyBuffers are the buffers of streamed writes.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// writerOnly hides the file's ReadFrom, whose fallback for a reader that is not a file or a
// socket copies in 32 KiB pieces: io.CopyBuffer then uses the buffer it is given.
type writerOnly struct{ io.Writer }

// ReplaceAt replaces name in the open directory d with what src yields, atomically: a temporary
// file (named by tmp, called again while a name is taken) with the permissions of the regular
// file it replaces (0644 for a new one), owned by uid:gid when uid >= 0, filled, then renamed
// over name. It returns the bytes written. Whatever fails leaves name as it was and no
// temporary file; a read error of src is a SourceError. A final symlink is ErrFinalSymlink and
// anything else but a regular file ErrNotRegular, before anything is written; other errors are
// the system's, unmapped.
func ReplaceAt(d *os.File, name string, tmp func() string, uid, gid int, src io.Reader) (int64, error) {
	fd := int(d.Fd())
	perm := uint32(0o644)
	var st unix.Stat_t
	switch err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			perm = uint32(st.Mode & 0o7777) // uint16 on darwin
		case unix.S_IFLNK:
			return 0, ErrFinalSymlink
		default:
			return 0, ErrNotRegular
		}
	case errors.Is(err, unix.ENOENT):
	default:
		return 0, err
	}
	for {
		t := tmp()
		tfd, err := unix.Openat(fd, t, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return 0, err
		}
		f := os.NewFile(uintptr(tfd), t)
		var n int64
		var werr error
		if uid >= 0 {
			werr = f.Chown(uid, gid)
		}
		switch b, ok := src.(*bytes.Reader); {
		case werr != nil:
		case ok:
			n, werr = b.WriteTo(f) // one write of the whole content
		default:
			// A stream (an upload): copied in large pieces, few write calls.
			buf := copyBuffers.Get().(*[]byte)
			n, werr = io.CopyBuffer(writerOnly{f}, sourceReader{src}, *buf)
			copyBuffers.Put(buf)
		}
		if err := errors.Join(werr, f.Close()); err != nil {
			_ = unix.Unlinkat(fd, t, 0)
			if se, ok := errors.AsType[SourceError](err); ok {
				return n, se
			}
			return n, err
		}
		if err := unix.Renameat(fd, t, fd, name); err != nil {
			_ = unix.Unlinkat(fd, t, 0)
			return n, err
		}
		return n, nil
	}
}

// ReplaceErr is ReplaceAt's error as the answer of op on p: nil and ErrFinalSymlink as they are
// (the caller resolves the link), the source's error as the source returned it, ErrNotRegular as
// errs.InvalidInput, the rest mapped by the adapter's mapErr.
func ReplaceErr(op, p string, err error, mapErr func(op, p string, err error) error) error {
	switch se, isSource := errors.AsType[SourceError](err); {
	case err == nil, errors.Is(err, ErrFinalSymlink):
		return err
	case errors.Is(err, ErrNotRegular):
		return errs.New(errs.InvalidInput, op, p, "not a regular file")
	case isSource:
		return se.Err
	}
	return mapErr(op, p, err)
}

// ErrDirInTheWay is SymlinkAt's answer when name is a directory.
var ErrDirInTheWay = errors.New("a directory is in the way")

// SymlinkAt replaces name in the open directory d with a symbolic link to target, atomically: the
// link is made under a temporary name (tmp, called again while a name is taken), owned by uid:gid
// when uid >= 0, and renamed over name, so a reader sees the old entry or the link. A directory
// at name is ErrDirInTheWay; other errors are the system's, unmapped, and leave no temporary link.
func SymlinkAt(d *os.File, name, target string, tmp func() string, uid, gid int) error {
	fd := int(d.Fd())
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return ErrDirInTheWay
	}
	for {
		t := tmp()
		err := unix.Symlinkat(target, fd, t)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return err
		}
		if uid >= 0 {
			err = unix.Fchownat(fd, t, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err == nil {
			err = unix.Renameat(fd, t, fd, name)
		}
		if err != nil {
			_ = unix.Unlinkat(fd, t, 0)
		}
		return err
	}
}
