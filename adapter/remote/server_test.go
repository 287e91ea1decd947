package remote_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/servetest"
)

// TestServerCalls: Health, List and Remove, without a sandbox handle; a refusal of a sandbox
// the server does not have is SandboxUnavailable but not Unreachable, a server that does not
// answer is both.
func TestServerCalls(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tok := servetest.Token(t, tokens, "ci")
	srv := servetest.Start(t, "--adapter", "local", "--tokens", tokens)
	ctx := servetest.Context(t)
	cfg := remote.Config{URL: srv.URL, Token: tok}

	h, err := remote.Health(ctx, remote.Config{URL: srv.URL}) // no token needed
	require.NoError(t, err)
	assert.True(t, h.OK)
	assert.NotEmpty(t, h.Version)
	assert.Contains(t, h.Adapters, "local")
	assert.NotContains(t, h.Adapters, "remote", "a server does not forward to another")

	_, err = remote.New(ctx, remote.Config{URL: srv.URL, Token: tok, Create: api.CreateRequest{Adapter: "remote"}})
	assert.ErrorIs(t, err, errs.InvalidInput)

	sb, err := remote.New(ctx, cfg)
	require.NoError(t, err)
	list, err := remote.List(ctx, cfg)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, sb.ID(), list[0].ID)

	_, err = remote.List(ctx, remote.Config{URL: srv.URL, Token: "sbx_wrong"})
	assert.ErrorIs(t, err, api.CodeUnauthorized)
	assert.False(t, remote.Unreachable(err))

	require.NoError(t, remote.Remove(ctx, cfg, sb.ID()))
	err = remote.Remove(ctx, cfg, sb.ID())
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.False(t, remote.Unreachable(err), "the server answered: it has no such sandbox")
	list, err = remote.List(ctx, cfg)
	require.NoError(t, err)
	assert.Empty(t, list)
	require.NoError(t, sb.Stop(ctx), "a sandbox deleted meanwhile stops without error")

	srv.Stop(t)
	_, err = remote.Health(ctx, cfg)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.True(t, remote.Unreachable(err), "no server answers: %v", err)
	err = remote.Remove(ctx, cfg, sb.ID())
	assert.True(t, remote.Unreachable(err), "no server answers: %v", err)
}
