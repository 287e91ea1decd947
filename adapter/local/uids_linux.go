//go:build linux && !sandboxer_portable

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A host uid per sandbox (root callers). Every sandbox a root caller makes runs its commands as a
// host uid of its own, HostUID+1 .. HostUID+uidSlots, leased when its isolation is prepared and
// released when it stops: per-uid kernel state (the key quota and the keys a uid may read, the
// inotify instances and watches, the user namespaces) is then no other sandbox's.
//
// The lease is an exclusive flock(2) on the file named after the uid in a root-only directory
// (uidDirName under /run, or else the system's temporary directory), held for the sandbox's life
// by whichever process made it (several sandboxer processes and the resident server allocate at
// once): the kernel releases the lock of an owner that dies. Allocation and release both hold the
// lock of the directory itself, so a lock file is removed only by its holder, and never while
// another allocator has it open. Uids are handed out round-robin (the file "next" keeps the
// cursor): a uid comes back only after every other one was handed out, long after everything of
// its last sandbox is gone (its processes die with the sandbox's PID namespace, its keys with its
// user namespace and helper, which the kernel's key collector frees within moments).

// uidSlots is the number of sandbox uids after HostUID: HostUID itself is what every sandbox
// shares when no uid can be leased (the layer uid-per-sandbox is then missing).
const uidSlots = 65535

const uidDirName = "sandboxer-uids"

// uids are the sandbox uids, HostUID+1 .. HostUID+uidSlots.
var uids = newLeaseSet("sandbox uids", uidDirName, HostUID+1, uidSlots)

// uidDir is the directory of the uids' leases, opened once per process.
func uidDir() (*os.File, error) { return uids.dir() }

// allocUID leases the next free sandbox uid after the cursor.
func allocUID() (*lease, error) { return uids.alloc(-1) }

// allocUIDFrom leases the first free sandbox uid from slot start (0 .. uidSlots-1; -1: the
// cursor's).
func allocUIDFrom(start int) (*lease, error) { return uids.alloc(start) }

// leaseSet is a range of ids that sandboxes lease (host uids; the disk layer's project ids): the
// lease of an id is a flock(2) on the file named after it in a root-only directory of the set's.
type leaseSet struct {
	what    string // what the ids are, for errors
	first   int    // the ids are first .. first+n-1
	n       int
	dir     func() (*os.File, error) // the directory of the lock files, opened once per process
	dirName string
}

func newLeaseSet(what, dirName string, first, n int) *leaseSet {
	s := &leaseSet{what: what, first: first, n: n, dirName: dirName}
	s.dir = sync.OnceValues(func() (*os.File, error) {
		var errList []error
		for _, parent := range []string{"/run", os.TempDir()} {
			d, err := s.openDir(parent)
			if err == nil {
				return d, nil
			}
			errList = append(errList, err)
		}
		return nil, errors.Join(errList...)
	})
	return s
}

// openDir opens (making it if needed) the lease directory in parent, which must be root's and
// writable by no one else unless sticky (/tmp); the directory itself must be root's, 0700, and not
// a symbolic link.
func (s *leaseSet) openDir(parent string) (*os.File, error) {
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.what, parent, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.what, parent, err)
	}
	if st.Uid != 0 || (st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0) {
		return nil, fmt.Errorf("%s: %s is not root's, or others may rename what it holds", s.what, parent)
	}
	if err := unix.Mkdirat(pfd, s.dirName, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("%s: %s: %w", s.what, filepath.Join(parent, s.dirName), err)
	}
	fd, err := unix.Openat(pfd, s.dirName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Fstat(fd, &st)
		if err == nil && (st.Uid != 0 || st.Mode&0o077 != 0) {
			err = errors.New("not root's own directory (0700)")
		}
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.what, filepath.Join(parent, s.dirName), err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(parent, s.dirName)), nil
}

// lease is one leased id: its lock file, locked until release.
type lease struct {
	id   int
	set  *leaseSet
	file *os.File // the id's lock file, flocked for the lease's life
	once sync.Once
}

// alloc leases the first free id from slot start (0 .. n-1; -1: the cursor's).
func (s *leaseSet) alloc(start int) (*lease, error) {
	var l *lease
	err := s.locked(func(dirfd int) (err error) {
		l, err = s.take(dirfd, start)
		return err
	})
	return l, err
}

// locked runs fn with the set's directory open and locked: allocation and release hold it, so a
// lock file is removed only by its holder, and never while another allocator has it open.
func (s *leaseSet) locked(fn func(dirfd int) error) error {
	dir, err := s.dir()
	if err != nil {
		return err
	}
	err = withFDs([]*os.File{dir}, func(fds []int) error {
		return lockedDir(fds[0], func() error { return fn(fds[0]) })
	})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", s.what, dir.Name(), err)
	}
	return nil
}

