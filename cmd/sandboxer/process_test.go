package main_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startMCPWith is startMCP with client options (a progress handler).
func (e *env) startMCPWith(t testing.TB, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Dir = e.work
	cmd.Env = e.vars
	client := mcp.NewClient(&mcp.Implementation{Name: "sandboxer-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() }) // closes stdin; the server exits (killed after a grace)
	return cs
}

// structured decodes a reply's structured content.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// jsonText decodes the text of a process tool's reply: the result's JSON.
func jsonText(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, text(t, res))
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(text(t, res)), &m), text(t, res))
	return m
}

// A foreground bash sends its output as progress notifications while it runs; cancelling the
// request kills the command's tree.
func TestMCPBashProgressAndCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	seen := make(chan struct{}, 100)
	cs := e.startMCPWith(t, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
			select {
			case seen <- struct{}{}:
			default:
			}
		},
	}, "--journal", "off")

	// Progress: the output, in order, while the command still runs (it waits for a file that
	// the test writes only after the first notification).
	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"cmd": "sh", "args": []string{"-c",
		"echo first; echo warn >&2; while [ ! -e go ]; do sleep 0.05; done; echo second"}}}
	params.SetProgressToken("tok-1")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), params)
		assert.NoError(t, err)
		done <- res
	}()
	deadline := time.After(time.Minute)
	for {
		mu.Lock()
		var all strings.Builder
		for _, p := range got {
			all.WriteString(p.Message)
		}
		mu.Unlock()
		if strings.Contains(all.String(), "first\n") && strings.Contains(all.String(), "warn\n") {
			break
		}
		select {
		case <-seen:
		case <-deadline:
			t.Fatalf("no progress with the first output; got %q", all.String())
		}
	}
	select {
	case <-done:
		t.Fatal("the call returned before the command was let go on")
	default:
	}
	res := callTool(t, cs, "write", map[string]any{"path": "go", "content": ""})
	require.False(t, res.IsError, text(t, res))
	res = <-done
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "first\nsecond\nwarn\n", text(t, res))
	// The server sends every notification before the result, but the client SDK hands
	// notifications to their handler on goroutines of their own: the last may be handled after
	// CallTool returned.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		var all strings.Builder
		for _, p := range got {
			all.WriteString(p.Message)
		}
		return strings.Contains(all.String(), "second\n")
	}, 10*time.Second, 10*time.Millisecond, "the progress of the last line")
	mu.Lock()
	var last float64
	streams := map[string]string{}
	// In the order sent (progress counts the bytes sent so far), whatever order the handler
	// goroutines ran in.
	sorted := slices.Clone(got)
	slices.SortFunc(sorted, func(a, b *mcp.ProgressNotificationParams) int { return cmp.Compare(a.Progress, b.Progress) })
	for _, p := range sorted {
		assert.Equal(t, "tok-1", p.ProgressToken)
		assert.Greater(t, p.Progress, last, "progress increases")
		last = p.Progress
		stream, _ := p.Meta["stream"].(string)
		streams[stream] += p.Message
	}
	mu.Unlock()
	assert.Equal(t, map[string]string{"stdout": "first\nsecond\n", "stderr": "warn\n"}, streams)

	// Without a token, no progress.
	mu.Lock()
	n := len(got)
	mu.Unlock()
	res = callTool(t, cs, "bash", map[string]any{"cmd": "echo", "args": []string{"quiet"}})
	require.False(t, res.IsError)
	mu.Lock()
	assert.Len(t, got, n)
	mu.Unlock()

	// Cancelling the request kills the command's tree.
	marker := sleepMarker()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"cmd": "sh", "args": []string{"-c",
			fmt.Sprintf("sleep %s & sleep %s", marker, marker)}}})
		errc <- err
	}()
	require.Eventually(t, func() bool { return len(pidsOf(marker)) == 2 }, time.Minute, 20*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	require.Eventually(t, func() bool { return len(pidsOf(marker)) == 0 }, time.Minute, 20*time.Millisecond,
		"cancelling the request kills the command's tree")
	res = callTool(t, cs, "bash", map[string]any{"cmd": "echo", "args": []string{"alive"}})
	assert.Equal(t, "alive\n", text(t, res), "the server goes on")
}

