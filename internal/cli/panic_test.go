//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/journal"
)

func TestMain(m *testing.M) {
	// A test-only adapter, in the table for this test binary only.
	testAdapters["panicky"] = openPanicky
	os.Exit(m.Run())
}

// panicMessage is what the panicky adapter panics with.
const panicMessage = "test: the panicky adapter was asked to panic"

// panicky is a memory sandbox whose command panic-now and whose stat of "panic" panic, as a bug in
// an adapter would.
type panicky struct{ *memory.Sandbox }

func (p panicky) ExecuteCommand(ctx context.Context, c adapter.Command) (adapter.Result, error) {
	if len(c.Args) > 0 && c.Args[0] == "panic-now" {
		panic(panicMessage)
	}
	return p.Sandbox.ExecuteCommand(ctx, c)
}

func (p panicky) StatFile(ctx context.Context, path string) (adapter.FileInfo, error) {
	if path == "panic" {
		var m map[string]int
		m["x"]++ // a runtime error, not a string
	}
	return p.Sandbox.StatFile(ctx, path)
}

// openPanicky opens a panicky sandbox.
func openPanicky(ctx context.Context) (adapter.Sandbox, error) {
	sb, err := memory.New(memory.Config{})
	if err != nil {
		return nil, err
	}
	return panicky{sb}, nil
}

// runMain runs the CLI in this process with stdin and returns its exit status, stdout and stderr.
func runMain(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func journalRows(t *testing.T, path, runID string) []journal.Entry {
	t.Helper()
	j, err := journal.Open(context.Background(), path, journal.Options{})
	require.NoError(t, err)
	defer j.Close()
	rows, err := j.List(context.Background(), journal.Filter{RunID: runID})
	require.NoError(t, err)
	return rows
}

// assertStackInRow checks that a row's error is INTERNAL with the panic's stack in its details.
func assertStackInRow(t *testing.T, row journal.Entry) {
	t.Helper()
	assert.Equal(t, "error", string(row.Status))
	var werr WireError
	require.NoError(t, json.Unmarshal([]byte(row.ErrorJSON), &werr))
	assert.EqualValues(t, "INTERNAL", werr.Code)
	stack, _ := werr.Details["stack"].(string)
	assert.Contains(t, stack, "panic_test.go", "the stack reaches the panicking adapter")
}

func TestToolRecoversAPanic(t *testing.T) {
	t.Parallel()
	j := filepath.Join(t.TempDir(), "journal.db")
	for _, tc := range []struct{ tool, input, message string }{
		{"bash", `{"cmd":"panic-now"}`, panicMessage},
		{"read", `{"path":"panic"}`, "assignment to entry in nil map"},
	} {
		code, stdout, _ := runMain(t, "", "tool", tc.tool, "--adapter", "panicky", "--journal", j,
			"--run-id", "panics", "--input", tc.input)
		assert.Equal(t, 1, code, stdout)
		var reply struct {
			OK    bool      `json:"ok"`
			Error WireError `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &reply), stdout)
		assert.EqualValues(t, "INTERNAL", reply.Error.Code)
		assert.Contains(t, reply.Error.Message, "panic: "+tc.message)
		assert.NotContains(t, stdout, "goroutine", "no stack in the reply")
		assert.NotContains(t, reply.Error.Details, "stack")
	}
	rows := journalRows(t, j, "panics")
	require.Len(t, rows, 2)
	for _, r := range rows {
		assertStackInRow(t, r)
	}

	code, stdout, stderr := runMain(t, "", "tool", "bash", "--adapter", "panicky", "--journal", "off",
		"--input", `{"cmd":"echo","args":["fine"]}`)
	assert.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, `"output":"fine\n"`)
}

func TestExecRecoversAPanic(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runMain(t, "", "exec", "--adapter", "panicky", "--", "panic-now")
	assert.Equal(t, ExitExecFailed, code)
	assert.Empty(t, stdout)
	first, rest, _ := strings.Cut(stderr, "\n")
	assert.Contains(t, first, "INTERNAL")
	assert.Contains(t, first, "panic: "+panicMessage)
	assert.Contains(t, rest, "panic_test.go", "the stack follows on stderr: exec has no journal row")

	code, stdout, _ = runMain(t, "", "exec", "--adapter", "panicky", "--", "echo", "fine")
	assert.Equal(t, 0, code)
	assert.Equal(t, "fine\n", stdout)
}

// mcpSession is `sandboxer mcp` run in this process over pipes, driven one JSON line at a time.
type mcpSession struct {
	t    *testing.T
	in   *os.File
	out  *bufio.Reader
	code chan int
	id   int
}

func startMCPInProcess(t *testing.T, args ...string) *mcpSession {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	s := &mcpSession{t: t, in: inW, out: bufio.NewReader(outR), code: make(chan int, 1)}
	go func() {
		s.code <- Main(append([]string{"mcp"}, args...), Streams{In: inR, Out: outW, Err: io.Discard})
		inR.Close()
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-s.code:
		case <-time.After(time.Minute):
			t.Error("the server did not end")
		}
		outR.Close()
	})
	s.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *mcpSession) send(line string) {
	s.t.Helper()
	_, err := io.WriteString(s.in, line+"\n")
	require.NoError(s.t, err)
}

// call sends a request and returns its response's result (failing on an error response).
func (s *mcpSession) call(method, params string) json.RawMessage {
	s.t.Helper()
	s.id++
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.id, method, params))
	line, err := s.out.ReadBytes('\n')
	require.NoError(s.t, err)
	var resp struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(s.t, json.Unmarshal(line, &resp), "%s", line)
	require.Equal(s.t, s.id, resp.ID, "%s", line)
	require.Nil(s.t, resp.Error, "%s", line)
	return resp.Result
}

// tool calls a tool and returns its text and whether it is an error.
func (s *mcpSession) tool(name, args string) (text string, isError bool, raw json.RawMessage) {
	s.t.Helper()
	raw = s.call("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args))
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(s.t, json.Unmarshal(raw, &res))
	require.NotEmpty(s.t, res.Content)
	return res.Content[0].Text, res.IsError, raw
}

func TestMCPRecoversAPanic(t *testing.T) {
	t.Parallel()
	j := filepath.Join(t.TempDir(), "journal.db")
	s := startMCPInProcess(t, "--adapter", "panicky", "--journal", j, "--run-id", "mcp-panics")

	text, isError, raw := s.tool("bash", `{"cmd":"panic-now"}`)
	assert.True(t, isError)
	assert.Equal(t, "INTERNAL: bash: panic: "+panicMessage, text)
	assert.NotContains(t, string(raw), "goroutine", "no stack in the reply")

	text, isError, _ = s.tool("read", `{"path":"panic"}`)
	assert.True(t, isError)
	assert.True(t, strings.HasPrefix(text, "INTERNAL: read: panic: "), text)

	// The session goes on.
	text, isError, _ = s.tool("write", `{"path":"a.txt","content":"still here"}`)
	require.False(t, isError, text)
	text, isError, _ = s.tool("read", `{"path":"a.txt"}`)
	require.False(t, isError, text)
	assert.Equal(t, "still here", text)

	s.in.Close()
	assert.Equal(t, 0, <-s.code)
	s.code <- 0 // for the cleanup
	rows := journalRows(t, j, "mcp-panics")
	require.Len(t, rows, 4)
	assertStackInRow(t, rows[0])
	assertStackInRow(t, rows[1])
	assert.Equal(t, "success", string(rows[3].Status))
}
