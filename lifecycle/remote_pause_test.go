package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// A remote sandbox is paused and resumed by its server without attaching to it (Manager.Pause,
// what `sandboxer sandbox pause` runs): the server shows it paused, refuses its commands, and
// runs them again after Resume. A remote local sandbox is refused as the server refuses it.
func TestRemotePause(t *testing.T) {
	t.Parallel()
	ctx := servetest.Context(t)
	srv, tok := tokenServer(t)
	mgr, o := newManager(t, "remote")
	o.Remote = lifecycle.RemoteOptions{URL: srv.URL, Token: tok, TTL: 10 * time.Minute}
	rec, err := mgr.Create(ctx, o)
	require.NoError(t, err)
	defer mgr.Remove(ctx, rec.ID, o)
	err = mgr.Pause(ctx, rec.ID, o)
	assert.ErrorIs(t, err, errs.InvalidInput, "the server's local adapter cannot pause")
	assert.ErrorContains(t, err, srv.URL)

	needDocker(t)
	dsrv := servetest.Start(t, "--adapter", "docker")
	o.Remote = lifecycle.RemoteOptions{URL: dsrv.URL, TTL: 10 * time.Minute}
	rec, err = mgr.Create(ctx, o)
	require.NoError(t, err)
	defer mgr.Remove(ctx, rec.ID, o)
	require.NoError(t, mgr.Pause(ctx, rec.ID, o))
	require.NoError(t, mgr.Pause(ctx, rec.ID, o), "a no-op")
	list := onServer(t, dsrv.URL, "")
	require.Len(t, list, 1)
	assert.True(t, list[0].Paused)
	ls, err := mgr.Attach(ctx, rec.ID, o)
	require.NoError(t, err, "a paused remote sandbox can be attached (its files can be read)")
	_, err = ls.Sandbox.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	require.NoError(t, mgr.Resume(ctx, rec.ID, o))
	res, err := ls.Sandbox.ExecuteCommand(ctx, adapter.Command{Args: []string{"echo", "on"}})
	require.NoError(t, err)
	assert.Equal(t, "on\n", string(res.Stdout))
	require.NoError(t, ls.Close())
	assert.False(t, onServer(t, dsrv.URL, "")[0].Paused)
}
