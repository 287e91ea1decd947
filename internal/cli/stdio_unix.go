//go:build unix

package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns a non-blocking duplicate of in's descriptor when in is a pipe or a socket, so
// that the Go runtime polls it instead of blocking a thread in read(2), and so that closing it
// ends a read in progress. It returns nil for anything else.
//
// The duplicate shares the open file description, so the input becomes non-blocking for every
// holder of it: nothing else in this process reads it, and commands never inherit it.
func pollable(in io.Reader) *os.File {
	f, ok := in.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if cerr := sc.Control(func(orig uintptr) {
		fd, err = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	}); cerr != nil || err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), f.Name())
}

// readerGone reports whether w is a pipe or socket whose reading end is closed: the client went
// away, so nothing more written would reach it.
func readerGone(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	sc, err := f.SyscallConn() // not Fd, which would make the file blocking
	if err != nil {
		return false
	}
	gone := false
	sc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, 0)
		gone = err == nil && n == 1 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
	})
	return gone
}
