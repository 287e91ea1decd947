package snapshot_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/snapshot"
)

// needDocker skips t without a usable Docker daemon and image, or fails it where
// SANDBOXER_TEST_REQUIRE names docker (as adapter/docker's tests do).
func needDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := image.Ready(ctx)
	if err == nil {
		return
	}
	if testenv.Required("docker") {
		t.Fatalf("Docker daemon not usable: %v", err)
	}
	t.Skip("Docker daemon not usable (set SANDBOXER_TEST_REQUIRE=docker to fail instead):", err)
}

// crossContainer takes a real workspace on local, restores it into the container sandbox,
// compares, changes it there, takes it there and restores it on local and memory.
func crossContainer(t *testing.T, newSB func(t *testing.T) adapter.Sandbox) {
	ctx := context.Background()
	c, want := taken(t, largeModule)
	box := newSB(t)
	require.NoError(t, c.Restore(ctx, "s", box, snapshot.RestoreOptions{}))
	assert.Equal(t, want, treeOf(t, ctx, box))
	res, err := box.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "bin/run.sh"}})
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(res.Stdout), "the restored script runs in the container")

	require.NoError(t, box.WriteFile(ctx, "made/in/container.txt", []byte("container")))
	_, err = c.Take(ctx, box, "from-container")
	require.NoError(t, err)
	want2 := treeOf(t, ctx, box)
	for _, dst := range []adapter.Sandbox{newLocal(t, ""), newMemory(t)} {
		require.NoError(t, c.Restore(ctx, "from-container", dst, snapshot.RestoreOptions{}))
		assert.Equal(t, want2, treeOf(t, ctx, dst))
	}
	// Replace into the container itself: back to the local snapshot.
	require.NoError(t, c.Restore(ctx, "s", box, snapshot.RestoreOptions{Replace: true}))
	assert.Equal(t, want, treeOf(t, ctx, box))
}

func TestDockerCrossAdapter(t *testing.T) {
	needDocker(t)
	crossContainer(t, func(t *testing.T) adapter.Sandbox {
		sb, err := docker.New(context.Background(), docker.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { sb.Stop(context.Background()) })
		return sb
	})
}

func TestOCICrossAdapter(t *testing.T) {
	testenv.NeedOCIRuntime(t, oci.Runc)
	state, err := os.MkdirTemp("", "sandboxer-snapshot-oci-")
	require.NoError(t, err)
	t.Cleanup(func() {
		// The root file system's directories are read-only.
		filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(state)
	})
	crossContainer(t, func(t *testing.T) adapter.Sandbox {
		sb, err := oci.New(context.Background(), oci.Config{Runtime: oci.Runc, StateDir: state})
		if err != nil && !testenv.Required("oci") {
			t.Skip("oci sandbox not usable here:", err)
		}
		require.NoError(t, err)
		t.Cleanup(func() { sb.Stop(context.Background()) })
		return sb
	})
}
