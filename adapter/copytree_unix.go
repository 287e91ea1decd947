//go:build unix

package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/errs"
)

// DefaultCopyMaxFileBytes is the per-file bound of a fork's copy when a Config leaves it zero.
const DefaultCopyMaxFileBytes = 1 << 30

// Bounds of CopyTree against a hostile tree: how many entries a report lists, how deep it descends
// (each level holds two directory descriptors open).
const (
	maxCopyListed = 1000
	maxCopyDepth  = 1024
)

// Skipped is an entry CopyTree left out of the copy.
type Skipped struct {
	Path string `json:"path"` // slash-separated, relative to the tree's root
	// Type is "fifo", "socket", "device" (never opened), or "changed" (its type kept changing
	// while it was copied: a race with a writer).
	Type string `json:"type"`
}

// CopyReport is what CopyTree left out: at most 1000 entries are listed, Unlisted counts the rest.
type CopyReport struct {
	Skipped  []Skipped `json:"skipped,omitempty"`
	Unlisted int       `json:"unlisted,omitempty"`
}

func (r *CopyReport) skip(p, typ string) {
	if len(r.Skipped) < maxCopyListed {
		r.Skipped = append(r.Skipped, Skipped{Path: p, Type: typ})
	} else {
		r.Unlisted++
	}
}

// CopyTree copies the tree of src into dst (an empty directory), for a fork: the host-side copy
// of every adapter whose workspace is a host directory (local, oci, the CLI's local sandboxes).
//
// No link is ever followed: the walk holds each directory open and opens every name in it
// relative to that descriptor with O_NOFOLLOW, so a symbolic link (also one swapped in for a file
// or a directory after the listing) is copied as a link, with its target unchanged. Regular files
// are opened with O_NONBLOCK and checked on the opened descriptor: FIFOs, sockets and devices are
// skipped (listed in the report), those seen in the listing are never opened, and one swapped in
// meanwhile is refused without a read, so the copy never blocks. Contents are streamed, holes kept
// where the platform can find them (SEEK_DATA/SEEK_HOLE and copy_file_range on Linux; elsewhere a
// plain stream that writes holes as zeros). Directories are copied with their permissions plus
// the owner's rwx, files with their permission bits (no setuid, setgid or sticky bit); owners and
// times are not copied, hard links become separate files. An entry that vanishes during the copy
// is left out: the copy is one of the moment.
//
// maxFileBytes bounds each regular file's size (a negative value: no bound). A larger file fails
// the copy with errs.FileTooLarge after the walk, without copying more contents: its Path is the
// first such file and Details lists "too_large" (the paths), "limit" and "skipped". Other
// failures are errs.Internal (wrapping the context's error when ctx ends); the caller removes dst.
func CopyTree(ctx context.Context, op string, src, dst *os.Root, maxFileBytes int64) (CopyReport, error) {
	c := &treeCopy{ctx: ctx, op: op, max: maxFileBytes}
	sd, err := src.Open(".")
	if err != nil {
		return c.rep, errs.Wrap(errs.Internal, op, "", err)
	}
	defer sd.Close()
	dd, err := dst.Open(".")
	if err != nil {
		return c.rep, errs.Wrap(errs.Internal, op, "", err)
	}
	defer dd.Close()
	if err := c.dir(sd, dd, "", 0); err != nil {
		return c.rep, err
	}
	if len(c.tooLarge) > 0 {
		return c.rep, &errs.Error{Code: errs.FileTooLarge, Op: op, Path: c.tooLarge[0],
			Msg:     fmt.Sprintf("%d file(s) larger than the %d-byte limit of a copied file", len(c.tooLarge)+c.tooLargeUnlisted, c.max),
			Details: map[string]any{"too_large": c.tooLarge, "limit": c.max, "skipped": c.rep.Skipped}}
	}
	return c.rep, nil
}

// treeCopy is one CopyTree call.
type treeCopy struct {
	ctx context.Context
	op  string
	max int64
	rep CopyReport

	tooLarge         []string // set: the copy fails, the walk only looks for more
	tooLargeUnlisted int
}

func (c *treeCopy) fail(p string, err error) error {
	return errs.Wrap(errs.Internal, c.op, p, err)
}

// dir copies the entries of the open source directory sd into the open destination directory dd.
func (c *treeCopy) dir(sd, dd *os.File, rel string, depth int) error {
	if depth > maxCopyDepth {
		return errs.New(errs.LimitExceeded, c.op, rel, "directories nested deeper than %d levels", maxCopyDepth)
	}
	for {
		names, err := sd.Readdirnames(256)
		for _, name := range names {
			if err := c.entry(sd, dd, name, path.Join(rel, name), depth); err != nil {
				return err
			}
		}
		if err == io.EOF || errors.Is(err, unix.ENOENT) { // ENOENT: removed while copying
			return nil
		}
		if err != nil {
			return c.fail(rel, err)
		}
	}
}

