package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools"
)

// AllowHosts: validated with the context, exclusive with AllowNetwork, refused by a sandbox
// without a network (memory) or without an egress proxy. The allowlist at work, end to end, is
// egress/egresstest, run by each adapter.
func TestAllowHostsContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem, err := memory.New(memory.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { mem.Stop(ctx) })
	in := json.RawMessage(`{"cmd":"true"}`)

	tc := tools.NewContext(mem)
	tc.AllowHosts = []string{"modules.example.com"}
	_, err = tools.Bash.Call(ctx, in, tc)
	require.ErrorIs(t, err, errs.SandboxUnavailable, "the memory adapter has no network")
	assert.Contains(t, err.Error(), "memory")

	tc.AllowNetwork = true
	_, err = tools.Bash.Call(ctx, in, tc)
	require.ErrorIs(t, err, errs.InvalidInput, "allowNetwork with allowHosts")

	tc.AllowNetwork = false
	tc.AllowHosts = []string{"*.com"}
	_, err = tools.Bash.Call(ctx, in, tc)
	require.ErrorIs(t, err, errs.InvalidInput, "a bad pattern")

	// A local sandbox made without AllowHosts has no proxy to enforce them.
	loc, err := local.New(local.Config{Root: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { loc.Stop(ctx) })
	tc = tools.NewContext(loc)
	tc.AllowHosts = []string{"modules.example.com"}
	_, err = tools.Bash.Call(ctx, in, tc)
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.Contains(t, err.Error(), "AllowHosts")
}
