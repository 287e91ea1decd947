//go:build linux && !sandboxer_portable

package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The disk layer (Config.Disk): a sandbox's workspace may grow by at most Config.Disk bytes, and
// by one inode per 4 KiB of it, through a Linux project quota, where the workspace's file system
// enforces them (ext4 made with -O quota,project and mounted with prjquota, xfs mounted with
// pquota) and the caller is root (quotactl_fd(2), Linux 5.14).
//
// The workspace's directories and regular files get the sandbox's project id, the directories
// with the inherit flag, so that whatever is made there later is the project's too; the project
// gets a hard limit of what it holds then plus Config.Disk. The kernel charges every block and
// inode to the file's project whoever writes it, refuses inside a user namespace any change of a
// project id or of the inherit flag, and refuses (EXDEV) a rename or link into a directory of
// another project: commands, which all run in the sandbox's user namespace, cannot leave the
// project, and their limit is not the host root's (CAP_SYS_RESOURCE of the initial namespace
// passes quotas; theirs is not).
//
// Project ids are leased as the sandbox uids are (uids_linux.go), ProjectBase+1 ..
// ProjectBase+projectSlots, but under a shared flock: sandboxes of one workspace that run at once
// share its project, so that one stopping does not lift the others' cap (each new one sets the
// limit to what the workspace holds then plus its Config.Disk: they share that budget). The lease
// file lists (NUL-separated) the workspaces tagged with its id; the last holder to let go clears
// the limit and gives their files back to project 0, as they were (a SIGKILLed owner's janitor
// does it in its place). A workspace with a file of another project (an administrator's quota), or
// another file system mounted inside it, is refused: neither would be capped.

// ProjectBase is the base of the project ids of the disk layer: each sandbox with Config.Disk (or
// the sandboxes of one workspace running at once) leases one of ProjectBase+1 ..
// ProjectBase+65535. The range follows the sandbox uids' (HostUID); no convention uses it.
const ProjectBase = HostUID + 65536

const projectSlots = 65535

// projects are the disk layer's project ids.
var projects = newLeaseSet("sandbox projects", "sandboxer-projects", ProjectBase+1, projectSlots)

// ourProject says whether id is one of the project ids sandboxes lease.
func ourProject(id uint32) bool { return id > ProjectBase && id <= ProjectBase+projectSlots }

// inodeBytes is the share of Config.Disk that buys one inode.
const inodeBytes = 4096

// fsxattr is struct fsxattr of <linux/fs.h>, of the ioctls FS_IOC_FSGETXATTR and FS_IOC_FSSETXATTR.
type fsxattr struct {
	xflags, extsize, nextents, projid, cowextsize uint32
	_                                             [8]byte
}

const xflagProjinherit = 0x200 // FS_XFLAG_PROJINHERIT

// _IOR('X', 31, struct fsxattr) and _IOW('X', 32, struct fsxattr), with this architecture's
// direction bits (mips, powerpc and sparc have their own), taken from two ioctls x/sys/unix
// knows: _IOR('f', 27, __u8[16]) and _IOW('f', 133, struct fsverity_enable_arg), 128 bytes.
const (
	iocRead         = uint32(unix.FS_IOC_GET_ENCRYPTION_NONCE) &^ (16<<16 | 'f'<<8 | 27)
	iocWrite        = uint32(unix.FS_IOC_ENABLE_VERITY) &^ (128<<16 | 'f'<<8 | 133)
	fsIocFsgetxattr = iocRead | uint32(unsafe.Sizeof(fsxattr{}))<<16 | 'X'<<8 | 31
	fsIocFssetxattr = iocWrite | uint32(unsafe.Sizeof(fsxattr{}))<<16 | 'X'<<8 | 32
)

func getFsxattr(fd int) (fsxattr, error) {
	var a fsxattr
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(fsIocFsgetxattr), uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return a, e
	}
	return a, nil
}

func setFsxattr(fd int, a fsxattr) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(fsIocFssetxattr), uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return e
	}
	return nil
}