// entry copies one name of sd. Its type comes from fstatat without following a link; a file or
// directory is then opened with O_NOFOLLOW and its type taken again from the open descriptor. A
// name whose type changed between the two looks is looked at again (three times at most).
func (c *treeCopy) entry(sd, dd *os.File, name, rel string, depth int) error {
	if err := c.ctx.Err(); err != nil {
		return c.fail(rel, err)
	}
	sfd := int(sd.Fd())
	for range 3 {
		var st unix.Stat_t
		if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return c.gone(rel, err)
		}
		var done bool
		var err error
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			done, err = c.link(sfd, dd, name, rel)
		case unix.S_IFREG, unix.S_IFDIR:
			done, err = c.open(sfd, dd, name, rel, depth)
		default:
			c.rep.skip(rel, special(uint32(st.Mode)))
			return nil
		}
		if done || err != nil {
			return err
		}
	}
	c.rep.skip(rel, "changed")
	return nil
}

// special names the type of a file that is not copied.
func special(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "device"
}

// gone forgives an entry that a concurrent command removed or renamed between the listing and
// the copy.
func (c *treeCopy) gone(rel string, err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	return c.fail(rel, err)
}

// link copies the symbolic link name as a link; done is false when it is no link any more.
func (c *treeCopy) link(sfd int, dd *os.File, name, rel string) (done bool, err error) {
	if c.tooLarge != nil {
		return true, nil
	}
	target, err := readlinkat(sfd, name)
	if errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	if err != nil {
		return true, c.gone(rel, err)
	}
	if err := unix.Symlinkat(target, int(dd.Fd()), name); err != nil {
		return true, c.fail(rel, err)
	}
	return true, nil
}

func readlinkat(dfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		m, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if m < n || n >= 1<<16 {
			return string(buf[:m]), nil
		}
	}
}

// open opens name (a file or a directory when fstatat looked) without following a link and
// without blocking, and copies what the descriptor is; done is false when it is a link now.
func (c *treeCopy) open(sfd int, dd *os.File, name, rel string, depth int) (done bool, err error) {
	fd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EOPNOTSUPP) { // a link, or a socket, swapped in
		return false, nil
	}
	if err != nil {
		return true, c.gone(rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return true, c.fail(rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return true, c.file(f, st.Size, os.FileMode(st.Mode).Perm(), dd, name, rel)
	case unix.S_IFDIR:
		return true, c.subdir(f, os.FileMode(st.Mode).Perm(), dd, name, rel, depth)
	}
	c.rep.skip(rel, special(uint32(st.Mode))) // swapped in after fstatat: opened without blocking, never read
	return true, nil
}

func (c *treeCopy) subdir(sd *os.File, perm os.FileMode, dd *os.File, name, rel string, depth int) error {
	dfd := int(dd.Fd())
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return c.fail(rel, err)
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return c.fail(rel, err)
	}
	nd := os.NewFile(uintptr(fd), rel)
	defer nd.Close()
	if err := c.dir(sd, nd, rel, depth+1); err != nil {
		return err
	}
	if err := nd.Chmod(perm | 0o700); err != nil {
		return c.fail(rel, err)
	}
	return nil
}

// file copies the open regular file sf of the given size (as fstat saw it: a file that grows
// meanwhile is copied up to that size) into a new file name of dd.
func (c *treeCopy) file(sf *os.File, size int64, perm os.FileMode, dd *os.File, name, rel string) error {
	if c.max >= 0 && size > c.max {
		if len(c.tooLarge) < maxCopyListed {
			c.tooLarge = append(c.tooLarge, rel)
		} else {
			c.tooLargeUnlisted++
		}
		return nil
	}
	if c.tooLarge != nil {
		return nil
	}
	fd, err := unix.Openat(int(dd.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return c.fail(rel, err)
	}
	df := os.NewFile(uintptr(fd), rel)
	defer df.Close()
	if err := copyData(c.ctx, df, sf, size); err != nil {
		return c.fail(rel, err)
	}
	if err := df.Chmod(perm); err != nil {
		return c.fail(rel, err)
	}
	if err := df.Close(); err != nil {
		return c.fail(rel, err)
	}
	return nil
}

// streamCopy copies n bytes of src from offset off to the same offset of dst, through a buffer.
func streamCopy(ctx context.Context, dst, src *os.File, off, n int64) error {
	_, err := io.Copy(io.NewOffsetWriter(dst, off), ctxReader{ctx, io.NewSectionReader(src, off, n)})
	return err
}
