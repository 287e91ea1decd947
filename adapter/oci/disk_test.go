package oci_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/adapter/oci"
)

// needDiskCap skips where workspaces cannot be capped (not root, no loop devices, no mkfs.ext4).
func needDiskCap(t *testing.T) {
	t.Helper()
	if err := diskcap.Check(); err != nil {
		t.Skip("workspaces cannot be capped here:", err)
	}
}

// TestWorkspaceCap: a command writing past Config.WorkspaceBytes (and /tmp's size) gets ENOSPC,
// the host's state directory loses at most about the cap, the sandbox still answers; the result
// lists the layer; Stop leaves no mount, loop device or file.
func TestWorkspaceCap(t *testing.T) {
	needDiskCap(t)
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		const size = 64 << 20
		sb := newSandbox(t, rt, oci.Config{WorkspaceBytes: size})
		assert.Contains(t, layers(sb, t), "disk:64MiB")
		got, err := sb.WorkspaceCap()
		require.NoError(t, err)
		assert.EqualValues(t, size, got)
		image := filepath.Join(stateDir, "oci", "sandboxes", sb.ID(), diskcap.ImageName)
		assert.Len(t, diskcap.Loops(image), 1)

		adaptertest.CheckDiskFill(t, sb, size, adapter.TmpBytes(0, oci.DefaultMemoryBytes), stateDir)
		res := sh(t, sb, "id -u; stat -c %u /workspace; ls -A /workspace")
		assert.Equal(t, "1000\n1000\n", string(res.Stdout), "the sandbox user owns an empty workspace: %s", res.Stderr)

		ws := sb.HostWorkspace()
		require.NoError(t, sb.Stop(ctx))
		assert.Empty(t, oci.Leftovers(ctx, oci.Config{StateDir: stateDir}, sb.ID()))
		assert.Empty(t, diskcap.Loops(image), "no loop device")
		assert.False(t, diskcap.MountedAt(ws), "no mount")
		mi, err := os.ReadFile("/proc/self/mountinfo")
		require.NoError(t, err)
		assert.NotContains(t, string(mi), sb.ID())
		assert.NoFileExists(t, image)
	})
}

// The default caps at DefaultWorkspaceBytes; -1 runs without a cap and says so.
func TestWorkspaceCapDefaultAndNone(t *testing.T) {
	needDiskCap(t)
	sb := newSandbox(t, oci.Runc, oci.Config{})
	assert.Contains(t, layers(sb, t), diskcap.Layer(oci.DefaultWorkspaceBytes))
	none := newSandbox(t, oci.Runc, oci.Config{WorkspaceBytes: -1})
	for _, l := range layers(none, t) {
		assert.False(t, strings.HasPrefix(l, "disk:"), l)
	}
	_, err := none.WorkspaceCap()
	assert.Error(t, err)
	kept := newSandbox(t, oci.Runc, oci.Config{KeepWorkspace: true})
	_, err = kept.WorkspaceCap()
	assert.ErrorContains(t, err, "kept")
	require.NoError(t, kept.Stop(context.Background()))
	require.NoError(t, os.RemoveAll(kept.HostWorkspace()))
}
