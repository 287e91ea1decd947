//go:build linux && !sandboxer_portable

package adapter_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sparseFile makes an 8 GiB file at p with three 1 MiB data extents (at the start, in the middle
// and at the end) and returns them by offset.
func sparseFile(t *testing.T, p string) map[int64][]byte {
	t.Helper()
	const size = 8 << 30
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	extents := map[int64][]byte{}
	for i, off := range []int64{0, size / 2, size - 1<<20} {
		data := bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
		_, err := f.WriteAt(data, off)
		require.NoError(t, err)
		extents[off] = data
	}
	require.NoError(t, f.Close())
	return extents
}

func blocks(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(p, &st))
	return st.Blocks
}

// TestCopyTreeKeepsSparseFilesSparse: an 8 GiB file with 3 MiB of data is copied as 3 MiB of
// data (st_blocks as the source's, not 8 GiB of zeros), with its size and its data in place.
func TestCopyTreeKeepsSparseFilesSparse(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	extents := sparseFile(t, filepath.Join(src, "sparse"))
	start := time.Now()
	dst, _, err := copyTree(t, src, -1)
	require.NoError(t, err)
	t.Logf("copy of an 8 GiB sparse file with 3 MiB of data: %v", time.Since(start))

	got := filepath.Join(dst, "sparse")
	fi, err := os.Stat(got)
	require.NoError(t, err)
	assert.EqualValues(t, int64(8<<30), fi.Size())
	srcBlocks, dstBlocks := blocks(t, filepath.Join(src, "sparse")), blocks(t, got)
	t.Logf("st_blocks: source %d, copy %d", srcBlocks, dstBlocks)
	assert.LessOrEqual(t, dstBlocks, srcBlocks+64, "the copy is denser than the source") // 64 sectors: room for a file system's rounding
	f, err := os.Open(got)
	require.NoError(t, err)
	defer f.Close()
	for off, want := range extents {
		buf := make([]byte, len(want))
		_, err := f.ReadAt(buf, off)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, buf), "data at %d", off)
	}
	buf := make([]byte, 4096)
	_, err = f.ReadAt(buf, 1<<30)
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 4096), buf, "a hole reads as zeros")
}
