package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/journal"
)

// fixtureStart is the start time of the fixture's first call.
var fixtureStart = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC).UnixMilli()

// fixture writes a journal through the journal package: run-a (a bash call whose output has
// egress decisions and a receipt, a failed write, and a retried attempt that gets the retry
// warning) and run-b (two reads). It returns the path and the open journal (for live appends).
func fixture(t testing.TB) (string, *journal.Journal) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.Open(ctx, path, journal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	at := fixtureStart
	call := func(run, node string, attempt, seq int, tool, input, output, errJSON string, sideEffect bool) journal.Entry {
		at += 400
		status := journal.StatusSuccess
		if errJSON != "" {
			status = journal.StatusError
		}
		return journal.Entry{RunID: run, NodeID: node, Iteration: 0, Attempt: attempt, Seq: seq, ToolName: tool,
			InputJSON: input, OutputJSON: output, ErrorJSON: errJSON, StartedAtMs: at, FinishedAtMs: at + 250,
			Status: status, IdempotencyKey: fmt.Sprintf("%s-%s-%d-%d", run, node, attempt, seq),
			SideEffect: sideEffect, Idempotent: !sideEffect}
	}
	require.NoError(t, j.RecordBatch(ctx, []journal.Entry{
		call("run-a", "build", 1, 1, "bash", `{"cmd":"go","args":["build","./..."]}`,
			`{"output":"building\nok\n","exitCode":0,"network":[{"host":"proxy.example.com","port":443,"allowed":true,"bytesIn":5120,"bytesOut":300},{"host":"evil.example","port":443,"allowed":false,"bytesIn":0,"bytesOut":0,"reason":"not in the allowlist"}],"receipt":{"wallUs":812000,"cpuUs":640000,"peakMemoryBytes":52428800,"stdoutBytes":12,"stderrBytes":0,"netSentBytes":300,"netReceivedBytes":5120,"paths":{"created":["go.sum"],"changed":["main.go"]}}}`,
			"", true),
		call("run-a", "build", 1, 2, "write", `{"path":"notes.txt","contentSha256":"ab12","contentBytes":5}`, "",
			`{"code":"TOOL_PATH_ESCAPE","message":"path escapes the root"}`, true),
		call("run-a", "build", 2, 1, "read", `{"path":"notes.txt"}`, `"hello"`, "", false),
		call("run-b", "lint", 1, 1, "read", `{"path":"README.md"}`, `"# readme"`, "", false),
		call("run-b", "lint", 1, 2, "grep", `{"pattern":"needle-in-haystack"}`, `"main.go:3:needle-in-haystack"`, "", false),
	}))
	return path, j
}

// newTestServer serves the fixture; the client carries no token by itself.
func newTestServer(t testing.TB, path string) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

// get fetches path with the token and decodes the JSON reply into v.
func get(t *testing.T, hs *httptest.Server, s *Server, path string, v any) {
	t.Helper()
	u, err := url.Parse(hs.URL + path)
	require.NoError(t, err)
	q := u.Query()
	q.Set("token", s.Token())
	u.RawQuery = q.Encode()
	resp, err := http.Get(u.String())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
	require.NoError(t, json.Unmarshal(body, v), "%s", body)
}

type callsPage struct {
	Calls []Summary `json:"calls"`
	Next  int64     `json:"next"`
	More  bool      `json:"more"`
}

func tools(p callsPage) []string {
	var out []string
	for _, c := range p.Calls {
		out = append(out, c.ToolName)
	}
	return out
}

