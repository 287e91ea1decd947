package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	return e.startMCPWith(t, nil, args...)
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

	// The tools, with the tools layer's own input schemas.
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
	assert.Equal(t, []string{"bash", "edit", "grep", "process_input", "process_kill", "process_list", "process_output", "read", "write"}, names)

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

// rpcReply is one JSON-RPC response as the server writes it.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// assertError checks an error reply's code and id (as JSON).
func assertError(t *testing.T, line []byte, code int64, id string) rpcReply {
	t.Helper()
	var r rpcReply
	require.NoError(t, json.Unmarshal(line, &r), "%s", line)
	require.NotNil(t, r.Error, "%s", line)
	assert.Equal(t, code, r.Error.Code, "%s", line)
	require.NotNil(t, r.ID, "the reply has an id member: %s", line)
	assert.JSONEq(t, id, string(r.ID), "%s", line)
	return r
}

// tool calls a tool and returns its text and isError.
func (c *wireClient) tool(tb testing.TB, name, args string) (string, bool) {
	tb.Helper()
	raw := c.roundTrip(tb, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args))
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(tb, json.Unmarshal(raw, &res))
	require.NotEmpty(tb, res.Content)
	return res.Content[0].Text, res.IsError
}

// Nothing a message contains ends the session: each bad line gets its error reply, and a normal
// tools/call is served right after it, in the same session.
func TestMCPAnswersBadMessagesAndGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := startWireClient(t, e, "--adapter", "memory", "--journal", "off", "--mcp-max-message-bytes", "65536")
	alive := func(after string) {
		t.Helper()
		text, isError := c.tool(t, "bash", `{"cmd":"echo","args":["alive"]}`)
		require.False(t, isError, "after %s: %s", after, text)
		require.Equal(t, "alive\n", text, "after %s", after)
	}
	pad := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		name, line string
		code       int64
		id         string
	}{
		{"not JSON", `not json`, -32700, `null`},
		{"cut JSON", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{`, -32700, `null`},
		{"two values", `{"jsonrpc":"2.0","id":"a","method":"ping"} {}`, -32700, `null`},
		{"not an object", `"tools/call"`, -32600, `null`},
		{"no version", `{"id":"b","method":"ping"}`, -32600, `"b"`},
		{"wrong version", `{"jsonrpc":"1.0","id":"c","method":"ping"}`, -32600, `"c"`},
		{"id not a string or integer", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, `null`},
		{"method not a string", `{"jsonrpc":"2.0","id":"d","method":["tools/call"]}`, -32600, `"d"`},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, -32600, `null`},
		{"empty batch", `[]`, -32600, `null`},
		{"invalid UTF-8 in a write", "{\"jsonrpc\":\"2.0\",\"id\":\"e\",\"method\":\"tools/call\",\"params\":{\"name\":\"write\",\"arguments\":{\"path\":\"u.txt\",\"content\":\"\xff\xfe\"}}}", -32700, `"e"`},
		{"invalid UTF-8 outside strings", "\xff{}", -32700, `null`},
		{"over the limit, id first", `{"jsonrpc":"2.0","id":"f","method":"tools/call","params":{"name":"write","arguments":{"path":"big","content":"` + pad + `"}}}`, -32600, `"f"`},
		{"over the limit, id last", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write","arguments":{"path":"big","content":"` + pad + `"}},"id":"g"}`, -32600, `null`},
		{"unknown method", `{"jsonrpc":"2.0","id":"h","method":"no/such"}`, -32601, `"h"`},
	} {
		c.send(t, tc.line)
		r := assertError(t, c.reply(t), tc.code, tc.id)
		if strings.HasPrefix(tc.name, "over the limit") {
			assert.JSONEq(t, `{"maxMessageBytes":65536}`, string(r.Error.Data))
		}
		alive(tc.name)
	}
	text, isError := c.tool(t, "read", `{"path":"u.txt"}`)
	assert.True(t, isError, "the write with invalid UTF-8 did not run")
	assert.True(t, strings.HasPrefix(text, "TOOL_NOT_FOUND"), text)

	// Empty and blank lines are not messages: no reply.
	c.send(t, "\n  \r\n\t")
	alive("empty lines")

	// A batch mixing good and bad entries: each entry answered, in one array.
	c.send(t, `[{"jsonrpc":"2.0","id":"i","method":"tools/call","params":{"name":"bash","arguments":{"cmd":"echo","args":["in a batch"]}}},`+
		`"bad",{"jsonrpc":"2.0","method":"notifications/nothing"},{"jsonrpc":"2.0","id":"j","method":"no/such"},{"jsonrpc":"2.0","id":7.5,"method":"ping"}]`)
	var replies []json.RawMessage
	line := c.reply(t)
	require.NoError(t, json.Unmarshal(line, &replies), "%s", line)
	require.Len(t, replies, 4, "%s", line)
	var first rpcReply
	require.NoError(t, json.Unmarshal(replies[0], &first))
	assert.JSONEq(t, `"i"`, string(first.ID))
	require.NotNil(t, first.Result, "%s", replies[0])
	assert.Equal(t, "in a batch\n", first.Result.Content[0].Text)
	assertError(t, replies[1], -32600, `null`)
	assertError(t, replies[2], -32601, `"j"`)
	assertError(t, replies[3], -32600, `null`)
	alive("a batch")
}

