package docker_test

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
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
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
	t.Parallel()
	needDocker(t)
	needDiskCap(t)
	ctx := ctxT(t)
	const size = 64 << 20
	state := t.TempDir()
	sb := newSandbox(t, docker.Config{WorkspaceBytes: size, StateDir: state})
	assert.Contains(t, sh(t, sb, "true").Isolation.Layers, "disk:64MiB")
	got, err := sb.WorkspaceCap()
	require.NoError(t, err)
	assert.EqualValues(t, size, got)
	dir := docker.DiskDir(sb)
	require.NotEmpty(t, dir)
	assert.Equal(t, filepath.Join(state, "docker", "disks", sb.ID()), dir)
	assert.Len(t, diskcap.Loops(filepath.Join(dir, diskcap.ImageName)), 1)

	adaptertest.CheckDiskFill(t, sb, size, adapter.TmpBytes(0, docker.DefaultMemoryBytes), state)
	res := sh(t, sb, "id -u; stat -c %u /workspace; ls -A /workspace")
	assert.Equal(t, "1000\n1000\n", string(res.Stdout), "the sandbox user owns an empty workspace: %s", res.Stderr)

	// Another handle sees the cap too.
	other, err := docker.Attach(ctx, docker.Config{}, sb.ID())
	require.NoError(t, err)
	got, err = other.WorkspaceCap()
	require.NoError(t, err)
	assert.EqualValues(t, size, got)
	require.NoError(t, other.Detach())

	require.NoError(t, sb.Stop(ctx))
	assert.Empty(t, docker.DiskLeftovers(dir))
}

// The default caps at DefaultWorkspaceBytes; -1 keeps the anonymous volume, without a cap, and
// says so.
func TestWorkspaceCapDefaultAndNone(t *testing.T) {
	t.Parallel()
	needDocker(t)
	needDiskCap(t)
	sb := newSandbox(t, docker.Config{StateDir: t.TempDir()})
	assert.Contains(t, sh(t, sb, "true").Isolation.Layers, diskcap.Layer(docker.DefaultWorkspaceBytes))
	none := newSandbox(t, docker.Config{WorkspaceBytes: -1})
	for _, l := range sh(t, none, "true").Isolation.Layers {
		assert.False(t, strings.HasPrefix(l, "disk:"), l)
	}
	_, err := none.WorkspaceCap()
	assert.Error(t, err)
	assert.Empty(t, docker.DiskDir(none))
	require.NoError(t, none.Stop(context.Background()))
}

// A disk's directory is found again from a container's bind (diskOf) and by the janitor and Prune
// (diskAt) in both layouts: the file system at ID/fs with its workspace and home, and the legacy
// one (containers made before HOME), mounted at ID/workspace and bound whole.
func TestDiskLayouts(t *testing.T) {
	t.Parallel()
	base := filepath.Join(t.TempDir(), "docker", "disks")
	dir := filepath.Join(base, "0123456789abcdef")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "fs"), 0o755))
	mount, ws := docker.DiskMounts(dir)
	assert.Equal(t, filepath.Join(dir, "fs"), mount)
	assert.Equal(t, filepath.Join(dir, "fs", "workspace"), ws)
	assert.Equal(t, dir, docker.DiskOfBind(filepath.Join(dir, "fs", "workspace")))

	legacy := filepath.Join(base, "fedcba9876543210")
	require.NoError(t, os.MkdirAll(filepath.Join(legacy, "workspace"), 0o755))
	mount, ws = docker.DiskMounts(legacy)
	assert.Equal(t, filepath.Join(legacy, "workspace"), mount)
	assert.Equal(t, mount, ws, "the legacy file system is the workspace")
	assert.Equal(t, legacy, docker.DiskOfBind(filepath.Join(legacy, "workspace")))

	assert.Empty(t, docker.DiskOfBind("/srv/project"), "not a disk's")
	mount, _ = docker.DiskMounts(filepath.Join(t.TempDir(), "elsewhere"))
	assert.Empty(t, mount)
}