// quotactl(2) of project quotas (<linux/quota.h>, <linux/dqblk_xfs.h>).
const (
	prjQuota        = 2
	qGetQuota       = 0x800007
	qSetQuota       = 0x800008
	qXGetQStatV     = 'X'<<8 + 8 // Q_XGETQSTATV
	qifBLimits      = 1
	qifILimits      = 4
	fsQuotaPDQEnfd  = 0x20 // FS_QUOTA_PDQ_ENFD: project quota limits are enforced
	quotaBlockBytes = 1024 // QIF_DQBLKSIZE: the unit of the block limits
)

// dqblk is struct if_dqblk, padded to its 64-bit size (on 32-bit arm its u64 are 8-aligned,
// Go's are not).
type dqblk struct {
	bhardlimit, bsoftlimit, curspace, ihardlimit, isoftlimit, curinodes, btime, itime uint64
	valid                                                                             uint32
	_                                                                                 uint32
}

// quotaStatv is struct fs_quota_statv (160 bytes), of which only the flags are read.
type quotaStatv struct {
	version int8
	_       uint8
	flags   uint16
	_       [156]byte
}

// quotactl runs a project quota command on the file system of fd.
func quotactl(fd int, cmd, id uint32, addr unsafe.Pointer) error {
	_, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, uintptr(fd), uintptr(cmd<<8|prjQuota), uintptr(id), uintptr(addr), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// quotaUsable says why project quotas cannot cap dir here, if they cannot.
func quotaUsable(dir string) error {
	if os.Geteuid() != 0 {
		return errors.New("project quotas are set by root only, and sandboxer is not root")
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return enforced(f)
}

// enforced says why the file system of dir does not enforce project quotas, if it does not.
func enforced(dir *os.File) error {
	st := quotaStatv{version: 1}
	err := quotactl(int(dir.Fd()), qXGetQStatV, 0, unsafe.Pointer(&st))
	if errors.Is(err, unix.ENOSYS) {
		// A file system without quotas, or a kernel without quotactl_fd: an invalid descriptor
		// tells them apart.
		if _, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, ^uintptr(0), 0, 0, 0, 0, 0); e == unix.ENOSYS {
			return errors.New("the kernel has no quotactl_fd (needs Linux 5.14)")
		}
	}
	if err == nil && st.flags&fsQuotaPDQEnfd != 0 {
		return nil
	}
	why := "project quotas are not enforced"
	switch {
	case errors.Is(err, unix.ENOSYS):
		why = "it has no quotas"
	case err != nil:
		why = err.Error()
	}
	return fmt.Errorf("the file system of %s does not cap projects (%s): it needs project quotas enforced (ext4 made with -O quota,project and mounted with prjquota, or xfs mounted with pquota)", dir.Name(), why)
}

// diskQuota is a sandbox's cap on its workspace: the project it leased or joined.
type diskQuota struct {
	lease *lease // its lock file shared-locked
	root  string
	disk  int64
}

// newDiskQuota caps how much root (absolute, symlinks resolved) may grow from now on: by disk bytes.
func newDiskQuota(root string, disk int64) (*diskQuota, error) {
	if err := quotaUsable(root); err != nil {
		return nil, err
	}
	dir, err := os.OpenFile(root, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	q := &diskQuota{root: root, disk: disk}
	if q.lease, err = leaseProject(dir); err != nil {
		return nil, err
	}
	err = tagTree(dir, uint32(q.lease.id))
	if err == nil {
		err = q.rebase()
	}
	if err != nil {
		return nil, errors.Join(err, q.release())
	}
	return q, nil
}

// leaseProject leases the project of the workspace dir: the one it is in when another sandbox
// holds that (or when it is a sandbox's left behind), else a free one. The workspace directory
// itself is tagged before the directory of the leases is unlocked: a sandbox of the same workspace
// starting at the same time joins this project.
func leaseProject(dir *os.File) (*lease, error) {
	var l *lease
	err := projects.locked(func(dirfd int) error {
		a, err := getFsxattr(int(dir.Fd()))
		if err != nil {
			return fmt.Errorf("%s: project id: %w", dir.Name(), err)
		}
		if ourProject(a.projid) {
			l, err = joinProject(dirfd, int(a.projid))
		} else {
			l, err = projects.take(dirfd, -1)
		}
		if err == nil {
			err = flock(int(l.file.Fd()), unix.LOCK_SH|unix.LOCK_NB) // shared from now on
		}
		if err == nil { // recorded first: what is tagged is always untagged at the end
			err = record(l.file, dir.Name())
		}
		if err == nil {
			err = tag(dir, a, uint32(l.id), true)
		}
		if err != nil && l != nil {
			l.file.Close()
			l = nil
		}
		return err
	})
	return l, err
}

// joinProject opens (making it if needed) the lock file of project id, in the locked directory
// dirfd, for its caller to share.
func joinProject(dirfd, id int) (*lease, error) {
	fd, err := unix.Openat(dirfd, strconv.Itoa(id), unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return &lease{id: id, set: projects, file: os.NewFile(uintptr(fd), strconv.Itoa(id))}, nil
}

// record adds root to the workspaces of a project's lock file, unless it is there.
func record(f *os.File, root string) error {
	roots, err := recorded(f)
	if err != nil {
		return err
	}
	for _, r := range roots {
		if r == root {
			return nil
		}
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = f.WriteAt(append([]byte(root), 0), st.Size())
	return err
}

// recorded lists the workspaces of a project's lock file.
func recorded(f *os.File) ([]string, error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		return nil, err
	}
	var roots []string
	for r := range bytes.SplitSeq(data, []byte{0}) {
		if len(r) > 0 {
			roots = append(roots, string(r))
		}
	}
	return roots, nil
}

// rebase sets the project's limit to what it holds now plus the sandbox's disk: a fresh budget
// (a new sandbox, a recycled one).
func (q *diskQuota) rebase() error {
	dir, err := os.OpenFile(q.root, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer dir.Close()
	id := uint32(q.lease.id)
	var d dqblk
	if err := quotactl(int(dir.Fd()), qGetQuota, id, unsafe.Pointer(&d)); err != nil {
		return fmt.Errorf("%s: usage of project %d: %w", q.root, id, err)
	}
	disk := uint64(q.disk)
	set := dqblk{
		bhardlimit: (d.curspace + disk + quotaBlockBytes - 1) / quotaBlockBytes,
		ihardlimit: d.curinodes + (disk+inodeBytes-1)/inodeBytes,
		valid:      qifBLimits | qifILimits,
	}
	if err := quotactl(int(dir.Fd()), qSetQuota, id, unsafe.Pointer(&set)); err != nil {
		return fmt.Errorf("%s: limit of project %d: %w", q.root, id, err)
	}
	return nil
}

// release lets go of the project, once: the last sandbox holding it clears its limit, gives the
// files of its workspaces back to project 0 and frees the id.
func (q *diskQuota) release() error {
	var err error
	q.lease.once.Do(func() {
		err = projects.locked(func(dirfd int) error {
			// An exclusive lock replaces the shared one, unless another sandbox holds it too
			// (which then lets go last); failing, it leaves none.
			if flock(int(q.lease.file.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
				return nil
			}
			cerr := clearProject(q.lease.file, uint32(q.lease.id))
			return errors.Join(cerr, unix.Unlinkat(dirfd, q.lease.file.Name(), 0))
		})
		q.lease.file.Close()
	})
	return err
}

// clearProject lifts the limit of project id and gives the files of the workspaces its lock file f
// lists back to project 0 (the janitor's too, for a dead owner's lease).
func clearProject(f *os.File, id uint32) error {
	roots, err := recorded(f)
	for _, root := range roots {
		dir, derr := os.OpenFile(root, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if errors.Is(derr, os.ErrNotExist) {
			continue // a temporary workspace, removed
		}
		if derr != nil {
			err = errors.Join(err, derr)
			continue
		}
		none := dqblk{valid: qifBLimits | qifILimits}
		if qerr := quotactl(int(dir.Fd()), qSetQuota, id, unsafe.Pointer(&none)); qerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: lift the limit of project %d: %w", root, id, qerr))
		}
		err = errors.Join(err, untagTree(dir, id))
		dir.Close()
	}
	return err
}

// clearStaleProject is the janitor's clean for a dead owner's project lease at f.
func clearStaleProject(f *os.File) {
	if id, err := strconv.ParseUint(filepath.Base(f.Name()), 10, 32); err == nil && ourProject(uint32(id)) {
		_ = clearProject(f, uint32(id))
	}
}

// tag gives the file f (with attributes a) the project id, a directory with the inherit flag.
func tag(f *os.File, a fsxattr, id uint32, isDir bool) error {
	if a.projid != 0 && a.projid != id && !ourProject(a.projid) {
		return fmt.Errorf("%s is in project %d, an administrator's: sandboxer does not take it over", f.Name(), a.projid)
	}
	want := a
	want.projid = id
	if isDir {
		want.xflags |= xflagProjinherit
	}
	if want == a {
		return nil
	}
	if err := setFsxattr(int(f.Fd()), want); err != nil {
		return fmt.Errorf("%s: set project %d: %w", f.Name(), id, err)
	}
	return nil
}

// tagTree gives dir and every directory and regular file below it the project id (see tag),
// without following links; another file system mounted below dir is refused.
func tagTree(dir *os.File, id uint32) error {
	return walkTree(dir, true, func(f *os.File, isDir bool) error {
		a, err := getFsxattr(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("%s: project id: %w", f.Name(), err)
		}
		return tag(f, a, id, isDir)
	})
}

// untagTree gives what of dir's tree is in project id back to project 0, without the inherit flag.
func untagTree(dir *os.File, id uint32) error {
	return walkTree(dir, false, func(f *os.File, isDir bool) error {
		a, err := getFsxattr(int(f.Fd()))
		if err != nil || a.projid != id {
			return nil
		}
		a.projid, a.xflags = 0, a.xflags&^xflagProjinherit
		if err := setFsxattr(int(f.Fd()), a); err != nil {
			return fmt.Errorf("%s: project 0: %w", f.Name(), err)
		}
		return nil
	})
}

// errOtherFS marks a directory or file of another file system than the walk's.
var errOtherFS = errors.New("another file system is mounted here, which a project of the workspace's cannot cap")

// walkTree calls fn for dir and for every directory and regular file below it, depth first,
// without following links and without opening anything else (a device, a FIFO). Another file
// system mounted below dir is an error when strict, else skipped.
func walkTree(dir *os.File, strict bool, fn func(f *os.File, isDir bool) error) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return fmt.Errorf("%s: %w", dir.Name(), err)
	}
	var walk func(d *os.File) error
	walk = func(d *os.File) error {
		if err := fn(d, true); err != nil {
			return err
		}
		names, err := d.Readdirnames(-1)
		if err != nil {
			return err
		}
		for _, name := range names {
			f, isDir, err := openEntry(d, name, uint64(st.Dev))
			switch {
			case errors.Is(err, errOtherFS) && !strict:
				continue
			case err != nil:
				return err
			case f == nil:
				continue // a link, a special file, or gone
			}
			if isDir {
				err = walk(f)
			} else {
				err = fn(f, false)
			}
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	return walk(dir)
}

// openEntry opens the directory or regular file name of dir, on the file system dev, without
// following a link; anything else is nil. It opens an O_PATH descriptor first and reopens that
// through /proc once it knows the type: a device or FIFO swapped in is never opened.
func openEntry(dir *os.File, name string, dev uint64) (f *os.File, isDir bool, err error) {
	p := filepath.Join(dir.Name(), name)
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, fmt.Errorf("%s: %w", p, err)
	}
	flags := unix.O_RDONLY | unix.O_CLOEXEC // not O_NOFOLLOW: /proc/self/fd/N is a link, to the file itself
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		isDir, flags = true, flags|unix.O_DIRECTORY
	case unix.S_IFREG:
		flags |= unix.O_NONBLOCK | unix.O_NOCTTY
	default:
		return nil, false, nil
	}
	if uint64(st.Dev) != dev {
		return nil, false, fmt.Errorf("%s: %w", p, errOtherFS)
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), flags, 0)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", p, err)
	}
	return os.NewFile(uintptr(rfd), p), isDir, nil
}
