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

// uidDir is the directory of the leases, opened once per process.
var uidDir = sync.OnceValues(func() (*os.File, error) {
	var errList []error
	for _, parent := range []string{"/run", os.TempDir()} {
		d, err := openUIDDir(parent)
		if err == nil {
			return d, nil
		}
		errList = append(errList, err)
	}
	return nil, errors.Join(errList...)
})

// openUIDDir opens (making it if needed) the lease directory in parent, which must be root's and
// writable by no one else unless sticky (/tmp); the directory itself must be root's, 0700, and not
// a symbolic link.
func openUIDDir(parent string) (*os.File, error) {
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox uids: %s: %w", parent, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("sandbox uids: %s: %w", parent, err)
	}
	if st.Uid != 0 || (st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0) {
		return nil, fmt.Errorf("sandbox uids: %s is not root's, or others may rename what it holds", parent)
	}
	if err := unix.Mkdirat(pfd, uidDirName, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("sandbox uids: %s: %w", filepath.Join(parent, uidDirName), err)
	}
	fd, err := unix.Openat(pfd, uidDirName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
		return nil, fmt.Errorf("sandbox uids: %s: %w", filepath.Join(parent, uidDirName), err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(parent, uidDirName)), nil
}

// uidLease is one sandbox's host uid: its lock file, locked until release.
type uidLease struct {
	uid  int
	file *os.File // the uid's lock file, flocked for the lease's life
	once sync.Once
}

// allocUID leases the next free sandbox uid after the cursor.
func allocUID() (*uidLease, error) { return allocUIDFrom(-1) }

// allocUIDFrom leases the first free sandbox uid from slot start (0 .. uidSlots-1; -1: the
// cursor's).
func allocUIDFrom(start int) (*uidLease, error) {
	dir, err := uidDir()
	if err != nil {
		return nil, err
	}
	var lease *uidLease
	err = withFDs([]*os.File{dir}, func(fds []int) error {
		return lockedDir(fds[0], func() error {
			if start < 0 {
				start = readCursor(fds[0])
			}
			for i := range uidSlots {
				n := (start + i) % uidSlots
				uid := HostUID + 1 + n
				fd, err := unix.Openat(fds[0], strconv.Itoa(uid), unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
				if err != nil {
					return err
				}
				if err := flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
					unix.Close(fd)
					if errors.Is(err, unix.EWOULDBLOCK) {
						continue // another sandbox's
					}
					return err
				}
				writeCursor(fds[0], (n+1)%uidSlots)
				lease = &uidLease{uid: uid, file: os.NewFile(uintptr(fd), strconv.Itoa(uid))}
				return nil
			}
			return fmt.Errorf("all %d sandbox uids are in use", uidSlots)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox uids: %s: %w", dir.Name(), err)
	}
	return lease, nil
}

// path is the lease's lock file.
func (l *uidLease) path() string {
	dir, _ := uidDir()
	return filepath.Join(dir.Name(), l.file.Name())
}

// release removes the lease's lock file and unlocks it, once; the uid is free again.
func (l *uidLease) release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		if dir, err := uidDir(); err == nil {
			_ = withFDs([]*os.File{dir}, func(fds []int) error {
				return lockedDir(fds[0], func() error { return unix.Unlinkat(fds[0], l.file.Name(), 0) })
			})
		}
		l.file.Close()
	})
}

// removeStaleLease is the janitor's: it removes the lock file at path that its dead owner left,
// unless another sandbox has leased the uid since (and holds the lock).
func removeStaleLease(path string) {
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
		defer unix.Close(fd)
		if err := flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			return err // leased again
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

// readCursor is the slot allocation starts from (0 when there is none yet).
func readCursor(dirfd int) int {
	fd, err := unix.Openat(dirfd, "next", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	buf := make([]byte, 16)
	n, _ := unix.Pread(fd, buf, 0)
	v, err := strconv.Atoi(strings.TrimSpace(string(buf[:max(n, 0)])))
	if err != nil || v < 0 || v >= uidSlots {
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
