package snapshot

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing n bytes of f at off to the disk without waiting (a hint: an
// error shows at the fsync).
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
