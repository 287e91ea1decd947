//go:build linux && !sandboxer_portable

package local

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

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

// readBatch opens the files of b through the ring (one round trip), fstats each, reads and
// closes them through the ring (a second round trip), and passes each to fn. Every descriptor
// it opened is closed when it returns, except directories, which go to w.found.
func (w *treeWorker) readBatch(b []treeFile) error {
	r := w.ring
	defer runtime.KeepAlive(b) // the SQEs point into it
	for i := range b {
		f := &b[i]
		f.fd, f.how = -1, howNone
		if testHookBatch != nil {
			testHookBatch("open", f.rel)
		}
		e := r.sqe()
		e.opcode = uringOpOpenat
		e.fd = int32(f.dir.Fd())
		e.addr = uint64(uintptr(unsafe.Pointer(&f.name[0])))
		e.opFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
		e.userData = uint64(i)
	}
	if err := r.run(len(b), func(i uint64, res int32) { b[i].fd = res }); err != nil {
		w.dropRing()
		for i := range b {
			if b[i].fd >= 0 {
				unix.Close(int(b[i].fd))
			}
		}
		return &fs.PathError{Op: "io_uring_enter", Path: b[0].rel, Err: err}
	}

	// fstat each open file, which decides what becomes of it. After an error, files are only
	// closed.
	var err error
	for i := range b {
		f := &b[i]
		if f.fd < 0 {
			// Gone, now a symlink, or a failure: the plain path decides which, as it does
			// without a ring.
			f.how = howRetry
			continue
		}
		f.how = howClose
		if err != nil {
			continue
		}
		if e := unix.Fstat(int(f.fd), &f.st); e != nil {
			err = &fs.PathError{Op: "fstat", Path: f.rel, Err: e}
			continue
		}
		if testHookBatch != nil {
			testHookBatch("stat", f.rel)
		}
		switch f.st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			f.how = howRing
			if f.st.Size >= treeReadMax {
				f.how = howPlain
			}
		case unix.S_IFDIR: // replaced by a directory since getdents: walk it, so nothing is missed
			w.found = append(w.found, treeDir{os.NewFile(uintptr(f.fd), f.rel), f.rel})
			f.how = howNone
		}
	}

	// Read and close through the ring: the close is hard-linked to the read, so it runs whatever
	// the read did.
	want := 0
	for i := range b {
		f := &b[i]
		if f.how == howRing && err == nil {
			if need := max(int(f.st.Size), 1); cap(f.buf) < need {
				f.buf = make([]byte, max(need, min(2*cap(f.buf), treeReadMax), 4<<10))
			}
			e := r.sqe()
			e.opcode = uringOpRead
			e.flags = uringSQEHardlink
			e.fd = f.fd
			e.addr = uint64(uintptr(unsafe.Pointer(&f.buf[0])))
			// Exactly the size fstat gave, as readFD stops there: asking for more would make
			// io_uring take the end of file for a short read and read again to confirm it. An
			// empty file is asked for one byte, to see that it is.
			e.len = uint32(max(f.st.Size, 1))
			e.userData = uint64(i) << 1
			f.res = -int32(unix.EAGAIN)
			want++
		} else if f.how == howRing || f.how == howClose {
			f.how = howClose
		} else {
			continue
		}
		e := r.sqe()
		e.opcode = uringOpClose
		e.fd = f.fd
		e.userData = uint64(i)<<1 | 1
		want++
	}
	if want > 0 {
		rerr := r.run(want, func(ud uint64, res int32) {
			if ud&1 == 0 {
				b[ud>>1].res = res
			}
		})
		if rerr != nil {
			// Requests may still complete (a close among them): the ring is dropped, so no
			// later batch mistakes their completions for its own, and no file the ring was
			// to close is closed here, as the ring may close it yet.
			w.dropRing()
			for i := range b {
				if b[i].how == howRing || b[i].how == howClose {
					b[i].how = howNone
				}
			}
			if err == nil {
				err = &fs.PathError{Op: "io_uring_enter", Path: b[0].rel, Err: rerr}
			}
		}
	}

	// Hand the contents over.
	for i := range b {
		f := &b[i]
		switch f.how {
		case howRing:
			if err != nil {
				continue
			}
			if int64(f.res) == f.st.Size {
				// What fstat said. A file that grew meanwhile is read as it was at fstat, as
				// readFD does when its read stops there; its mtime tells FileSync later.
				err = w.emit(f.rel, &f.st, f.buf[:f.res])
				continue
			}
			// Shorter than fstat said, an empty file that is not, or a failed read: read the
			// file again with plain calls, to its end, which also reports a failure as the
			// plain path does.
			err = w.retry(f)
		case howRetry:
			if err == nil {
				err = w.retry(f)
			}
		case howPlain:
			if err == nil {
				var data []byte
				data, w.buf, err = readFD(int(f.fd), f.rel, &f.st, w.buf)
				if err == nil {
					err = w.emit(f.rel, &f.st, data)
				}
			}
			unix.Close(int(f.fd))
		}
	}
	return err
}
