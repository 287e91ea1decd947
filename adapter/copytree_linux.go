//go:build linux && !sandboxer_portable

package adapter

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// copyChunk is the most one copy_file_range call copies: the context is checked between calls.
const copyChunk = 64 << 20

// copyData copies the first size bytes of src into the empty file dst, keeping holes: only the
// data extents SEEK_DATA and SEEK_HOLE find are copied (by copy_file_range, in the kernel), and
// dst is then cut to size, so a hole stays a hole whatever the apparent size.
func copyData(ctx context.Context, dst, src *os.File, size int64) error {
	sfd := int(src.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(sfd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole from off on (or the file shrank)
		}
		if err != nil { // a file system without SEEK_DATA: all of it is data
			if err := copyRange(ctx, dst, src, off, size); err != nil {
				return err
			}
			break
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(sfd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		hole = min(hole, size)
		if err := copyRange(ctx, dst, src, data, hole); err != nil {
			return err
		}
		off = hole
	}
	return dst.Truncate(size)
}

// copyRange copies the bytes [from, to) of src to the same offsets of dst: copy_file_range, or
// a stream copy where the kernel or the file systems cannot (EXDEV, ENOSYS, EINVAL, EOPNOTSUPP).
func copyRange(ctx context.Context, dst, src *os.File, from, to int64) error {
	sfd, dfd := int(src.Fd()), int(dst.Fd())
	roff, woff := from, from
	for roff < to {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := unix.CopyFileRange(sfd, &roff, dfd, &woff, int(min(to-roff, copyChunk)), 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
				return streamCopy(ctx, dst, src, roff, to-roff)
			}
			return err
		}
		if n == 0 {
			return nil // the file shrank under the copy
		}
	}
	return nil
}
