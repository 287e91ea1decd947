package oneshot

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// oPath is O_PATH (the same on every architecture Go runs Linux on), which package syscall lacks.
const oPath = 0x200000

// ErrUnsafe marks a server directory, or a file in it, that sandboxer does not use: a path
// another user could change, or a file sandboxer did not make (a link, a FIFO, a device).
var ErrUnsafe = errors.New("unsafe")

// Unsafe is an ErrUnsafe: path is refused because why.
func Unsafe(path, why string) error { return &unsafeError{path, why} }

// unsafeError says which path is refused and why.
type unsafeError struct{ path, why string }

func (e *unsafeError) Error() string { return e.path + " " + e.why }
func (e *unsafeError) Unwrap() error { return ErrUnsafe }

// ServerDir is a server directory opened after its checks (OpenServerDir). Every file of the
// servers is reached through it by name, never through the path again: a directory of the path
// swapped after the checks changes nothing.
type ServerDir struct {
	path string
	f    *os.File // the directory, O_RDONLY; its only owner
	fd   int      // f's descriptor, while f is open
	uid  int
}

// OpenServerDir makes the server directory path (mode 0700) if it is missing and opens it, after
// checking every component of its path as ssh checks its files. Each directory from / down to the
// server directory's parent must be owned by uid or by root and writable by no one else, unless
// it is root's and sticky (/tmp, /dev/shm: there nobody else can remove or rename what uid made).
// The server directory itself must be a directory (not a link) of uid's that no one else may
// enter (no permission bit for group or others). Links above the server directory are resolved
// once, first; the walk then opens each component without following links (openat with
// O_NOFOLLOW from the one before), checks it, and goes on from that descriptor, so what it
// checked is what it opens. A refusal is an ErrUnsafe naming the component and the rule.
func OpenServerDir(path string, uid int) (*ServerDir, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) == "/" {
		return nil, &unsafeError{path, "is not a server directory: it must be an absolute path below /"}
	}
	path = filepath.Clean(path)
	parent, base := filepath.Dir(path), filepath.Base(path)
	resolved, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Open("/", oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	defer func() { syscall.Close(fd) }()
	at := "/"
	for _, c := range strings.Split(resolved, "/") {
		if c != "" {
			at = filepath.Join(at, c)
			next, err := syscall.Openat(fd, c, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			if err != nil {
				return nil, &os.PathError{Op: "open", Path: at, Err: err}
			}
			syscall.Close(fd)
			fd = next
		}
		if err := checkAbove(fd, at, path, uid); err != nil {
			return nil, err
		}
	}
	if err := syscall.Mkdirat(fd, base, 0o700); err != nil && err != syscall.EEXIST {
		return nil, &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	dir, err := syscall.Openat(fd, base, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(dir)
	var st syscall.Stat_t
	if err := syscall.Fstat(dir, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return nil, &unsafeError{path, "is " + kind(st.Mode) + ", not the server directory"}
	case int(st.Uid) != uid:
		return nil, &unsafeError{path, "is owned by uid " + strconv.Itoa(int(st.Uid)) + ": the server directory must be yours (uid " + strconv.Itoa(uid) + ")"}
	case st.Mode&0o077 != 0:
		return nil, &unsafeError{path, "has mode " + mode(st.Mode) + ": the server directory must be yours alone (chmod 700)"}
	}
	// Reopened for reading (its entries) through the descriptor checked.
	rd, err := syscall.Openat(dir, ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &ServerDir{path: path, f: os.NewFile(uintptr(rd), path), fd: rd, uid: uid}, nil
}

// checkAbove checks a directory above the server directory dir, open as fd.
func checkAbove(fd int, at, dir string, uid int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: at, Err: err}
	}
	every := "; every directory above the server directory " + dir + " must be "
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		// A link made after the links of the path were resolved.
		return &unsafeError{at, "is " + kind(st.Mode) + every + "a directory"}
	case int(st.Uid) != uid && st.Uid != 0:
		return &unsafeError{at, "is owned by uid " + strconv.Itoa(int(st.Uid)) + every + "yours (uid " + strconv.Itoa(uid) + ") or root's"}
	case st.Mode&0o022 != 0 && (st.Mode&syscall.S_ISVTX == 0 || st.Uid != 0):
		return &unsafeError{at, "has mode " + mode(st.Mode) + ", writable by others" + every + "writable by its owner only, or root's and sticky like /tmp"}
	}
	return nil
}

// kind names a file type for a message.
func kind(m uint32) string {
	switch m & syscall.S_IFMT {
	case syscall.S_IFLNK:
		return "a symbolic link"
	case syscall.S_IFIFO:
		return "a FIFO"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "a device"
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFREG:
		return "a regular file"
	}
	return "a file of type " + strconv.FormatUint(uint64(m&syscall.S_IFMT), 8)
}

func mode(m uint32) string { return "0" + strconv.FormatUint(uint64(m&0o7777), 8) }

// Path is the server directory's path, for messages and for the server the front starts (which
// checks it again itself).
func (d *ServerDir) Path() string { return d.path }

// Close closes the directory.
func (d *ServerDir) Close() error { return d.f.Close() }

// Name is the path of the file name in the directory, for messages.
func (d *ServerDir) Name(name string) string { return filepath.Join(d.path, name) }

// SocketPath is a path of the file name in this directory for bind(2) and connect(2), which take
// no directory descriptor: through /proc/self/fd, the directory opened, whatever its path names now.
func (d *ServerDir) SocketPath(name string) string {
	return "/proc/self/fd/" + strconv.Itoa(d.fd) + "/" + name
}

// checkName refuses a name that is not a single component.
func (d *ServerDir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return &unsafeError{d.Name(name), "is not a name in the server directory"}
	}
	return nil
}

