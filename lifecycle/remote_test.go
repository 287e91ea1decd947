package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// tokenServer starts a real `sandboxerd serve` with tokens and extra flags, and returns it with
// a token of it.
func tokenServer(t *testing.T, flags ...string) (*servetest.Server, string) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tok := servetest.Token(t, tokens, "ci")
	return servetest.Start(t, append([]string{"--adapter", "local", "--tokens", tokens}, flags...)...), tok
}

// onServer lists the token's sandboxes on the server.
func onServer(t *testing.T, url, token string) []api.Sandbox {
	t.Helper()
	list, err := remote.List(servetest.Context(t), remote.Config{URL: url, Token: token})
	require.NoError(t, err)
	return list
}

// The remote adapter's long-lived sandboxes: created on a real server, the record keeping its
// URL and id there but never the token; attached from a second Manager, forked on the server,
// removed there; a sandbox the server removed is gone (pruned), one whose server does not
// answer is not.
func TestRemoteLifecycle(t *testing.T) {
	t.Parallel()
	ctx := servetest.Context(t)
	srv, tok := tokenServer(t)
	mgr, o := newManager(t, "remote")
	o.Remote = lifecycle.RemoteOptions{URL: srv.URL, Token: tok, TTL: 10 * time.Minute, IdleTimeout: -1}

	// Refusals leave nothing, here or on the server.
	_, err := mgr.Create(ctx, lifecycle.Options{Adapter: "remote"})
	assert.ErrorIs(t, err, errs.InvalidInput, "no URL")
	wrong := o
	wrong.Remote.Token = "sbx_wrong"
	_, err = mgr.Create(ctx, wrong)
	assert.ErrorIs(t, err, api.CodeUnauthorized)
	assert.ErrorContains(t, err, srv.URL)
	assertNothingLeft(t, mgr)
	assert.Empty(t, onServer(t, srv.URL, tok))

	rec, err := mgr.Create(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, "remote", rec.Adapter)
	assert.Equal(t, srv.URL, rec.URL)
	list := onServer(t, srv.URL, tok)
	require.Len(t, list, 1, "the sandbox outlives the Create")
	assert.Equal(t, rec.Backend, list[0].ID)
	assert.Equal(t, 10*time.Minute, list[0].ExpiresAt.Sub(list[0].CreatedAt), "the TTL asked")
	assert.Zero(t, list[0].IdleTimeoutSeconds, "no idle timeout, as asked")
	raw, err := os.ReadFile(filepath.Join(mgr.Dir(), "sandboxes", rec.ID, "sandbox.json"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), rec.Backend)
	assert.NotContains(t, string(raw), tok, "the record never holds the token")

	other := lifecycle.NewManager(mgr.Dir())
	ls, err := other.Attach(ctx, rec.ID, o)
	require.NoError(t, err)
	assert.Equal(t, "remote:local", ls.Sandbox.(adapter.Capable).Capabilities().Adapter)
	require.NoError(t, ls.Sandbox.WriteFile(ctx, "f", []byte("kept")))
	require.NoError(t, ls.Detach(ctx))
	require.NoError(t, ls.Close())
	alive, err := mgr.Alive(ctx, rec, o)
	require.NoError(t, err)
	assert.True(t, alive, "detached, not deleted")

	// Another server's URL in the Options: its token is not sent to this one.
	elsewhere := o
	elsewhere.Remote.URL = "http://127.0.0.1:1"
	_, err = mgr.Attach(ctx, rec.ID, elsewhere)
	assert.ErrorIs(t, err, errs.InvalidInput)
	// Without a URL, the record's server.
	noURL := o
	noURL.Remote.URL = ""
	ls, err = mgr.Attach(ctx, rec.ID, noURL)
	require.NoError(t, err)
	fork, _, err := mgr.Fork(ctx, ls, noURL)
	require.NoError(t, err)
	require.NoError(t, ls.Close())
	assert.Equal(t, rec.ID, fork.ForkOf)
	assert.Equal(t, srv.URL, fork.URL)
	assert.NotEqual(t, rec.Backend, fork.Backend)
	fs, err := mgr.Attach(ctx, fork.ID, o)
	require.NoError(t, err)
	b, err := fs.Sandbox.ReadFile(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(b), "the fork has the source's files")
	require.NoError(t, fs.Close())
	assert.Len(t, onServer(t, srv.URL, tok), 2)

	require.NoError(t, mgr.Remove(ctx, fork.ID, o))
	assert.Len(t, onServer(t, srv.URL, tok), 1, "removed on the server")

	// Gone on the server (expired, deleted by another client): not alive, pruned.
	require.NoError(t, remote.Remove(ctx, remote.Config{URL: srv.URL, Token: tok}, rec.Backend))
	_, err = mgr.Attach(ctx, rec.ID, o)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	alive, err = mgr.Alive(ctx, rec, o)
	require.NoError(t, err)
	assert.False(t, alive)
	rep, err := mgr.Prune(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, []string{rec.ID}, rep.Removed)
	assertNothingLeft(t, mgr)

	// A server that does not answer: the record is kept (not alive is not known).
	rec, err = mgr.Create(ctx, o)
	require.NoError(t, err)
	srv.Stop(t) // removes its sandboxes
	_, err = mgr.Alive(ctx, rec, o)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.ErrorContains(t, err, srv.URL, "the error names the server")
	rep, err = mgr.Prune(ctx, o)
	require.NoError(t, err)
	assert.Empty(t, rep.Removed)
	assert.Error(t, mgr.Remove(ctx, rec.ID, o), "a sandbox that cannot be deleted keeps its record")
	_, err = mgr.Get(rec.ID)
	require.NoError(t, err)
	require.NoError(t, mgr.Forget(rec.ID))
}

