//go:build unix

package adapter

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/errs"
)

// SetExecutableAt is ModeWriter.SetExecutable for adapters that hold the parent directory d of
// the file open (local, oci): name is opened with O_NOFOLLOW relative to d and changed through that
// descriptor (0755 or 0644), so a link swapped in cannot redirect it. A symbolic link or anything
// but a regular file is errs.NotFound; other errors are returned as they are, for the caller's
// own mapping (mapErr).
func SetExecutableAt(d *os.File, op, p, name string, exec bool) error {
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return errs.New(errs.NotFound, op, p, "a symbolic link, not a regular file")
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errs.New(errs.NotFound, op, p, "not a regular file (%s)", fi.Mode().Type())
	}
	perm := os.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	return f.Chmod(perm)
}
