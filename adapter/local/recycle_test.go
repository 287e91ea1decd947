package local_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// Recycle only looks: a sandbox is reusable when its last call left nothing but the workspace.
func TestRecycle(t *testing.T) {
	ctx := context.Background()
	for _, iso := range []string{local.IsolationAuto, local.IsolationOff} {
		t.Run(iso, func(t *testing.T) {
			// The workspace under the system's temporary directory, as the view's /tmp is: the
			// check must see it as the view's mount, not as a file left in /tmp.
			sb := newIsolated(t, local.Config{Isolation: iso})
			require.NoError(t, sb.Recycle(ctx), "a new sandbox")
			require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "keep.txt"), []byte("kept"), 0o644))
			run(t, sb, adapter.Command{Args: []string{"sh", "-c", "echo hi > out.txt"}})
			require.NoError(t, sb.Recycle(ctx), "files in the workspace do not count")

			if iso == local.IsolationAuto { // without isolation, commands have no TMPDIR of their own
				run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo x > "${TMPDIR:?}/left"`}})
				assert.Error(t, sb.Recycle(ctx), "a file in TMPDIR")
				run(t, sb, adapter.Command{Args: []string{"sh", "-c", `rm "${TMPDIR:?}/left"`}})
				require.NoError(t, sb.Recycle(ctx))
			}

			p, err := sb.Start(ctx, adapter.Command{Args: []string{"sleep", "30"}})
			require.NoError(t, err)
			assert.Error(t, sb.Recycle(ctx), "a background process")
			require.NoError(t, p.Signal(ctx, "KILL"))
			_, err = p.Wait(ctx)
			require.NoError(t, err)
			assert.Error(t, sb.Recycle(ctx), "an exited one too: the next call would list it")

			b, err := os.ReadFile(filepath.Join(sb.Dir(), "keep.txt"))
			require.NoError(t, err)
			assert.Equal(t, "kept", string(b), "Recycle changed the workspace")
			require.NoError(t, sb.Stop(ctx))
			assert.Error(t, sb.Recycle(ctx), "a stopped sandbox")
		})
	}
}

// With a file system view, /tmp, /var/tmp and /dev/shm are the sandbox's own: a file there is left.
func TestRecycleSeesTheViewsTmp(t *testing.T) {
	ctx := context.Background()
	sb := newIsolated(t, local.Config{})
	// Without a view these would be the host's directories: look before writing anything.
	if res := run(t, sb, adapter.Command{Args: []string{"true"}}); !slices.Contains(res.Isolation.Layers, local.LayerFSView) {
		t.Skip("no file system view here")
	}
	run(t, sb, adapter.Command{Args: []string{"mkdir", "-p", "/tmp/emptydir/sub"}})
	require.NoError(t, sb.Recycle(ctx), "empty directories do not count")
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", "echo x > " + dir + "/left"}, Timeout: 30 * time.Second})
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.Error(t, sb.Recycle(ctx), dir)
		run(t, sb, adapter.Command{Args: []string{"rm", dir + "/left"}})
		require.NoError(t, sb.Recycle(ctx), dir)
	}
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", "echo x > /tmp/left"}, AllowNetwork: true})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Error(t, sb.Recycle(ctx), "the helper with the network has a view of its own")
}