func TestAPI(t *testing.T) {
	t.Parallel()
	path, j := fixture(t)
	s, hs := newTestServer(t, path)

	var runs struct{ Runs []Run }
	get(t, hs, s, "/api/runs", &runs)
	require.Len(t, runs.Runs, 2)
	assert.Equal(t, "run-b", runs.Runs[0].RunID, "the most recently active run first")
	a := runs.Runs[1]
	assert.Equal(t, Run{RunID: "run-a", FirstMs: fixtureStart + 400, LastMs: fixtureStart + 1200 + 250, Calls: 3, Errors: 1, FirstID: 1, LastID: 3}, a)

	var tasks struct{ Tasks []Task }
	get(t, hs, s, "/api/tasks?run=run-a", &tasks)
	require.Len(t, tasks.Tasks, 2)
	assert.Equal(t, journal.Position{RunID: "run-a", NodeID: "build", Attempt: 2}, tasks.Tasks[1].Position)
	assert.Equal(t, 2, tasks.Tasks[0].Calls)

	var p callsPage
	get(t, hs, s, "/api/calls?run=run-a", &p)
	assert.Equal(t, []string{"bash", "write", "read"}, tools(p))
	assert.Equal(t, int64(3), p.Next)
	assert.False(t, p.More)

	// Pages: a cursor and a limit walk all rows once.
	get(t, hs, s, "/api/calls?limit=2", &p)
	assert.Equal(t, []string{"bash", "write"}, tools(p))
	assert.True(t, p.More)
	get(t, hs, s, fmt.Sprintf("/api/calls?limit=2&after=%d", p.Next), &p)
	assert.Equal(t, []string{"read", "read"}, tools(p))
	get(t, hs, s, fmt.Sprintf("/api/calls?limit=2&after=%d", p.Next), &p)
	assert.Equal(t, []string{"grep"}, tools(p))
	assert.False(t, p.More)

	// Filters and search (in the tool name, input, output and error; LIKE's wildcards are text).
	for q, want := range map[string][]string{
		"tool=read":                {"read", "read"},
		"status=error":             {"write"},
		"run=run-b&tool=read":      {"read"},
		"q=NEEDLE-in":              {"grep"},
		"q=TOOL_PATH_ESCAPE":       {"write"},
		"q=evil.example":           {"bash"},
		"q=gre":                    {"grep"},
		"q=%25":                    nil,
		"q=o_t":                    nil, // as a wildcard it would match "root"
		"q=notes.txt&status=error": {"write"},
	} {
		get(t, hs, s, "/api/calls?"+q, &p)
		assert.Equal(t, want, tools(p), q)
	}

	// Live: a call recorded now comes after the cursor.
	get(t, hs, s, "/api/calls?run=run-b", &p)
	require.NoError(t, j.Record(context.Background(), journal.Entry{RunID: "run-b", NodeID: "lint", Attempt: 1, Seq: 3,
		ToolName: "bash", InputJSON: `{"cmd":"true"}`, Status: journal.StatusSuccess, StartedAtMs: fixtureStart + 9000}))
	get(t, hs, s, fmt.Sprintf("/api/calls?run=run-b&after=%d", p.Next), &p)
	assert.Equal(t, []string{"bash"}, tools(p))

	// A call begun, then finished: the totals follow it.
	ctx := context.Background()
	begun := journal.Entry{RunID: "run-a", NodeID: "test", Attempt: 1, ToolName: "bash", InputJSON: `{"cmd":"go","args":["test"]}`,
		StartedAtMs: fixtureStart + 10000, SideEffect: true}
	seq, err := j.Begin(ctx, begun)
	require.NoError(t, err)
	get(t, hs, s, "/api/runs", &runs)
	assert.Equal(t, Run{RunID: "run-a", FirstMs: fixtureStart + 400, LastMs: fixtureStart + 10000, Calls: 4, Errors: 1, Running: 1, FirstID: 1, LastID: 7}, runs.Runs[0])
	begun.Seq, begun.Status, begun.FinishedAtMs, begun.ErrorJSON = seq, journal.StatusError, fixtureStart+12000, `{"code":"TOOL_COMMAND_FAILED"}`
	require.NoError(t, j.Finish(ctx, begun))
	get(t, hs, s, "/api/runs", &runs)
	assert.Equal(t, Run{RunID: "run-a", FirstMs: fixtureStart + 400, LastMs: fixtureStart + 12000, Calls: 4, Errors: 2, FirstID: 1, LastID: 7}, runs.Runs[0])
	get(t, hs, s, "/api/tasks?run=run-a", &tasks)
	require.Len(t, tasks.Tasks, 3)
	assert.Equal(t, Task{Position: journal.Position{RunID: "run-a", NodeID: "test", Attempt: 1}, FirstMs: fixtureStart + 10000,
		LastMs: fixtureStart + 12000, Calls: 1, Errors: 1}, tasks.Tasks[2])

	// One call whole; the retried attempt carries the retry warning naming the earlier write.
	var c Call
	get(t, hs, s, "/api/calls/1", &c)
	assert.Equal(t, "bash", c.ToolName)
	assert.Contains(t, c.OutputJSON, `"receipt"`)
	assert.Empty(t, c.Warning)
	get(t, hs, s, "/api/calls/3", &c)
	assert.Contains(t, c.Warning, journal.WarningPrefix)
	assert.Contains(t, c.Warning, "- write (attempt 1, seq 2, error)")
	assert.Contains(t, c.Warning, "- bash (attempt 1, seq 1, success)")

	for path, code := range map[string]int{
		"/api/calls/99":        http.StatusNotFound,
		"/api/calls/x":         http.StatusBadRequest,
		"/api/calls?limit=-1":  http.StatusBadRequest,
		"/api/calls?after=abc": http.StatusBadRequest,
	} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		resp, err := http.Get(hs.URL + path + sep + "token=" + s.Token())
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, code, resp.StatusCode, path)
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	path, _ := fixture(t)
	s, hs := newTestServer(t, path)
	jar := &cookieJar{}
	client := &http.Client{Jar: jar}
	status := func(path string) int {
		resp, err := client.Get(hs.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	wrong := []byte(s.Token())
	wrong[0] ^= 1
	for _, p := range []string{"/", "/app.js", "/api/runs", "/api/calls/1", "/?token=", "/api/runs?token=" + string(wrong)} {
		assert.Equal(t, http.StatusForbidden, status(p), p)
	}
	// The page's URL sets the cookie; from then on, requests need no token in the URL.
	assert.Equal(t, http.StatusOK, status("/?token="+s.Token()))
	require.Len(t, jar.cookies, 1)
	c := jar.cookies[0]
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.Equal(t, http.StatusOK, status("/api/runs"))
	assert.Equal(t, http.StatusOK, status("/app.js"))
	jar.cookies[0].Value = string(wrong)
	assert.Equal(t, http.StatusForbidden, status("/api/runs"))
}

// cookieJar keeps the cookies it is given (the test server's URL is an IP: the standard jar would too,
// but this one lets the test change a cookie's value).
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

func TestReadOnly(t *testing.T) {
	t.Parallel()
	path, j := fixture(t)
	require.NoError(t, j.Close()) // no writer: the WAL is gone, and the file still opens read-only
	st, err := openStore(context.Background(), path)
	require.NoError(t, err)
	defer st.Close()
	for _, q := range []string{"DELETE FROM tool_calls", "CREATE INDEX x ON tool_calls (tool_name)", "PRAGMA query_only = 0; DELETE FROM tool_calls"} {
		_, err := st.db.Exec(q)
		assert.Error(t, err, q)
	}
	var n int
	require.NoError(t, st.db.QueryRow("SELECT COUNT(*) FROM tool_calls").Scan(&n))
	assert.Equal(t, 5, n)

	_, err = openStore(context.Background(), filepath.Join(t.TempDir(), "missing.db"))
	assert.Error(t, err, "a missing journal is not created")
}

func TestCheckListen(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:0": true, "127.1.2.3:8080": true, "[::1]:0": true, "localhost:0": true,
		"0.0.0.0:0": false, ":8080": false, "[::]:0": false, "192.168.1.2:80": false, "example.com:80": false,
		"127.0.0.1": false, "": false,
	} {
		err := CheckListen(addr)
		assert.Equal(t, ok, err == nil, "%q: %v", addr, err)
	}
}
