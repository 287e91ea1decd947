package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/tools"
)

// TestMCPSnapshotTool: the MCP server's snapshot tool takes, lists, restores (verified, over the
// files with replace) and deletes snapshots of its sandbox; a wrong action or name is a tool
// error with its code.
func TestMCPSnapshotTool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := memory.New(memory.Config{})
	require.NoError(t, err)
	defer sb.Stop(ctx)
	cat, err := snapshot.Open(t.TempDir(), snapshot.Options{})
	require.NoError(t, err)
	defer cat.Close()
	srv := newMCPServer(&caller{base: *tools.NewContext(sb), warn: io.Discard}, snapshotTool(cat, "sbx-test"))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}

	lt, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	assert.Contains(t, names, "snapshot")

	_, failed := call("write", map[string]any{"path": "a.txt", "content": "one"})
	require.False(t, failed)
	out, failed := call("snapshot", map[string]any{"action": "take", "name": "first"})
	require.False(t, failed, out)
	var taken map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &taken))
	assert.Equal(t, "first", taken["name"])
	assert.EqualValues(t, 1, taken["files"])

	out, failed = call("snapshot", map[string]any{"action": "list"})
	require.False(t, failed, out)
	assert.Contains(t, out, `"name":"first"`)

	call("write", map[string]any{"path": "a.txt", "content": "two"})
	out, failed = call("snapshot", map[string]any{"action": "restore", "name": "first"})
	assert.True(t, failed)
	assert.True(t, strings.HasPrefix(out, "SYNC_CONFLICT: "), out)
	out, failed = call("snapshot", map[string]any{"action": "restore", "name": "first", "replace": true})
	require.False(t, failed, out)
	out, _ = call("read", map[string]any{"path": "a.txt"})
	assert.Equal(t, "one", out)

	for _, c := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"action": "fork", "name": "x"}, "INVALID_INPUT: "},
		{map[string]any{"action": "take", "name": "../x"}, "INVALID_INPUT: "},
		{map[string]any{"action": "take"}, "INVALID_INPUT: "},
		{map[string]any{"action": "restore", "name": "missing"}, "TOOL_NOT_FOUND: "},
		{map[string]any{"action": "take", "name": "first"}, "SYNC_CONFLICT: "},
	} {
		out, failed = call("snapshot", c.args)
		assert.True(t, failed, "%v", c.args)
		assert.True(t, strings.HasPrefix(out, c.code), "%v: %s", c.args, out)
	}

	out, failed = call("snapshot", map[string]any{"action": "delete", "name": "first"})
	require.False(t, failed, out)
	out, _ = call("snapshot", map[string]any{"action": "list"})
	assert.Equal(t, "[]", out)
}
