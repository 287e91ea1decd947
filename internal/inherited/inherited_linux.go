package inherited

import (
	"errors"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Close closes every descriptor above 2 that this process inherited across its exec, except
// those in keep, before the process uses any.
//
// What this process opened itself is close-on-exec (the Go runtime and the standard library
// open everything so), and what it inherited is not (the exec closed those that were): Close
// closes the open descriptors without FD_CLOEXEC, each run of consecutive ones with one
// close_range(2) (a loop of close(2) on kernels without it, before 5.9). A blanket close_range
// above 2 would also close what the runtime may have opened before main: the poller's epoll and
// event descriptors, made when a standard stream is non-blocking.
func Close(keep ...int) error {
	fds, err := open()
	if err != nil {
		return err
	}
	lo, hi := -1, -1
	flush := func() {
		if lo >= 0 {
			closeRange(lo, hi)
		}
		lo, hi = -1, -1
	}
	for _, fd := range fds {
		if fd <= 2 || slices.Contains(keep, fd) || !isInherited(fd) {
			flush()
			continue
		}
		if lo >= 0 && fd == hi+1 {
			hi = fd
			continue
		}
		flush()
		lo, hi = fd, fd
	}
	flush()
	return nil
}

// isInherited reports whether fd is open without close-on-exec.
func isInherited(fd int) bool {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil && flags&unix.FD_CLOEXEC == 0
}

// closeRange closes the descriptors lo to hi.
func closeRange(lo, hi int) {
	if unix.CloseRange(uint(lo), uint(hi), 0) == nil {
		return
	}
	for fd := lo; fd <= hi; fd++ {
		_ = unix.Close(fd)
	}
}

// open lists this process's open descriptors, in ascending order: /proc/self/fd, or where /proc
// is not mounted every number below the limit of open files that F_GETFD finds open.
func open() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err == nil {
		fds := make([]int, 0, len(entries))
		for _, e := range entries {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				fds = append(fds, fd)
			}
		}
		slices.Sort(fds)
		return fds, nil
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return nil, errors.Join(errors.New("inherited: no /proc/self/fd and no RLIMIT_NOFILE"), err)
	}
	var fds []int
	for fd := 0; uint64(fd) < min(lim.Cur, 1<<20); fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds, nil
}