// A 100 MB message over the limit is skipped without being kept: the server's peak memory stays
// far below the message's size.
func TestMCPOversizedMessageMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := startWireClient(t, e, "--adapter", "memory", "--mcp-max-message-bytes", "1048576")
	chunk := bytes.Repeat([]byte("y"), 1<<20)
	go func() {
		io.WriteString(c.in, `{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"write","arguments":{"path":"big","content":"`)
		for range 100 {
			if _, err := c.in.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(c.in, `"}}}`+"\n")
	}()
	r := assertError(t, c.reply(t), -32600, `"huge"`)
	assert.JSONEq(t, `{"maxMessageBytes":1048576}`, string(r.Error.Data))
	text, isError := c.tool(t, "write", `{"path":"small","content":"fine"}`)
	require.False(t, isError, text)

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	require.NoError(t, err)
	var peakKiB int
	for l := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			_, err := fmt.Sscan(v, &peakKiB)
			require.NoError(t, err)
		}
	}
	t.Logf("server peak RSS %d MiB after a 100 MiB message (limit 1 MiB)", peakKiB>>10)
	assert.Less(t, peakKiB, 64<<10, "peak RSS under 64 MiB")
}

// sleepMarker is a sleep duration no other process uses, to find a test's commands in /proc.
func sleepMarker() string {
	return fmt.Sprintf("3600.%09d", time.Now().UnixNano()%1e9)
}

// pidsOf lists the processes whose command line is sleep marker.
func pidsOf(marker string) []string {
	var pids []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.HasSuffix(string(cmdline), "sleep\x00"+marker+"\x00") {
			pids = append(pids, d.Name())
		}
	}
	return pids
}

// rawServer is `sandboxer mcp` on pipes the test holds both ends of, so that it can close them.
type rawServer struct {
	*wireClient
	inW, outR *os.File
	exited    chan error
	stderr    *bytes.Buffer
}

func startRawServer(t *testing.T, e *env, args ...string) *rawServer {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = e.work, e.vars, inR, outW, &stderr
	require.NoError(t, cmd.Start())
	inR.Close()
	outW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		cmd.Process.Kill() // only if the test failed before the server exited
	})
	c := &wireClient{in: inW, out: bufio.NewReader(outR), cmd: cmd}
	c.roundTrip(t, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return &rawServer{wireClient: c, inW: inW, outR: outR, exited: exited, stderr: &stderr}
}

// exits0 waits for the server to exit, with status 0.
func (s *rawServer) exits0(t *testing.T) {
	t.Helper()
	select {
	case err := <-s.exited:
		require.NoError(t, err, "the server exits 0: %s", s.stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("the server did not exit: %s", s.stderr.String())
	}
	assert.NotContains(t, s.stderr.String(), "panic")
}

// A client that goes away (both of its pipes closed) in the middle of a call: the command's tree
// is killed, the row is completed as cancelled, and the server exits 0.
func TestMCPClientDisconnectsMidCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := startRawServer(t, e, "--run-id", "gone", "--node-id", "n")
	marker := sleepMarker()
	c.send(t, `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"bash","arguments":`+
		`{"cmd":"sh","args":["-c","sleep `+marker+` & sleep `+marker+`; echo never"]}}}`)
	require.Eventually(t, func() bool { return len(pidsOf(marker)) == 2 }, time.Minute, 20*time.Millisecond,
		"the command and its background child run")

	require.NoError(t, c.inW.Close())
	require.NoError(t, c.outR.Close())
	c.exits0(t)
	assert.Empty(t, pidsOf(marker), "the command's tree is killed")

	rows := e.log(t, "--run-id", "gone")
	require.Len(t, rows, 1)
	assert.Equal(t, "error", rows[0].Status)
	assert.NotZero(t, rows[0].FinishedAtMs)
	var werr struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	}
	require.NoError(t, json.Unmarshal([]byte(rows[0].ErrorJSON), &werr), rows[0].ErrorJSON)
	assert.Equal(t, "PROCESS_FAILED", werr.Code)
	assert.Equal(t, true, werr.Details["cancelled"])
	assert.Equal(t, "the client closed the connection", werr.Details["reason"])
}

