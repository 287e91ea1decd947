package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path"
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

// ListFiles walks dir with directory file descriptors (openat, fstatat, never following a
// symlink), so the walk can neither leave the workspace nor be redirected mid-way.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	f, prefix, err := s.openWalk(dir)
	if err != nil {
		return nil, err
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

// treeQueueMax bounds the directories queued (each holding an open descriptor) during ReadTree;
// past it a worker walks a subdirectory itself, depth first.
const treeQueueMax = 64

// ReadTree implements adapter.TreeReader: workers walk directories in parallel with directory
// file descriptors (getdents, openat with O_NOFOLLOW, fstat on the open file), so each file costs
// one open, one fstat, its reads and one close, and the walk can neither leave the workspace nor
// be redirected mid-way.
func (s *Sandbox) ReadTree(ctx context.Context, dir string, workers int, want func(string) bool, fn func(adapter.FileInfo, []byte) error) error {
	f, prefix, err := s.openWalk(dir)
	if err != nil {
		return err
	}
	t := &tree{ctx: ctx, want: want, fn: fn, dirs: []treeDir{{f, prefix}}}
	t.cond = sync.NewCond(&t.mu)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.work()
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
	want   func(string) bool
	fn     func(adapter.FileInfo, []byte) error
	mu     sync.Mutex
	cond   *sync.Cond
	dirs   []treeDir
	active int // directories being walked
	err    error
}

func (t *tree) work() {
	var buf, dbuf []byte
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
		var err error
		buf, dbuf, err = t.walk(d, buf, dbuf)
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
// subdirectories. buf is the file buffer and dbuf the getdents buffer, returned for reuse.
func (t *tree) walk(d treeDir, buf, dbuf []byte) ([]byte, []byte, error) {
	defer d.f.Close()
	if err := t.ctx.Err(); err != nil {
		return buf, dbuf, err
	}
	fd := int(d.f.Fd())
	if dbuf == nil {
		dbuf = make([]byte, 32<<10)
	}
	for {
		n, err := unix.Getdents(fd, dbuf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf, dbuf, &fs.PathError{Op: "getdents", Path: d.prefix, Err: err}
		}
		if n <= 0 {
			return buf, dbuf, nil
		}
		for rec := dbuf[:n]; len(rec) > 0; {
			// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
			reclen := int(binary.NativeEndian.Uint16(rec[16:18]))
			typ := rec[18]
			name := rec[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			rec = rec[reclen:]
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			if buf, err = t.entry(d, fd, string(name), typ, buf); err != nil {
				return buf, dbuf, err
			}
		}
	}
}

// entry handles one directory entry of the directory open as fd.
func (t *tree) entry(d treeDir, fd int, name string, typ byte, buf []byte) ([]byte, error) {
	rel := name
	if d.prefix != "" {
		rel = d.prefix + "/" + name
	}
	if typ == unix.DT_UNKNOWN { // the file system does not say: ask
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return buf, nil
			}
			return buf, &fs.PathError{Op: "fstatat", Path: rel, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			typ = unix.DT_REG
		case unix.S_IFDIR:
			typ = unix.DT_DIR
		default:
			return buf, nil
		}
	}
	switch typ {
	case unix.DT_DIR:
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return buf, nil
			}
			return buf, &fs.PathError{Op: "openat", Path: rel, Err: err}
		}
		return t.dir(treeDir{os.NewFile(uintptr(cfd), rel), rel}, buf)
	case unix.DT_REG:
	default:
		return buf, nil // symlinks, devices, sockets, fifos: not listed
	}
	if t.want != nil && !t.want(rel) {
		return buf, nil
	}
	ffd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) { // gone, or now a symlink
			return buf, nil
		}
		return buf, &fs.PathError{Op: "openat", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(ffd, &st); err != nil {
		unix.Close(ffd)
		return buf, &fs.PathError{Op: "fstat", Path: rel, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR: // replaced by a directory since getdents: walk it, so nothing is missed
		return t.dir(treeDir{os.NewFile(uintptr(ffd), rel), rel}, buf)
	default:
		unix.Close(ffd)
		return buf, nil
	}
	data, buf, err := readFD(ffd, rel, &st, buf)
	unix.Close(ffd)
	if err != nil {
		return buf, err
	}
	info := adapter.FileInfo{Path: rel, Size: st.Size, Mode: fs.FileMode(st.Mode & 0o777), ModTime: timespec(st.Mtim), Inode: st.Ino}
	if err := t.fn(info, data); err != nil {
		return buf, fnError{err}
	}
	return buf, nil
}

// dir queues the open subdirectory d, or walks it here when the queue is full.
func (t *tree) dir(d treeDir, buf []byte) ([]byte, error) {
	queued, failed := t.push(d)
	if queued {
		return buf, nil
	}
	if failed {
		d.f.Close()
		return buf, nil // the first error is already recorded
	}
	buf, _, err := t.walk(d, buf, nil)
	return buf, err
}