// Lstat is the status of the file name in the directory, a link's own.
func (d *ServerDir) Lstat(name string) (syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := d.checkName(name); err != nil {
		return st, err
	}
	fd, err := syscall.Openat(d.fd, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return st, &os.PathError{Op: "lstat", Path: d.Name(name), Err: err}
	}
	defer syscall.Close(fd)
	if err := syscall.Fstat(fd, &st); err != nil {
		return st, &os.PathError{Op: "lstat", Path: d.Name(name), Err: err}
	}
	return st, nil
}

// CheckSocket checks that the file name in the directory is a socket of the directory's user,
// not a link or another file: an ErrUnsafe otherwise.
func (d *ServerDir) CheckSocket(name string) error {
	st, err := d.Lstat(name)
	if err != nil {
		return err
	}
	return d.made(name, st, syscall.S_IFSOCK)
}

// made checks that the file name, of status st, is what sandboxer made there: a file of type
// typ (S_IFREG, S_IFSOCK) of the directory's user, with one link.
func (d *ServerDir) made(name string, st syscall.Stat_t, typ uint32) error {
	switch {
	case st.Mode&syscall.S_IFMT != typ:
		return &unsafeError{d.Name(name), "is " + kind(st.Mode) + ", not " + kind(typ) + " sandboxer made"}
	case int(st.Uid) != d.uid:
		return &unsafeError{d.Name(name), "is owned by uid " + strconv.Itoa(int(st.Uid)) + ", not by you (uid " + strconv.Itoa(d.uid) + ")"}
	case st.Nlink != 1:
		return &unsafeError{d.Name(name), "has " + strconv.FormatUint(uint64(st.Nlink), 10) + " links (a hard link to another file), not one: not a file sandboxer made"}
	}
	return nil
}

// OpenFile opens the file name in the directory (a lock, a key or a log) without following a
// link and without blocking (a FIFO would), and returns it only when it is a regular file of the
// directory's user with one link (a hard link would make writes land in another file); anything
// else is an ErrUnsafe.
func (d *ServerDir) OpenFile(name string, flag int, perm uint32) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	fd, err := syscall.Openat(d.fd, name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, perm)
	if err != nil {
		if st, lerr := d.Lstat(name); lerr == nil && st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return nil, d.made(name, st, syscall.S_IFREG)
		}
		return nil, &os.PathError{Op: "open", Path: d.Name(name), Err: err}
	}
	var st syscall.Stat_t
	if err = syscall.Fstat(fd, &st); err != nil {
		err = &os.PathError{Op: "stat", Path: d.Name(name), Err: err}
	} else if err = d.made(name, st, syscall.S_IFREG); err == nil {
		err = syscall.SetNonblock(fd, false)
	}
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.Name(name)), nil
}

// Remove removes the file name from the directory (a link itself, not its target).
func (d *ServerDir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	if err := syscall.Unlinkat(d.fd, name); err != nil {
		return &os.PathError{Op: "remove", Path: d.Name(name), Err: err}
	}
	return nil
}

// Rename renames the file from to to in the directory.
func (d *ServerDir) Rename(from, to string) error {
	if err := errors.Join(d.checkName(from), d.checkName(to)); err != nil {
		return err
	}
	if err := syscall.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Name(from), New: d.Name(to), Err: err}
	}
	return nil
}

// Names are the names of the directory's files.
func (d *ServerDir) Names() ([]string, error) {
	fd, err := syscall.Openat(d.fd, ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.Readdirnames(-1)
}
