package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
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
	if info.IsLink() {
		if info.Link, err = s.root.Readlink(r); err != nil {
			return adapter.FileInfo{}, mapErr("stat", p, err)
		}
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

// openWalk opens the directory a walk starts from ("" or "." is the workspace) through the root,
// and returns it with the workspace-relative prefix of its entries ("" at the root).
func (s *Sandbox) openWalk(dir string) (*os.File, string, error) {
	if err := s.checkOpen("list"); err != nil {
		return nil, "", err
	}
	if dir == "" {
		dir = "."
	}
	r, err := s.rel("list", dir)
	if err != nil {
		return nil, "", err
	}
	f, err := s.openDir("list", dir, r, false)
	if r == "." {
		r = ""
	}
	return f, r, err
}

// ListFiles walks dir with directory file descriptors (adapter.ListFilesAt).
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	return walk(ctx, s, dir, adapter.ListFilesAt)
}

// ListDirs lists every directory under dir, walked as ListFiles walks (adapter.DirLister: a
// snapshot finds empty directories without starting a process).
func (s *Sandbox) ListDirs(ctx context.Context, dir string) ([]string, error) {
	return walk(ctx, s, dir, adapter.ListDirsAt)
}

// walk opens dir and lists it with list.
func walk[T any](ctx context.Context, s *Sandbox, dir string, list func(context.Context, *os.File, string, func(string) bool) ([]T, error)) ([]T, error) {
	f, prefix, err := s.openWalk(dir)
	if err != nil {
		return nil, err
	}
	out, err := list(ctx, f, prefix, nil)
	if err != nil {
		return nil, mapErr("list", dir, err)
	}
	return out, nil
}

var _ adapter.DirLister = (*Sandbox)(nil)

func timespec(ts unix.Timespec) time.Time { return time.Unix(ts.Unix()) }

// treeQueueMax bounds the directories queued (each holding an open descriptor) during ReadTree;
// past it a worker walks a subdirectory itself, depth first.
const treeQueueMax = 64

// treeBatch is the number of files a ReadTree worker opens, reads and closes together through
// its io_uring (whose ring holds the reads and closes of a whole batch). treeReadMax bounds the
// files read that way, and so the batch's buffers: a larger file is read with read(2), whose call
// is small beside copying and hashing the file. A worker sets up its ring (~100 µs) at its first
// batch of treeRingMin files or more; smaller batches before that are read with plain calls, so
// that a small tree does not pay for a ring.
const (
	treeBatch       = 32
	treeRingEntries = 2 * treeBatch
	treeReadMax     = 128 << 10
	treeRingMin     = 8
)

// ReadTree implements adapter.TreeReader: workers walk directories in parallel with directory
// file descriptors (getdents, openat with O_NOFOLLOW, fstat on the open file), so the walk can
// neither leave the workspace nor be redirected mid-way. Each worker opens, reads and closes the
// files of a directory in batches through an io_uring (two io_uring_enter calls per batch, and
// an fstat per file), or, where io_uring is unusable, with one openat, fstat, read and close per
// file.
func (s *Sandbox) ReadTree(ctx context.Context, dir string, workers int, want func(string) bool, fn func(adapter.FileInfo, []byte) error) error {
	f, prefix, err := s.openWalk(dir)
	if err != nil {
		return err
	}
	t := &tree{ctx: ctx, limit: adapter.ReadLimit(ctx), want: want, fn: fn, dirs: []treeDir{{f, prefix}}}
	t.cond = sync.NewCond(&t.mu)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &treeWorker{t: t}
			defer w.close()
			w.work()
		}()
	}
	wg.Wait()
	for _, d := range t.dirs { // left over after an error
		d.f.Close()
	}
	var fe fnError
	switch {
	case t.err == nil:
		return nil
	case errors.As(t.err, &fe):
		return fe.err
	case errs.CodeOf(t.err) != "", errors.Is(t.err, context.Canceled), errors.Is(t.err, context.DeadlineExceeded):
		return t.err
	}
	return mapErr("list", dir, t.err)
}

// fnError carries an error of ReadTree's fn, returned as it is.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

type treeDir struct {
	f      *os.File
	prefix string
}

// tree is the shared state of one ReadTree: a queue of open directories and the first error.
type tree struct {
	ctx    context.Context
	limit  int64 // adapter.ReadLimit(ctx): larger files are passed unread
	want   func(string) bool
	fn     func(adapter.FileInfo, []byte) error
	mu     sync.Mutex
	cond   *sync.Cond
	dirs   []treeDir
	active int // directories being walked
	err    error
}

