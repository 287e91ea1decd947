package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// Descriptor ownership in this package (see the README's decisions):
//
//   - A descriptor that outlives the function that opened it is owned by exactly one *os.File,
//     whose Close is idempotent and safe from several goroutines. Only that File closes it.
//   - A bare descriptor number lives only on the stack of the function that opened it, and of the
//     synchronous callees it lends the number to, which neither close it nor keep it. The opener
//     closes it once, or hands it to an *os.File at once.
//   - A number that must be used while another goroutine may close its File (poll(2) over a
//     command's pipes and pidfd, descriptors sent to the isolation helper) is borrowed with
//     withFDs, which holds a reference on each File for the length of the call: a concurrent
//     Close then takes effect when the call returns, so the number never names another file.
//
// The io_uring of ReadTree (ring) is the one small owner type of its own: one goroutine uses it,
// and its close is idempotent.

// withFDs calls fn with the descriptor numbers of files (-1 for a nil file) while holding each
// file open. It fails with os.ErrClosed, without calling fn, if a file is already closed.
func withFDs(files []*os.File, fn func(fds []int) error) error {
	fds := make([]int, len(files))
	var borrow func(i int) error
	borrow = func(i int) error {
		for ; i < len(files) && files[i] == nil; i++ {
			fds[i] = -1
		}
		if i == len(files) {
			return fn(fds)
		}
		rc, err := files[i].SyscallConn()
		if err != nil {
			return err
		}
		var ferr error
		if err := rc.Control(func(fd uintptr) {
			fds[i] = int(fd)
			ferr = borrow(i + 1)
		}); err != nil {
			return err
		}
		return ferr
	}
	return borrow(0)
}

// pollableDup returns a duplicate of f, a non-blocking file, served by the runtime's poller (so
// that reads wait in the poller and read deadlines work), and closes f.
func pollableDup(f *os.File) (*os.File, error) {
	defer f.Close()
	var dup *os.File
	err := withFDs([]*os.File{f}, func(fds []int) error {
		nfd, err := unix.FcntlInt(uintptr(fds[0]), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return err
		}
		dup = os.NewFile(uintptr(nfd), f.Name()) // non-blocking: registered with the poller
		return nil
	})
	return dup, err
}