// Open asks the server for what Options set (its adapter, the memory limit) and leaves the
// rest to it; Stop deletes the sandbox there. A server whose default gives sandboxes the network
// is refused a sandbox that did not ask for it.
func TestRemoteOpen(t *testing.T) {
	t.Parallel()
	ctx := servetest.Context(t)
	srv, tok := tokenServer(t, "--allow-network")
	o := lifecycle.Options{Adapter: "remote", AllowNetwork: true, Local: lifecycle.LocalOptions{Memory: 64 << 20},
		Remote: lifecycle.RemoteOptions{URL: srv.URL, Token: tok, Adapter: "memory"}}
	sb, err := lifecycle.Open(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, "remote:memory", sb.(adapter.Capable).Capabilities().Adapter)
	info := sb.(*remote.Sandbox).Info()
	assert.EqualValues(t, 64<<20, info.MemoryBytes)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"echo", "on the server"}})
	require.NoError(t, err)
	assert.Equal(t, "on the server\n", string(res.Stdout))
	require.NoError(t, sb.Stop(ctx))
	assert.Empty(t, onServer(t, srv.URL, tok), "Stop deletes it on the server")

	o.AllowNetwork = false
	_, err = lifecycle.Open(ctx, o)
	assert.ErrorIs(t, err, errs.IsolationUnavailable, "the server's default network was not asked for")
	assert.Empty(t, onServer(t, srv.URL, tok), "the refused sandbox is deleted")

	o.Remote.URL = "http://127.0.0.1:1"
	_, err = lifecycle.Open(ctx, o)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.ErrorContains(t, err, "http://127.0.0.1:1")
	o.Remote.URL = "http://user:secret@127.0.0.1:1"
	_, err = lifecycle.Open(ctx, o)
	assert.ErrorIs(t, err, errs.InvalidInput, "credentials in a URL, which records keep")
	assert.NotContains(t, err.Error(), "secret")

	// A context that ends: the create does not hang.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	o.Remote.URL = srv.URL
	_, err = lifecycle.Open(cctx, o)
	assert.ErrorIs(t, err, context.Canceled)
}