// treeWorker is one ReadTree worker and what it reuses from file to file.
type treeWorker struct {
	t      *tree
	buf    []byte     // file buffer of the plain path and of files over treeReadMax
	dbuf   []byte     // getdents buffer of the directory taken from the queue
	ring   *ring      // set up at the first batch of treeRingMin files
	noRing bool       // io_uring is unusable: plain system calls
	batch  []treeFile // regular files waiting for the ring
	found  []treeDir  // directories a batch found (files replaced by directories since getdents)
}

// treeFile is one regular file of a batch; name and buf keep their capacity for the next batch.
type treeFile struct {
	dir  *os.File // its directory, open until the batch is done
	name []byte   // NUL-terminated
	rel  string
	fd   int32 // open result: a descriptor, or -errno
	st   unix.Stat_t
	how  uint8
	res  int32 // read result: bytes, or -errno
	buf  []byte
}

// testHookBatch, set by tests, runs for each file of a batch before its open ("open") and after
// its fstat ("stat").
var testHookBatch func(stage, path string)

// What a batch does with an open file after its fstat.
const (
	howNone  = iota // not open (or no longer the batch's)
	howRing         // read and closed through the ring
	howClose        // closed through the ring
	howPlain        // read with read(2) and closed, after the ring
	howRetry        // not opened through the ring: read with plain calls, after the ring
)

func (w *treeWorker) close() {
	if w.ring != nil {
		w.ring.close()
	}
}

// dropRing closes the worker's ring after it failed; the worker goes on with plain calls.
func (w *treeWorker) dropRing() {
	w.ring.close()
	w.ring, w.noRing = nil, true
}

func (w *treeWorker) work() {
	t := w.t
	for {
		t.mu.Lock()
		for len(t.dirs) == 0 && t.active > 0 && t.err == nil {
			t.cond.Wait()
		}
		if t.err != nil || len(t.dirs) == 0 {
			t.cond.Broadcast()
			t.mu.Unlock()
			return
		}
		d := t.dirs[len(t.dirs)-1]
		t.dirs = t.dirs[:len(t.dirs)-1]
		t.active++
		t.mu.Unlock()
		if w.dbuf == nil {
			w.dbuf = make([]byte, 32<<10)
		}
		err := w.walk(d, w.dbuf)
		t.mu.Lock()
		t.active--
		if err != nil && t.err == nil {
			t.err = err
		}
		if t.active == 0 || t.err != nil {
			t.cond.Broadcast()
		}
		t.mu.Unlock()
	}
}

// push queues a subdirectory unless the queue is full or the walk already failed.
func (t *tree) push(d treeDir) (queued, failed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return false, true
	}
	if len(t.dirs) >= treeQueueMax {
		return false, false
	}
	t.dirs = append(t.dirs, d)
	t.cond.Signal()
	return true, false
}

// walk reads the files of the open directory d (closed on return) and queues or walks its
// subdirectories, reading its entries with dbuf. The files it batched are done when it returns.
func (w *treeWorker) walk(d treeDir, dbuf []byte) error {
	defer d.f.Close()
	err := w.walkDir(d, dbuf)
	if err != nil {
		w.batch = w.batch[:0] // nothing of the batch is open yet
		return err
	}
	return w.flush()
}