// take locks (exclusively) the lock file of the first free id from slot start (-1: the
// cursor's), in the locked directory dirfd, and moves the cursor past it.
func (s *leaseSet) take(dirfd, start int) (*lease, error) {
	if start < 0 {
		start = readCursor(dirfd, s.n)
	}
	for i := range s.n {
		n := (start + i) % s.n
		id := s.first + n
		fd, err := unix.Openat(dirfd, strconv.Itoa(id), unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		if err := flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue // another sandbox's
			}
			return nil, err
		}
		writeCursor(dirfd, (n+1)%s.n)
		return &lease{id: id, set: s, file: os.NewFile(uintptr(fd), strconv.Itoa(id))}, nil
	}
	return nil, fmt.Errorf("all %d %s are in use", s.n, s.what)
}

// path is the lease's lock file.
func (l *lease) path() string {
	dir, _ := l.set.dir()
	return filepath.Join(dir.Name(), l.file.Name())
}

// release removes the lease's lock file and unlocks it, once; the id is free again.
func (l *lease) release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		_ = l.set.locked(func(dirfd int) error { return unix.Unlinkat(dirfd, l.file.Name(), 0) })
		l.file.Close()
	})
}

// removeStaleLease is the janitor's: it removes the lock file at path that its dead owner left,
// unless another sandbox has leased the id since (and holds the lock); clean, when not nil, runs
// first, with the lock file.
func removeStaleLease(path string, clean func(f *os.File)) {
	dirfd, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dirfd)
	_ = lockedDir(dirfd, func() error {
		name := filepath.Base(path)
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), path)
		defer f.Close()
		if err := flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			return err // leased again
		}
		if clean != nil {
			clean(f)
		}
		return unix.Unlinkat(dirfd, name, 0)
	})
}

// lockedDir runs fn with the lease directory dirfd locked.
func lockedDir(dirfd int, fn func() error) error {
	if err := flock(dirfd, unix.LOCK_EX); err != nil {
		return err
	}
	defer flock(dirfd, unix.LOCK_UN)
	return fn()
}

func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// readCursor is the slot allocation starts from, of n (0 when there is none yet).
func readCursor(dirfd, n int) int {
	fd, err := unix.Openat(dirfd, "next", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	buf := make([]byte, 16)
	got, _ := unix.Pread(fd, buf, 0)
	v, err := strconv.Atoi(strings.TrimSpace(string(buf[:max(got, 0)])))
	if err != nil || v < 0 || v >= n {
		return 0
	}
	return v
}

// writeCursor writes the cursor in place, at a fixed width: truncating the file first made ext4
// (auto_da_alloc) flush it on close, which cost the allocation most of a millisecond.
func writeCursor(dirfd, v int) {
	fd, err := unix.Openat(dirfd, "next", unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	_, _ = unix.Pwrite(fd, fmt.Appendf(nil, "%05d", v), 0)
	unix.Close(fd)
}

// asNamespaceOwner runs start (which forks a helper with CLONE_NEWUSER) on a thread whose
// effective uid is uid, with this process's capabilities kept in force: the user namespace it
// makes is then owned by uid, and the per-user counts the kernel keeps through the namespace's
// owner (inotify instances and watches, user namespaces, and the like) are charged to uid, not to
// the host's root that every sandbox and the host's own daemons would share. Credentials are per
// thread in Linux; the thread is root again before it goes back to the runtime.
func asNamespaceOwner(uid int, start func() error) error {
	runtime.LockOSThread()
	if _, _, e := unix.RawSyscall(sysSetresuid, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
		runtime.UnlockOSThread()
		return fmt.Errorf("act as uid %d: %w", uid, e)
	}
	// Leaving euid 0 cleared the effective capabilities; the permitted ones are still there (the
	// real and saved uids are 0).
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	err := unix.Capget(&hdr, &caps[0])
	if err == nil {
		caps[0].Effective, caps[1].Effective = caps[0].Permitted, caps[1].Permitted
		err = unix.Capset(&hdr, &caps[0])
	}
	if err == nil {
		err = start()
	}
	if _, _, e := unix.RawSyscall(sysSetresuid, ^uintptr(0), 0, ^uintptr(0)); e != 0 {
		// Never hand the runtime a thread of another uid: it stays locked, and ends with this
		// goroutine.
		return errors.Join(err, fmt.Errorf("%w: become root again: %w", errThreadCreds, e))
	}
	runtime.UnlockOSThread()
	return err
}

// errThreadCreds marks a start after which the starting thread could not get its credentials back.
var errThreadCreds = errors.New("thread credentials")
