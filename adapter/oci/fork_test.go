package oci_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
)

// TestForkOfHostileWorkspace: the container leaves a FIFO, a link to a host file only root may
// read, an 8 GiB sparse file, and keeps swapping a file for a link to that host file while the
// host forks it. The forks hold the link as a link and never the host file's content, skip the
// FIFO (without blocking: the fork would hang on it otherwise), keep the sparse file sparse; a
// file above Config.ForkMaxFileBytes then fails the fork with errs.FileTooLarge. (os.CopyFS
// failed on the FIFO, followed the swapped link and wrote the sparse file dense.)
func TestForkOfHostileWorkspace(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runc)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("HOST SECRET"), 0o600))
	sb := newSandbox(t, oci.Runc, oci.Config{ForkMaxFileBytes: 8 << 30})
	res := sh(t, sb, `mkfifo pipe && ln -s `+secret+` leak && echo mine > f && truncate -s 8G sparse && echo data | dd of=sparse bs=1M seek=4096 conv=notrunc 2>/dev/null`)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	ctx := ctxT(t)
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"sh", "-c", adaptertest.SwapToLinkLoop, "sh", secret}})
	require.NoError(t, err)

	for i := range 3 {
		f, err := sb.Fork(ctx)
		require.NoError(t, err, "fork %d", i)
		t.Cleanup(func() { _ = f.Stop(ctx) })
		fork := f.(*oci.Sandbox)
		ws := fork.HostWorkspace()
		assert.Equal(t, []adapter.Skipped{{Path: "pipe", Type: "fifo"}}, fork.ForkSkipped().Skipped)
		target, err := os.Readlink(filepath.Join(ws, "leak"))
		require.NoError(t, err)
		assert.Equal(t, secret, target)
		adaptertest.RequireNoFileHolds(t, ws, "HOST SECRET")
		var src, dst syscall.Stat_t
		require.NoError(t, syscall.Stat(filepath.Join(sb.HostWorkspace(), "sparse"), &src))
		require.NoError(t, syscall.Stat(filepath.Join(ws, "sparse"), &dst))
		assert.EqualValues(t, int64(8<<30), dst.Size)
		assert.LessOrEqual(t, dst.Blocks, src.Blocks+64, "the fork's sparse file is dense")
		require.NoError(t, f.Stop(ctx))
	}
	require.NoError(t, p.Signal(ctx, "KILL"))
	_, _ = p.Wait(ctx)

	res = sh(t, sb, `truncate -s 8589934593 big`)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	_, err = sb.Fork(ctx)
	require.ErrorIs(t, err, errs.FileTooLarge)
	var e *errs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "big", e.Path)
}