// A client that stops reading (its end of the server's stdout closed) but still writes: the
// reply the server cannot write ends the session, the server exits 0 rather than being killed by
// SIGPIPE, and the call's row is complete.
func TestMCPClientStopsReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := startRawServer(t, e, "--run-id", "deaf", "--node-id", "n")
	require.NoError(t, c.outR.Close())
	c.send(t, `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"bash","arguments":{"cmd":"echo","args":["unread"]}}}`)
	c.exits0(t)
	rows := e.log(t, "--run-id", "deaf")
	require.Len(t, rows, 1)
	assert.Equal(t, "success", rows[0].Status)
}

// notifications/cancelled for one of two running calls kills that call's command and nothing
// else: the other call finishes normally, and the session goes on.
func TestMCPCancelOneOfTwoCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.startMCP(t, "--run-id", "cancel", "--node-id", "n")
	marker := sleepMarker()

	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	doneA := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctxA, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"cmd": "sh", "args": []string{"-c", "sleep " + marker + " & sleep " + marker}}})
		doneA <- err
	}()
	doneB := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"cmd": "sh", "args": []string{"-c", "while [ ! -e go ]; do sleep 0.02; done; echo B done"}}})
		assert.NoError(t, err)
		doneB <- res
	}()
	require.Eventually(t, func() bool {
		rows := e.log(t, "--run-id", "cancel")
		return len(rows) == 2 && rows[0].Status == "running" && rows[1].Status == "running" && len(pidsOf(marker)) == 2
	}, time.Minute, 20*time.Millisecond, "both calls run")

	cancelA()
	require.ErrorIs(t, <-doneA, context.Canceled)
	require.Eventually(t, func() bool { return len(pidsOf(marker)) == 0 }, time.Minute, 20*time.Millisecond,
		"the cancelled call's tree is killed")
	var rowA logRow
	require.Eventually(t, func() bool {
		for _, r := range e.log(t, "--run-id", "cancel") {
			if strings.Contains(r.InputJSON, marker) && r.Status != "running" {
				rowA = r
				return true
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the cancelled call's row is completed")
	assert.Equal(t, "error", rowA.Status)
	assert.Contains(t, rowA.ErrorJSON, `"code":"PROCESS_FAILED"`)
	assert.Contains(t, rowA.ErrorJSON, `"cancelled":true`)

	select {
	case res := <-doneB:
		t.Fatalf("the other call ended with the cancelled one: %v", res)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, os.WriteFile(filepath.Join(e.work, "go"), nil, 0o644))
	res := <-doneB
	require.NotNil(t, res)
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "B done\n", text(t, res))

	res = callTool(t, cs, "read", map[string]any{"path": "go"})
	require.False(t, res.IsError, text(t, res))
}

// A client that writes its calls and closes its end at once (a pipe, `printf ... | sandboxer mcp`)
// gets every answer before the server exits: the input's end does not drop calls in flight, a
// slow one included.
func TestMCPAnswersEveryCallBeforeItsInputsEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"cmd":"sh","args":["-c","sleep 1; echo slow"]}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write","arguments":{"path":"f","content":"x"}}}`,
	}, "\n") + "\n"
	r := e.run(in, nil, "mcp")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 3, "%s", r.stdout)
	ids := map[float64]string{}
	for _, l := range lines {
		var m struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		ids[m.ID] = string(m.Result)
	}
	assert.Contains(t, ids[1], "capabilities")
	assert.Contains(t, ids[2], `slow\n`)
	assert.Contains(t, ids[3], `"ok":true`)
}