// The dev-server example: a background HTTP server started by one call, reached by a later
// call, its access log read, killed; nothing of it is left when the server exits.
func TestMCPDevServer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	e := newEnv(t)
	cs := e.startMCP(t, "--run-id", "dev", "--node-id", "agent")
	port := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}()
	res := callTool(t, cs, "write", map[string]any{"path": "www/index.html", "content": "hello from the sandbox\n"})
	require.False(t, res.IsError, text(t, res))

	// Started: returns at once with the process id (-u: the access log is not buffered).
	res = callTool(t, cs, "bash", map[string]any{"cmd": "python3", "args": []string{"-u", "-m", "http.server", "--bind", "127.0.0.1", fmt.Sprint(port)},
		"opts": map[string]any{"cwd": "www", "background": true}})
	started := jsonText(t, res)
	id, _ := started["process"].(string)
	require.NotEmpty(t, id)
	assert.Equal(t, true, started["running"])
	assert.Equal(t, true, structured(t, res)["ok"])

	// A later call reaches it inside the sandbox (python3's urllib: wget and curl are network
	// clients, which the policy refuses while the network is off).
	fetch := fmt.Sprintf("import urllib.request, time\nfor i in range(600):\n  try:\n    print(urllib.request.urlopen('http://127.0.0.1:%d/index.html').read().decode(), end='')\n    break\n  except OSError:\n    time.sleep(0.1)\n", port)
	res = callTool(t, cs, "bash", map[string]any{"cmd": "python3", "args": []string{"-c", fetch}})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "hello from the sandbox\n", text(t, res))

	// Its access log, read with process_output (http.server logs to stderr).
	var log string
	var since float64
	require.Eventually(t, func() bool {
		out := jsonText(t, callTool(t, cs, "process_output", map[string]any{"process": id, "since": since}))
		log += out["stderr"].(string)
		since = out["offset"].(float64)
		return strings.Contains(log, `"GET /index.html HTTP/1.1" 200`)
	}, time.Minute, 50*time.Millisecond)

	list := jsonText(t, callTool(t, cs, "process_list", map[string]any{}))
	procs := list["processes"].([]any)
	require.Len(t, procs, 1)
	assert.Equal(t, id, procs[0].(map[string]any)["id"])

	// Killed.
	res = callTool(t, cs, "process_kill", map[string]any{"process": id})
	require.False(t, res.IsError, text(t, res))
	require.Eventually(t, func() bool {
		out := jsonText(t, callTool(t, cs, "process_output", map[string]any{"process": id, "since": since}))
		since = out["offset"].(float64)
		return out["running"] == false && out["exitCode"] != nil
	}, time.Minute, 50*time.Millisecond)
	res = callTool(t, cs, "process_output", map[string]any{"process": "p999"})
	require.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(text(t, res), "TOOL_NOT_FOUND: "), text(t, res))

	// Every call is journaled.
	var names []string
	for _, r := range e.log(t, "--run-id", "dev") {
		names = append(names, r.ToolName)
	}
	assert.Contains(t, names, "process_output")
	assert.Contains(t, names, "process_kill")
	assert.Contains(t, names, "process_list")
}

// A background process still running when the server exits is killed with it.
func TestMCPBackgroundEndsWithServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.startMCP(t, "--journal", "off")
	marker := sleepMarker()
	res := callTool(t, cs, "bash", map[string]any{"cmd": "sh", "args": []string{"-c", fmt.Sprintf("sleep %s & sleep %s", marker, marker)},
		"opts": map[string]any{"background": true}})
	jsonText(t, res)
	require.Eventually(t, func() bool { return len(pidsOf(marker)) == 2 }, time.Minute, 20*time.Millisecond)
	require.NoError(t, cs.Close())
	require.Eventually(t, func() bool { return len(pidsOf(marker)) == 0 }, time.Minute, 20*time.Millisecond,
		"the background tree dies with the server")
}

// BenchmarkMCPProcessOutput: one process_output round trip through the MCP server (local
// adapter), against an MCP ping in the same run (the protocol's own round trip).
func BenchmarkMCPProcessOutput(b *testing.B) {
	e := newEnv(b)
	cs := e.startMCP(b, "--run-id", "bench", "--node-id", "n")
	res := callTool(b, cs, "bash", map[string]any{"cmd": "sh", "args": []string{"-c", "echo up; sleep 600"},
		"opts": map[string]any{"background": true}})
	var started struct {
		Process string `json:"process"`
	}
	require.NoError(b, json.Unmarshal([]byte(text(b, res)), &started))
	b.Cleanup(func() { callTool(b, cs, "process_kill", map[string]any{"process": started.Process, "signal": "KILL"}) })
	ctx := context.Background()
	call := func() {
		if res := callTool(b, cs, "process_output", map[string]any{"process": started.Process, "since": 3}); res.IsError {
			b.Fatal(text(b, res))
		}
	}
	call()
	var lat, ping []time.Duration
	for b.Loop() {
		start := time.Now()
		require.NoError(b, cs.Ping(ctx, nil))
		ping = append(ping, time.Since(start))
		start = time.Now()
		call()
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64(median(lat).Nanoseconds()), "median-ns")
	b.ReportMetric(float64(p99(lat).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(median(ping).Nanoseconds()), "ping-median-ns")
}
