package remote_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestSnapshotRoundTrip: a snapshot taken through the adapter restores in place (verified) and
// into a sandbox created from it; it is listed and deleted; a local sandbox refuses Pause.
func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	srv := server(t)
	ctx := servetest.Context(t)
	cfg := remote.Config{URL: srv.URL}
	sb, err := remote.New(ctx, cfg)
	require.NoError(t, err)
	defer sb.Stop(ctx)
	require.NoError(t, sb.WriteFile(ctx, "a/b.txt", []byte("kept")))

	snap, err := sb.Snapshot(ctx, "round-1")
	require.NoError(t, err)
	assert.Equal(t, 1, snap.Files)
	assert.Equal(t, sb.ID(), snap.Source)
	_, err = sb.Snapshot(ctx, "round-1")
	assert.ErrorIs(t, err, errs.Conflict)
	_, err = sb.Snapshot(ctx, "no/slash")
	assert.ErrorIs(t, err, errs.InvalidInput)

	require.NoError(t, sb.WriteFile(ctx, "a/b.txt", []byte("changed")))
	_, err = sb.Restore(ctx, "round-1", false)
	assert.ErrorIs(t, err, errs.Conflict, "a workspace with files needs replace")
	res, err := sb.Restore(ctx, "round-1", true)
	require.NoError(t, err)
	assert.Equal(t, api.Restored{Snapshot: "round-1", Sandbox: sb.ID(), Files: 1, Bytes: 4}, res)
	got, err := sb.ReadFile(ctx, "a/b.txt")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(got))
	_, err = sb.Restore(ctx, "missing", true)
	assert.ErrorIs(t, err, errs.NotFound)

	from := cfg
	from.Create.FromSnapshot = "round-1"
	sb2, err := remote.New(ctx, from)
	require.NoError(t, err)
	defer sb2.Stop(ctx)
	got, err = sb2.ReadFile(ctx, "a/b.txt")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(got))

	list, err := remote.ListSnapshots(ctx, cfg, "round-")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "round-1", list[0].Name)
	require.NoError(t, remote.DeleteSnapshot(ctx, cfg, "round-1"))
	assert.ErrorIs(t, remote.DeleteSnapshot(ctx, cfg, "round-1"), errs.NotFound)
	list, err = remote.ListSnapshots(ctx, cfg, "")
	require.NoError(t, err)
	assert.Empty(t, list)

	assert.ErrorIs(t, sb.Pause(ctx), errs.InvalidInput, "a local sandbox cannot pause")
}

// TestPauseDocker: a remote docker sandbox passes the pause check of the conformance suite
// (a background counter stops and goes on), refuses commands while paused with details.paused,
// and is snapshotted while paused.
func TestPauseDocker(t *testing.T) {
	t.Parallel()
	if err := dockerReachable(); err != nil {
		if testenv.Required("docker") {
			t.Fatalf("docker: %v", err)
		}
		t.Skipf("docker: %v", err)
	}
	srv := servetest.Start(t, "--adapter", "docker")
	ctx := servetest.Context(t)
	sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
	require.NoError(t, err)
	defer sb.Stop(ctx)
	adaptertest.CheckPause(t, sb)

	require.NoError(t, sb.WriteFile(ctx, "f.txt", []byte("frozen")))
	require.NoError(t, sb.Pause(ctx))
	assert.True(t, sb.Info().Paused)
	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	var e *errs.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, true, e.Details["paused"])
	snap, err := sb.Snapshot(ctx, "while-paused")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, snap.Files, 1)
	require.NoError(t, sb.Resume(ctx))
	assert.False(t, sb.Info().Paused)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "f.txt"}})
	require.NoError(t, err)
	assert.Equal(t, "frozen", string(res.Stdout))
}
