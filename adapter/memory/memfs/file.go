package memfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// File is an open file or directory of an FS. It implements fs.File, fs.ReadDirFile,
// io.ReadWriteCloser, io.Seeker and io.ReaderAt. A File is not safe for concurrent use by
// several goroutines, but several Files on one node are.
type File struct {
	mu     sync.Mutex // guards off, dirPos and closed
	fs     *FS
	n      *node
	name   string // base name for Stat
	path   string
	flag   int
	off    int64
	dirPos int
	dev    Device
	closed bool
}

// OpenFile opens name with os.OpenFile's flags (O_RDONLY, O_WRONLY, O_RDWR, O_APPEND, O_CREATE,
// O_EXCL, O_TRUNC). A final symlink is followed; parent directories must exist.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (*File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, err := f.walk(name, true, "/")
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if w.n == nil {
		if flag&os.O_CREATE == 0 {
			return nil, pathErr("open", name, fs.ErrNotExist)
		}
		if w.parent == nil {
			return nil, pathErr("open", name, syscall.EISDIR)
		}
		n := f.newNode(perm.Perm())
		w.parent.children[w.name] = n
		w.parent.mtime = n.mtime
		w.n = n
	} else {
		if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
			return nil, pathErr("open", name, fs.ErrExist)
		}
		if w.n.mode.IsDir() && writable {
			return nil, pathErr("open", name, syscall.EISDIR)
		}
		if flag&os.O_TRUNC != 0 && writable && w.n.dev == nil && w.n.mode.IsRegular() {
			f.size -= int64(len(w.n.data))
			w.n.data = nil
			w.n.mtime = f.now()
		}
	}
	file := &File{fs: f, n: w.n, name: w.name, path: w.path, flag: flag}
	if w.n.dev != nil {
		file.dev = w.n.dev()
	}
	if file.name == "" {
		file.name = "/"
	}
	return file, nil
}

// Open opens name for reading.
func (f *FS) Open(name string) (*File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

// Path returns the resolved absolute path the file was opened at.
func (fl *File) Path() string { return fl.path }

func (fl *File) Read(p []byte) (int, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return 0, fs.ErrClosed
	}
	if fl.flag&os.O_WRONLY != 0 {
		return 0, pathErr("read", fl.path, syscall.EBADF)
	}
	if fl.dev != nil {
		return fl.dev.Read(p)
	}
	n, err := fl.readAt(p, fl.off)
	fl.off += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

// ReadAt reads at an offset without moving the file offset.
func (fl *File) ReadAt(p []byte, off int64) (int, error) {
	fl.mu.Lock()
	closed := fl.closed
	fl.mu.Unlock()
	if closed {
		return 0, fs.ErrClosed
	}
	return fl.readAt(p, off)
}

func (fl *File) readAt(p []byte, off int64) (int, error) {
	if fl.n.mode.IsDir() {
		return 0, pathErr("read", fl.path, syscall.EISDIR)
	}
	if off < 0 {
		return 0, pathErr("read", fl.path, fs.ErrInvalid)
	}
	fl.fs.mu.RLock()
	data := fl.n.data
	fl.fs.mu.RUnlock()
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(p, data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (fl *File) Write(p []byte) (int, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return 0, fs.ErrClosed
	}
	if fl.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, pathErr("write", fl.path, syscall.EBADF)
	}
	if fl.dev != nil {
		return len(p), nil
	}
	f := fl.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	n := fl.n
	if fl.flag&os.O_APPEND != 0 {
		fl.off = int64(len(n.data))
	}
	end := fl.off + int64(len(p))
	grow := end - int64(len(n.data))
	if grow > 0 {
		if err := f.charge(grow); err != nil {
			return 0, pathErr("write", fl.path, err)
		}
	}
	switch {
	case fl.off == int64(len(n.data)):
		n.data = append(n.data, p...)
	default:
		// Writing over existing bytes (or past the end): copy, never modify shared bytes.
		size := max(end, int64(len(n.data)))
		data := make([]byte, size, size+size/4)
		copy(data, n.data)
		copy(data[fl.off:], p)
		n.data = data
	}
	fl.off = end
	n.mtime = f.now()
	return len(p), nil
}

// Seek moves the offset (whence as io.Seeker).
func (fl *File) Seek(offset int64, whence int) (int64, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return 0, fs.ErrClosed
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += fl.off
	case io.SeekEnd:
		fl.fs.mu.RLock()
		offset += int64(len(fl.n.data))
		fl.fs.mu.RUnlock()
	default:
		return 0, pathErr("seek", fl.path, fs.ErrInvalid)
	}
	if offset < 0 {
		return 0, pathErr("seek", fl.path, fs.ErrInvalid)
	}
	fl.off = offset
	fl.dirPos = 0
	return offset, nil
}

// Stat describes the open file.
func (fl *File) Stat() (fs.FileInfo, error) {
	fl.mu.Lock()
	closed := fl.closed
	fl.mu.Unlock()
	if closed {
		return nil, fs.ErrClosed
	}
	fl.fs.mu.RLock()
	defer fl.fs.mu.RUnlock()
	return infoOf(fl.name, fl.n), nil
}

// ReadDir reads directory entries as fs.ReadDirFile does.
func (fl *File) ReadDir(count int) ([]fs.DirEntry, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return nil, fs.ErrClosed
	}
	if !fl.n.mode.IsDir() {
		return nil, pathErr("readdir", fl.path, syscall.ENOTDIR)
	}
	fl.fs.mu.RLock()
	all := dirEntries(fl.n)
	fl.fs.mu.RUnlock()
	rest := all[min(fl.dirPos, len(all)):]
	if count <= 0 {
		fl.dirPos = len(all)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if count > len(rest) {
		count = len(rest)
	}
	fl.dirPos += count
	return rest[:count], nil
}

// Close releases the file; further calls fail with fs.ErrClosed.
func (fl *File) Close() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return fs.ErrClosed
	}
	fl.closed = true
	return nil
}
