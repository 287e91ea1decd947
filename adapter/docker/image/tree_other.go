//go:build !unix

package image

import "io/fs"

// fileID is the device, inode and link count of fi: unknown here (no hard links are found).
func fileID(fs.FileInfo) (dev, ino, nlink uint64, ok bool) { return 0, 0, 0, false }
