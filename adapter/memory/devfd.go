package memory

import (
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter/memory/coreutils"
)

// stdioFS is the tree as a utility sees it, with the names Linux gives a process's descriptors:
// /dev/stdin, /dev/stdout, /dev/stderr and /dev/fd/N are the utility's standard streams and the
// calling shell's descriptors above 2 (exec 3>log; tee /dev/fd/3), never files of the tree.
type stdioFS struct {
	coreutils.FS
	stdin          io.Reader
	stdout, stderr io.Writer
	fd             func(n int) (io.Reader, io.Writer, bool) // the shell's descriptors; nil if none
}

// stream reports whether name is one of the descriptor names, and if so the descriptor's ends
// (nil when it is not open that way) and whether it is open at all.
func (s stdioFS) stream(name string) (r io.Reader, w io.Writer, isStream, open bool) {
	switch name {
	case "/dev/stdin", "/dev/fd/0":
		if f, ok := s.stdin.(*os.File); s.stdin == nil || ok && f == nil {
			return strings.NewReader(""), nil, true, true
		}
		return s.stdin, nil, true, true
	case "/dev/stdout", "/dev/fd/1":
		return nil, s.stdout, true, s.stdout != nil
	case "/dev/stderr", "/dev/fd/2":
		return nil, s.stderr, true, s.stderr != nil
	}
	rest, ok := strings.CutPrefix(name, "/dev/fd/")
	if !ok {
		return nil, nil, false, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 3 || s.fd == nil {
		return nil, nil, true, false
	}
	r, w, open = s.fd(n)
	return r, w, true, open
}

func (s stdioFS) OpenFile(name string, flag int, perm fs.FileMode) (coreutils.File, error) {
	r, w, isStream, open := s.stream(name)
	if !isStream {
		return s.FS.OpenFile(name, flag, perm)
	}
	if !open {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return streamFile{nopRWC{r: r, w: w}, name}, nil
}

func (s stdioFS) Stat(name string, follow bool) (fs.FileInfo, error) {
	_, _, isStream, open := s.stream(name)
	if !isStream {
		return s.FS.Stat(name, follow)
	}
	if !open {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return streamInfo(name), nil
}

func (s stdioFS) Content(name string) ([]byte, error) {
	r, _, isStream, open := s.stream(name)
	switch {
	case !isStream:
		return s.FS.Content(name)
	case !open:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case r == nil:
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EBADF}
	}
	return io.ReadAll(r)
}

func (s stdioFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	_, w, isStream, open := s.stream(name)
	switch {
	case !isStream:
		return s.FS.WriteFile(name, data, perm)
	case !open:
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case w == nil:
		return &fs.PathError{Op: "write", Path: name, Err: syscall.EBADF}
	}
	_, err := w.Write(data)
	return err
}

// streamFile is an open descriptor name: reads and writes go to the descriptor.
type streamFile struct {
	nopRWC
	name string
}

func (f streamFile) Stat() (fs.FileInfo, error) { return streamInfo(f.name), nil }

// streamInfo describes a descriptor name as a pipe, which is what it most often is.
type streamInfo string

func (i streamInfo) Name() string     { return path.Base(string(i)) }
func (streamInfo) Size() int64        { return 0 }
func (streamInfo) Mode() fs.FileMode  { return fs.ModeNamedPipe | 0o600 }
func (streamInfo) ModTime() time.Time { return time.Time{} }
func (streamInfo) IsDir() bool        { return false }
func (streamInfo) Sys() any           { return nil }
func (i streamInfo) String() string   { return string(i) }
