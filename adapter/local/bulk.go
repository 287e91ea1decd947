package local

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// The fast file paths: a directory is opened once through os.Root (which refuses escapes), and
// the file itself is then handled relative to that directory's descriptor with a single path
// component and O_NOFOLLOW, so nothing can redirect it. A final symlink is left to the slow path,
// which resolves it inside the workspace or refuses it.

// errFinalSymlink says the last component is a symlink: take the slow, link-resolving path.
var errFinalSymlink = adapter.ErrFinalSymlink

var tempSeq atomic.Uint64

// openDir opens a workspace directory (relative, clean), creating it first when create is set.
func (s *Sandbox) openDir(op, p, dir string, create bool) (*os.File, error) {
	if create && dir != "." {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return nil, mapErr(op, p, err)
		}
	}
	f, err := s.root.Open(dir)
	if err != nil {
		return nil, mapErr(op, p, err)
	}
	return f, nil
}

// writeAt replaces name in the open directory d atomically (temporary file, then renameat),
// keeping the permissions of a file it replaces.
func (s *Sandbox) writeAt(d *os.File, op, p, name string, data []byte) error {
	_, err := s.writeFrom(d, op, p, name, bytes.NewReader(data))
	return err
}

// writeFrom writes what src yields to name in d, atomically (adapter.ReplaceAt); a failed read
// of src leaves name as it was and returns src's error.
func (s *Sandbox) writeFrom(d *os.File, op, p, name string, src io.Reader) (int64, error) {
	tmp := func() string { return ".sandboxer-" + s.tempID + "-" + strconv.FormatUint(tempSeq.Add(1), 36) }
	n, err := adapter.ReplaceAt(d, name, tmp, -1, -1, src)
	return n, adapter.ReplaceErr(op, p, err, mapErr)
}

// WriteFiles writes each file atomically, opening each directory once for a run of files in it.
func (s *Sandbox) WriteFiles(ctx context.Context, files []adapter.File) error {
	if err := s.checkOpen("write"); err != nil {
		return err
	}
	var d *os.File
	dirName := ""
	defer func() {
		if d != nil {
			d.Close()
		}
	}()
	for _, file := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := s.rel("write", file.Path)
		if err != nil {
			return err
		}
		if r == "." {
			return errs.New(errs.InvalidInput, "write", file.Path, "the workspace root is a directory")
		}
		dir, name := path.Dir(r), path.Base(r)
		if d == nil || dir != dirName {
			if d != nil {
				d.Close()
				d = nil
			}
			if d, err = s.openDir("write", file.Path, dir, true); err != nil {
				return err
			}
			dirName = dir
		}
		err = s.writeAt(d, "write", file.Path, name, file.Data)
		if errors.Is(err, errFinalSymlink) {
			_, err = s.writeThroughLink(file.Path, r, bytes.NewReader(file.Data))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadFiles reads many files, opening each directory once for a run of files in it. The data
// passed to fn is valid only during the call.
func (s *Sandbox) ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte) error) error {
	if err := s.checkOpen("read"); err != nil {
		return err
	}
	var d *os.File
	dirName := ""
	defer func() {
		if d != nil {
			d.Close()
		}
	}()
	var buf []byte
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := s.rel("read", p)
		if err != nil {
			return err
		}
		dir, name := path.Dir(r), path.Base(r)
		if d == nil || dir != dirName {
			if d != nil {
				d.Close()
				d = nil
			}
			if d, err = s.openDir("read", p, dir, false); err != nil {
				return err
			}
			dirName = dir
		}
		var data []byte
		data, buf, err = readAt(d, p, name, buf, adapter.ReadLimit(ctx))
		if errors.Is(err, errFinalSymlink) {
			data, err = s.ReadFile(ctx, p)
		}
		if err != nil {
			return err
		}
		if err := fn(p, data); err != nil {
			return err
		}
	}
	return nil
}

// readAt reads name from the open directory d into buf (grown as needed) and returns the data
// and the buffer for reuse.
func readAt(d *os.File, p, name string, buf []byte, limit int64) (data, spare []byte, err error) {
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, buf, errFinalSymlink
	}
	if err != nil {
		return nil, buf, mapErr("read", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, buf, mapErr("read", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, buf, errs.New(errs.NotFound, "read", p, "not a regular file")
	}
	return readFD(fd, p, &st, buf, limit)
}

// readFD reads the open regular file fd, whose fstat is st, into buf (grown as needed) and
// returns the data and the buffer for reuse. A file over limit (its fstat size, checked before
// anything is allocated, or what it grew to while being read) is errs.FileTooLarge.
func readFD(fd int, p string, st *unix.Stat_t, buf []byte, limit int64) (data, spare []byte, err error) {
	if st.Size > limit {
		return nil, buf, adapter.FileTooLarge("read", p, st.Size, limit)
	}
	if need := int(st.Size) + 1; cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:cap(buf)]
	n := 0
	for {
		if n == len(buf) { // the file grew while being read
			if int64(n) > limit {
				return nil, buf, adapter.FileTooLarge("read", p, int64(n), limit)
			}
			grown := make([]byte, 2*len(buf)+512)
			copy(grown, buf[:n])
			buf = grown
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, buf, mapErr("read", p, err)
		}
		if m == 0 {
			return buf[:n], buf, nil
		}
		n += m
		if int64(n) == st.Size && n < len(buf) {
			// The size fstat gave: done, without a read just to see end of file. A file that
			// grows meanwhile is read as it was at fstat (its mtime tells FileSync later).
			return buf[:n], buf, nil
		}
	}
}
