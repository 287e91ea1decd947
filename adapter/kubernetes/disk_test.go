package kubernetes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/errs"
)

// A command that fills its disk (issue 34, item 5): /tmp, memory-backed, ends in ENOSPC at its
// size; the workspace has no file system of its own on a node, so the kubelet evicts the pod once
// it holds more than its limit. The sandbox then fails every call with SANDBOX_UNAVAILABLE naming
// the eviction, and the node gets its space back. SANDBOXER_TEST_K8S_NODE_DIR (the fixture's
// kubelet directory, on this machine) lets the test watch the node's free space.
func TestDiskFillEvictsThePod(t *testing.T) {
	t.Parallel()
	const limit = 64 << 20
	sb := newSandbox(t, cfgWith(func(c *kubernetes.Config) { c.WorkspaceBytes = limit; c.TmpBytes = 16 << 20 }))
	ctx := ctxT(t)
	p, err := kubernetes.PodOf(ctx, sb)
	require.NoError(t, err)
	assert.Equal(t, int64(limit), p.Spec.Containers[0].Resources.Limits.StorageEphemeral().Value())

	nodeDir := os.Getenv("SANDBOXER_TEST_K8S_NODE_DIR")
	var before int64
	vol := filepath.Join(nodeDir, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "workspace")
	if nodeDir != "" {
		before = freeBytes(t, nodeDir)
		require.DirExists(t, vol, "the pod's workspace volume on the node")
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c",
		"dd if=/dev/zero of=/tmp/fill bs=1048576 count=64 2>&1; echo exit=$?; rm -f /tmp/fill"}})
	require.NoError(t, err)
	assert.Contains(t, string(res.Stdout), "No space left on device", "/tmp is capped")
	assert.NotContains(t, string(res.Stdout), "exit=0")

	// Four times the limit: written (nothing stops a write), then the kubelet notices.
	res, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c",
		fmt.Sprintf("dd if=/dev/zero of=/workspace/fill bs=1048576 count=%d 2>&1; sync; echo exit=$?", 4*limit>>20)}})
	require.NoError(t, err)
	require.Contains(t, string(res.Stdout), "exit=0", "%s", res.Stderr)

	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	require.Error(t, err, "the pod was not evicted within 3 minutes of holding 4x its workspace limit")
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "Evicted", "the error names the eviction")
	t.Log(err)
	_, err = sb.ReadFile(ctx, "fill")
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)

	if nodeDir == "" {
		t.Log("SANDBOXER_TEST_K8S_NODE_DIR unset: the node's free space is not checked")
		return
	}
	// The evicted pod's emptyDir goes with it; Stop deletes what is left. The node's free space
	// is shared with every other writer of its file system (other tests, builds), so what is
	// checked is that the pod's own volume, where the fill was, is gone; the free space is logged.
	require.NoError(t, sb.Stop(ctx))
	var statErr error
	for range 60 {
		if _, statErr = os.Stat(vol); os.IsNotExist(statErr) {
			break
		}
		time.Sleep(time.Second)
	}
	assert.True(t, os.IsNotExist(statErr), "the node got its space back: the pod's workspace volume %s is gone (%v)", vol, statErr)
	syscall.Sync()
	t.Logf("the node's free space: %d bytes less than before the fill", before-freeBytes(t, nodeDir))
}

func freeBytes(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * int64(st.Bsize)
}
