//go:build unix

package image

import (
	"io/fs"
	"syscall"
)

// fileID is the device, inode and link count of fi (ok false when the system does not say).
func fileID(fi fs.FileInfo) (dev, ino, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), uint64(st.Nlink), true //nolint:unconvert // int32 on darwin
}
