package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/tools"
)

// startMCP starts `sandboxer mcp` in e's workspace and connects the go-sdk client to it.
func (e *env) startMCP(t testing.TB, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Dir = e.work
	cmd.Env = e.vars
	client := mcp.NewClient(&mcp.Implementation{Name: "sandboxer-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() }) // closes stdin; the server exits (killed after a grace)
	return cs
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "first content is text")
	return tc.Text
}

func TestMCPEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.startMCP(t, "--run-id", "mcp-run", "--node-id", "agent")
	ctx := context.Background()

	// The five tools, with the tools layer's own input schemas.
	lt, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		want := tools.Lookup(tl.Name)
		require.NotNil(t, want, tl.Name)
		got, err := json.Marshal(tl.InputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, string(want.InputSchema()), string(got), "schema of %s", tl.Name)
		assert.Equal(t, !want.Metadata().SideEffect, tl.Annotations.ReadOnlyHint, tl.Name)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"bash", "edit", "grep", "read", "write"}, names)

	// Each tool once.
	res := callTool(t, cs, "write", map[string]any{"path": "src/main.txt", "content": "alpha\nbeta\n"})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "ok", text(t, res))

	res = callTool(t, cs, "edit", map[string]any{"path": "src/main.txt", "patch": "--- a\n+++ b\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n"})
	require.False(t, res.IsError, text(t, res))

	res = callTool(t, cs, "read", map[string]any{"path": "src/main.txt"})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "alpha\ngamma\n", text(t, res))

	res = callTool(t, cs, "grep", map[string]any{"pattern": "gam+a"})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "src/main.txt:2:gamma\n", text(t, res))

	res = callTool(t, cs, "bash", map[string]any{"cmd": "sh", "args": []string{"-c", "cat src/main.txt | wc -l"}})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "2", strings.TrimSpace(text(t, res)))
	var bashReply map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &bashReply))
	assert.Equal(t, true, bashReply["ok"])
	assert.EqualValues(t, 0, bashReply["exitCode"])
	assert.Contains(t, bashReply, "stdout")
	assert.Contains(t, bashReply, "truncated")

	// Errors: isError, text starting with the code, structured content equal to the CLI's JSON.
	res = callTool(t, cs, "read", map[string]any{"path": "../outside.txt"})
	require.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(text(t, res), "TOOL_PATH_ESCAPE: "), text(t, res))
	got, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	cli := e.run("", nil, "tool", "read", "--journal", "off", "--input", `{"path":"../outside.txt"}`)
	assert.Equal(t, 1, cli.code)
	assert.JSONEq(t, cli.stdout, string(got), "MCP structured content equals the CLI's JSON")

	res = callTool(t, cs, "bash", map[string]any{"cmd": "sh", "args": []string{"-c", "echo failing; exit 3"}})
	require.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(text(t, res), "TOOL_COMMAND_FAILED: "), text(t, res))
	var failed wireReply
	raw, _ = json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &failed))
	assert.EqualValues(t, 3, failed.Error.Details["exitCode"])
	assert.Equal(t, "failing\n", failed.Error.Details["output"])

	res = callTool(t, cs, "bash", map[string]any{"cmd": "wget", "args": []string{"https://example.com"}})
	require.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(text(t, res), "TOOL_NETWORK_DISABLED: "), text(t, res))

	res = callTool(t, cs, "read", map[string]any{"path": "src/main.txt", "unknown": 1})
	require.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(text(t, res), "INVALID_INPUT: "), text(t, res))

	// An unknown tool is a protocol error, not a tool result.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	require.Error(t, err)

	// Every call is in the journal, in order, with seq 1..9.
	rows := e.log(t, "--run-id", "mcp-run")
	require.Len(t, rows, 9)
	wantTools := []string{"write", "edit", "read", "grep", "bash", "read", "bash", "bash", "read"}
	for i, r := range rows {
		assert.Equal(t, wantTools[i], r.ToolName)
		assert.Equal(t, i+1, r.Seq)
		assert.Equal(t, "agent", r.NodeID)
	}
	assert.NotContains(t, rows[0].InputJSON, "alpha", "write content is redacted")
	assert.NotContains(t, rows[1].InputJSON, "gamma", "edit patch is redacted")
}

// On a retry attempt the MCP server shows the warning once as text and in every structured reply.
func TestMCPRetryWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("", nil, "tool", "write", "--run-id", "r", "--node-id", "n", "--input", `{"path":"x","content":"1"}`)
	require.Equal(t, 0, r.code, r.stderr)

	cs := e.startMCP(t, "--run-id", "r", "--node-id", "n", "--attempt", "2")
	for i := range 2 {
		res := callTool(t, cs, "read", map[string]any{"path": "x"})
		require.False(t, res.IsError)
		raw, _ := json.Marshal(res.StructuredContent)
		var w wireReply
		require.NoError(t, json.Unmarshal(raw, &w))
		assert.True(t, strings.HasPrefix(w.Warning, "[sandboxer:tool-resume-warning]"))
		if i == 0 {
			require.Len(t, res.Content, 2)
			assert.Equal(t, w.Warning, res.Content[1].(*mcp.TextContent).Text)
		} else {
			assert.Len(t, res.Content, 1, "the text warning is shown once")
		}
	}
}

// A call's journal row exists, with status running, while its command runs; the server
// completes it (after the reply) and every row is complete once the server has exited.
func TestMCPJournalRowWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.startMCP(t, "--run-id", "live", "--node-id", "n")
	called := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"cmd": "sh", "args": []string{"-c", "while [ ! -e go ]; do sleep 0.02; done; echo done"}}})
		assert.NoError(t, err)
		called <- res
	}()
	require.Eventually(t, func() bool {
		rows := e.log(t, "--run-id", "live")
		return len(rows) == 1 && rows[0].Status == "running"
	}, time.Minute, 20*time.Millisecond, "the row is written before the command ends")
	rows := e.log(t, "--run-id", "live")
	assert.Equal(t, "bash", rows[0].ToolName)
	assert.Equal(t, 1, rows[0].Seq)
	assert.NotZero(t, rows[0].StartedAtMs)
	assert.Zero(t, rows[0].FinishedAtMs)

	require.NoError(t, os.WriteFile(filepath.Join(e.work, "go"), nil, 0o644))
	res := <-called
	require.NotNil(t, res)
	require.False(t, res.IsError, text(t, res))
	res = callTool(t, cs, "read", map[string]any{"path": "go"})
	require.False(t, res.IsError, text(t, res))
	require.NoError(t, cs.Close()) // the server exits once its rows are complete

	rows = e.log(t, "--run-id", "live")
	require.Len(t, rows, 2)
	for i, r := range rows {
		assert.Equal(t, "success", r.Status, "row %d", i)
		assert.NotZero(t, r.FinishedAtMs, "row %d", i)
		assert.NotEmpty(t, r.IdempotencyKey, "row %d", i)
	}
	assert.Contains(t, rows[0].OutputJSON, "done")
}