// entry handles one directory entry of the directory open as fd; name is valid only during the
// call.
func (w *treeWorker) entry(d treeDir, fd int, name []byte, typ byte) error {
	rel := string(name)
	if d.prefix != "" {
		rel = d.prefix + "/" + rel
	}
	if typ == unix.DT_UNKNOWN { // the file system does not say: ask
		var st unix.Stat_t
		if err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return &fs.PathError{Op: "fstatat", Path: rel, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			typ = unix.DT_REG
		case unix.S_IFDIR:
			typ = unix.DT_DIR
		case unix.S_IFLNK:
			typ = unix.DT_LNK
		default:
			return nil
		}
	}
	switch typ {
	case unix.DT_LNK: // passed with its target text, never followed
		if w.t.want != nil && !w.t.want(rel) {
			return nil
		}
		var st unix.Stat_t
		err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return &fs.PathError{Op: "fstatat", Path: rel, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return nil // replaced since getdents; the next walk sees what it is
		}
		info, err := adapter.LinkInfoAt(fd, string(name), rel, &st)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.t.fn(info, nil); err != nil {
			return fnError{err}
		}
		return nil
	case unix.DT_DIR:
		cfd, err := unix.Openat(fd, string(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return &fs.PathError{Op: "openat", Path: rel, Err: err}
		}
		return w.dir(treeDir{os.NewFile(uintptr(cfd), rel), rel})
	case unix.DT_REG:
	default:
		return nil // symlinks, devices, sockets, fifos: not listed
	}
	if w.t.want != nil && !w.t.want(rel) {
		return nil
	}
	if w.noRing {
		sub, isDir, err := w.readPlain(fd, string(name), rel)
		if err != nil || !isDir {
			return err
		}
		return w.dir(sub)
	}
	n := len(w.batch)
	if n < cap(w.batch) {
		w.batch = w.batch[:n+1]
	} else {
		w.batch = append(w.batch, treeFile{})
	}
	f := &w.batch[n]
	f.dir, f.rel = d.f, rel
	f.name = append(append(f.name[:0], name...), 0)
	if n+1 == treeBatch {
		return w.flush()
	}
	return nil
}

// readPlain reads the regular file name of the directory open as dfd with plain system calls and
// passes it to fn. A file replaced by a directory since getdents is returned as one, to walk.
func (w *treeWorker) readPlain(dfd int, name, rel string) (sub treeDir, isDir bool, err error) {
	ffd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) { // gone, or now a symlink
			return treeDir{}, false, nil
		}
		return treeDir{}, false, &fs.PathError{Op: "openat", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(ffd, &st); err != nil {
		unix.Close(ffd)
		return treeDir{}, false, &fs.PathError{Op: "fstat", Path: rel, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR: // replaced by a directory since getdents: walk it, so nothing is missed
		return treeDir{os.NewFile(uintptr(ffd), rel), rel}, true, nil
	default:
		unix.Close(ffd)
		return treeDir{}, false, nil
	}
	if st.Size > w.t.limit { // passed unread
		unix.Close(ffd)
		return treeDir{}, false, w.emit(rel, &st, nil)
	}
	data, buf, err := readFD(ffd, rel, &st, w.buf, w.t.limit)
	w.buf = buf
	unix.Close(ffd)
	if errs.CodeOf(err) == errs.FileTooLarge { // grew past the limit while being read
		return treeDir{}, false, w.emit(rel, &st, nil)
	}
	if err != nil {
		return treeDir{}, false, err
	}
	return treeDir{}, false, w.emit(rel, &st, data)
}

func (w *treeWorker) emit(rel string, st *unix.Stat_t, data []byte) error {
	info := adapter.FileInfo{Path: rel, Size: st.Size, Mode: fs.FileMode(st.Mode & 0o777), ModTime: timespec(st.Mtim), Inode: st.Ino}
	if err := w.t.fn(info, data); err != nil {
		return fnError{err}
	}
	return nil
}

// flush reads the batched files, then walks the directories the batch found.
func (w *treeWorker) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	b := w.batch
	w.batch = w.batch[:0]
	if w.ring == nil && !w.noRing && len(b) >= treeRingMin {
		w.ring = newRing(treeRingEntries)
		w.noRing = w.ring == nil
	}
	var err error
	if w.ring != nil {
		err = w.readBatch(b)
	} else {
		err = w.readEach(b)
	}
	found := w.found
	w.found = nil
	for _, d := range found {
		if err == nil {
			err = w.dir(d)
		} else {
			d.f.Close()
		}
	}
	return err
}

// readEach reads the files of b one by one with plain calls.
func (w *treeWorker) readEach(b []treeFile) error {
	for i := range b {
		if err := w.retry(&b[i]); err != nil {
			return err
		}
	}
	return nil
}

// retry reads a file of a batch again with plain calls.
func (w *treeWorker) retry(f *treeFile) error {
	sub, isDir, err := w.readPlain(int(f.dir.Fd()), string(f.name[:len(f.name)-1]), f.rel)
	if isDir {
		w.found = append(w.found, sub)
	}
	return err
}

// dir queues the open subdirectory d, or walks it here when the queue is full.
func (w *treeWorker) dir(d treeDir) error {
	queued, failed := w.t.push(d)
	if queued {
		return nil
	}
	if failed {
		d.f.Close()
		return nil // the first error is already recorded
	}
	return w.walk(d, make([]byte, 32<<10))
}
