//go:build linux && !sandboxer_portable

package local_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// TestForkKeepsSparseFileSparse: an 8 GiB sparse file a command made (two 1 MiB extents of data)
// is forked as such: the fork's st_blocks are the source's, its size and data the same. Before,
// Fork read the file whole into memory and wrote it dense.
func TestForkKeepsSparseFileSparse(t *testing.T) {
	t.Parallel()
	sb := newIsolated(t, local.Config{ForkMaxFileBytes: local.NoLimit}) // the bound is on the apparent size
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c",
		"truncate -s 8G sparse && head -c 1048576 /dev/urandom > chunk && " +
			"dd if=chunk of=sparse conv=notrunc status=none && dd if=chunk of=sparse bs=1M seek=4096 conv=notrunc status=none && " +
			"head -c 1048576 sparse | cmp - chunk"}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)

	start := time.Now()
	f, err := fork(t, sb)
	require.NoError(t, err)
	t.Logf("fork of a workspace with an 8 GiB sparse file (2 MiB of data): %v", time.Since(start))
	var src, dst syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(sb.Dir(), "sparse"), &src))
	require.NoError(t, syscall.Stat(filepath.Join(f.Dir(), "sparse"), &dst))
	t.Logf("st_blocks: source %d, fork %d", src.Blocks, dst.Blocks)
	assert.EqualValues(t, int64(8<<30), dst.Size)
	assert.LessOrEqual(t, dst.Blocks, src.Blocks+64, "the fork is denser than the source")
	res = run(t, f, adapter.Command{Args: []string{"sh", "-c",
		"cmp chunk sparse -n 1048576 && dd if=sparse bs=1M skip=4096 count=1 status=none | cmp - chunk && " +
			"dd if=sparse bs=1M skip=100 count=1 status=none | cmp - /dev/zero -n 1048576"}})
	assert.Equal(t, 0, res.ExitCode, "the fork's data: %s%s", res.Stdout, res.Stderr)
}
