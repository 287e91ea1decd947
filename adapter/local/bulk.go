package local

import (
	"context"
	"errors"
	"os"
	"path"
	"strconv"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// The fast file paths: a directory is opened once through os.Root (which refuses escapes), and
// the file itself is then handled relative to that directory's descriptor with a single path
// component and O_NOFOLLOW, so nothing can redirect it. A final symlink is left to the slow path,
// which resolves it inside the workspace or refuses it.

// errFinalSymlink says the last component is a symlink: take the slow, link-resolving path.
var errFinalSymlink = errors.New("final component is a symlink")

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
	fd := int(d.Fd())
	perm := uint32(0o644)
	var st unix.Stat_t
	switch err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			perm = st.Mode & 0o7777
		case unix.S_IFLNK:
			return errFinalSymlink
		default:
			return errs.New(errs.InvalidInput, op, p, "not a regular file")
		}
	case errors.Is(err, unix.ENOENT):
	default:
		return mapErr(op, p, err)
	}
	for {
		tmp := ".sandboxer-" + s.tempID + "-" + strconv.FormatUint(tempSeq.Add(1), 36)
		tfd, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return mapErr(op, p, err)
		}
		f := os.NewFile(uintptr(tfd), tmp)
		_, werr := f.Write(data)
		if err := errors.Join(werr, f.Close()); err != nil {
			_ = unix.Unlinkat(fd, tmp, 0)
			return mapErr(op, p, err)
		}
		if err := unix.Renameat(fd, tmp, fd, name); err != nil {
			_ = unix.Unlinkat(fd, tmp, 0)
			return mapErr(op, p, err)
		}
		return nil
	}
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
			err = s.writeThroughLink(file.Path, r, file.Data)
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

// A minimal io_uring, for ReadTree: it opens, reads and closes a batch of files with two
// io_uring_enter calls instead of three system calls per file, which is most of what a small
// file costs where system calls are expensive (a VM with page-table isolation: ~1 µs each).
// Only what ReadTree needs is here: no SQPOLL, no registered files or buffers, one submitter.

// The io_uring ABI (include/uapi/linux/io_uring.h).
const (
	uringOpOpenat = 18
	uringOpClose  = 19
	uringOpRead   = 22

	uringSQEHardlink = 1 << 3 // IOSQE_IO_HARDLINK: run the next SQE even if this one fails

	uringSetupSubmitAll   = 1 << 7 // IORING_SETUP_SUBMIT_ALL
	uringSetupCoopTaskrun = 1 << 8 // IORING_SETUP_COOP_TASKRUN

	uringFeatSingleMmap    = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	uringFeatNativeWorkers = 1 << 9 // IORING_FEAT_NATIVE_WORKERS (5.12): async work runs in threads of this process

	uringEnterGetevents = 1 << 0

	uringOffSQRing = 0
	uringOffSQEs   = 0x10000000
)

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	// io_sqring_offsets: head, tail, ring_mask, ring_entries, flags, dropped, array, resv1, user_addr (u64).
	sqOff [10]uint32
	// io_cqring_offsets: head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1, user_addr (u64).
	cqOff [10]uint32
}

type uringSQE struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	_        [3]uint64 // buf_index, personality, file_index, addr3, pad: all zero here
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// ring is one io_uring instance, and the only owner of its descriptor and mappings. It is used by
// one goroutine at a time.
type ring struct {
	fd             int
	closed         atomic.Bool
	rings, sqeMem  []byte
	sqHead, sqTail *uint32
	cqHead, cqTail *uint32
	sqMask, cqMask uint32
	sqes           []uringSQE
	cqes           []uringCQE
	queued         uint32 // SQEs filled since the last submit
}

// uringOff is set once io_uring turned out to be unusable here (an old kernel, a seccomp
// filter, the io_uring_disabled sysctl): ReadTree then makes plain system calls.
var uringOff atomic.Bool

// newRing returns a ring of entries SQEs (a power of two), or nil where io_uring is unusable.
func newRing(entries uint32) *ring {
	if uringOff.Load() {
		return nil
	}
	r, err := setupRing(entries, uringSetupSubmitAll|uringSetupCoopTaskrun)
	if errors.Is(err, unix.EINVAL) { // flags newer than the kernel (5.18, 5.19)
		r, err = setupRing(entries, 0)
	}
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) ||
			errors.Is(err, unix.EINVAL) || errors.Is(err, errUringOld) {
			uringOff.Store(true)
		}
		return nil
	}
	return r
}

var errUringOld = errors.New("io_uring: kernel older than 5.12")

func setupRing(entries, flags uint32) (*ring, error) {
	p := uringParams{flags: flags}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, e
	}
	r := &ring{fd: int(fd)}
	if p.features&uringFeatSingleMmap == 0 || p.features&uringFeatNativeWorkers == 0 {
		r.close()
		return nil, errUringOld
	}
	size := max(p.sqOff[6]+p.sqEntries*4, p.cqOff[5]+p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	var err error
	if r.rings, err = unix.Mmap(r.fd, uringOffSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.close()
		return nil, err
	}
	if r.sqeMem, err = unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.close()
		return nil, err
	}
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&r.rings[off])) }
	r.sqHead, r.sqTail, r.sqMask = at(p.sqOff[0]), at(p.sqOff[1]), *at(p.sqOff[2])
	r.cqHead, r.cqTail, r.cqMask = at(p.cqOff[0]), at(p.cqOff[1]), *at(p.cqOff[2])
	array := unsafe.Slice(at(p.sqOff[6]), p.sqEntries)
	for i := range array { // SQE i is always at index i
		array[i] = uint32(i)
	}
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&r.rings[p.cqOff[5]])), p.cqEntries)
	return r, nil
}

// close releases the ring; it is idempotent.
func (r *ring) close() {
	if r.closed.Swap(true) {
		return
	}
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
	}
	if r.rings != nil {
		_ = unix.Munmap(r.rings)
	}
	_ = unix.Close(r.fd)
}

// sqe returns the next free SQE, zeroed. At most the ring's entries may be queued between two
// runs.
func (r *ring) sqe() *uringSQE {
	e := &r.sqes[(atomic.LoadUint32(r.sqTail)+r.queued)&r.sqMask]
	*e = uringSQE{}
	r.queued++
	return e
}

// run submits the queued SQEs and calls fn for each completion until want of them arrived. The
// memory the SQEs point to must stay alive until run returns. An error leaves completions
// unreaped (whatever they opened stays open): it means the ring itself failed.
func (r *ring) run(want int, fn func(userData uint64, res int32)) error {
	tail := atomic.LoadUint32(r.sqTail) + r.queued
	atomic.StoreUint32(r.sqTail, tail)
	r.queued = 0
	got := 0
	for {
		got += r.reap(fn)
		submit := tail - atomic.LoadUint32(r.sqHead)
		if got >= want && submit == 0 {
			return nil
		}
		var flags, wait uintptr
		if got < want {
			flags, wait = uringEnterGetevents, uintptr(want-got)
		}
		_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), wait, flags, 0, 0)
		switch e {
		case 0, unix.EINTR, unix.EAGAIN, unix.EBUSY:
		default:
			return e
		}
	}
}

// reap calls fn for each completion in the ring and returns their number.
func (r *ring) reap(fn func(userData uint64, res int32)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		c := &r.cqes[head&r.cqMask]
		fn(c.userData, c.res)
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}
