package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/journal"
)

// testAPI is an in-process API server over httptest, for the handlers' own tests (the remote
// adapter and the SDKs test a real `sandboxerd serve`).
type testAPI struct {
	t   testing.TB
	a   *apiServer
	srv *httptest.Server
	log bytes.Buffer
}

// newTestAPI starts a server with the serve command's flags (a state directory and journal of
// the test's own are added) and edits of its options.
func newTestAPI(t testing.TB, flags []string, edit ...func(*apiOptions)) *testAPI {
	t.Helper()
	dir := t.TempDir()
	c := newServeCmd(Streams{})
	require.NoError(t, c.Flags().Parse(append([]string{"--state-dir", dir, "--journal", filepath.Join(dir, "journal.db")}, flags...)))
	s, err := load(c.Flags())
	require.NoError(t, err)
	ta := &testAPI{t: t}
	opt := apiOptions{Base: s, TTL: DefaultSandboxTTL, Idle: DefaultSandboxIdle, MaxTTL: DefaultMaxSandboxTTL,
		MaxRequestBytes: DefaultMaxRequestBytes, MaxFileBytes: DefaultMaxFileBytes, Log: log.New(&ta.log, "", 0)}
	for _, e := range edit {
		e(&opt)
	}
	ta.a, err = newAPIServer(context.Background(), opt)
	require.NoError(t, err)
	ta.srv = httptest.NewServer(ta.a)
	t.Cleanup(func() {
		ta.srv.Close()
		assert.NoError(t, ta.a.Close())
		left, _ := filepath.Glob(filepath.Join(dir, "serve", "sandboxes", "*"))
		assert.Empty(t, left, "sandboxes left behind")
	})
	return ta
}

// do sends a request; body is JSON-encoded unless it is a string or []byte (sent as is).
func (ta *testAPI) do(method, path, token string, body any) (int, []byte) {
	ta.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(ta.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ta.srv.URL+path, rd)
	require.NoError(ta.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ta.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(ta.t, err)
	return resp.StatusCode, data
}

// refused checks a refusal: its status and code, in the tools' error shape.
func (ta *testAPI) refused(status int, data []byte, wantStatus int, code string) {
	ta.t.Helper()
	var ref api.Refusal
	require.NoError(ta.t, json.Unmarshal(data, &ref), "%s", data)
	require.NotNil(ta.t, ref.Error, "%s", data)
	assert.Equal(ta.t, wantStatus, status, "%s", data)
	assert.Equal(ta.t, code, string(ref.Error.Code), "%s", data)
	assert.False(ta.t, ref.OK)
	assert.NotEmpty(ta.t, ref.Error.Message)
	assert.NotNil(ta.t, ref.Error.Details)
}

func (ta *testAPI) create(token string, req api.CreateRequest) api.Sandbox {
	ta.t.Helper()
	status, data := ta.do("POST", "/v1/sandboxes", token, req)
	require.Equal(ta.t, http.StatusCreated, status, "%s", data)
	var sb api.Sandbox
	require.NoError(ta.t, json.Unmarshal(data, &sb))
	return sb
}

// TestAPIRoutesAreTheDocument: the server routes exactly what api/openapi.json describes.
func TestAPIRoutesAreTheDocument(t *testing.T) {
	ta := newTestAPI(t, []string{"--adapter", "memory"})
	got := append([]string(nil), ta.a.patterns...)
	sort.Strings(got)
	assert.Equal(t, api.Paths(), got)
}

// TestAPIAnswersMatchTheDocument drives every JSON endpoint once and validates each answer
// against the schema api/openapi.json gives it.
func TestAPIAnswersMatchTheDocument(t *testing.T) {
	ta := newTestAPI(t, []string{"--adapter", "memory"})
	routes := map[string]api.Route{}
	for _, r := range api.Routes {
		routes[r.Method+" "+r.Path] = r
	}
	checked := map[string]bool{}
	check := func(route, method, path string, body any) []byte {
		t.Helper()
		r, ok := routes[route]
		require.True(t, ok, route)
		status, data := ta.do(method, path, "", body)
		require.Equal(t, r.Status, status, "%s: %s", route, data)
		if r.Response != nil && r.Response != api.Binary {
			validate(t, r.Response, data)
		}
		checked[route] = true
		return data
	}
	check("GET /v1/health", "GET", "/v1/health", nil)
	var sb api.Sandbox
	require.NoError(t, json.Unmarshal(check("POST /v1/sandboxes", "POST", "/v1/sandboxes", api.CreateRequest{Adapter: "memory"}), &sb))
	id := "/v1/sandboxes/" + sb.ID
	check("GET /v1/sandboxes", "GET", "/v1/sandboxes", nil)
	check("GET /v1/sandboxes/{id}", "GET", id, nil)
	check("POST /v1/sandboxes/{id}/extend", "POST", id+"/extend", api.ExtendRequest{TTLSeconds: 600})
	check("POST /v1/sandboxes/{id}/tools/{tool}", "POST", id+"/tools/write", map[string]any{"path": "a.txt", "content": "one\ntwo\n"})
	check("POST /v1/sandboxes/{id}/exec", "POST", id+"/exec", api.ExecRequest{Args: []string{"sh", "-c", "cat a.txt; exit 3"}})
	check("PUT /v1/sandboxes/{id}/files", "PUT", id+"/files?path=b/c.txt", "data")
	check("GET /v1/sandboxes/{id}/files", "GET", id+"/files?path=b/c.txt", nil)
	check("GET /v1/sandboxes/{id}/files/stat", "GET", id+"/files/stat?path=b/c.txt", nil)
	check("GET /v1/sandboxes/{id}/files/list", "GET", id+"/files/list", nil)
	check("POST /v1/sandboxes/{id}/files/symlink", "POST", id+"/files/symlink", api.SymlinkRequest{Path: "l", Target: "a.txt"})
	check("POST /v1/sandboxes/{id}/files/executable", "POST", id+"/files/executable", api.ExecutableRequest{Path: "a.txt", Executable: true})
	check("DELETE /v1/sandboxes/{id}/files", "DELETE", id+"/files?path=b/c.txt", nil)
	var ps struct{ ID string }
	require.NoError(t, json.Unmarshal(check("POST /v1/sandboxes/{id}/processes", "POST", id+"/processes", api.ExecRequest{Args: []string{"cat"}}), &ps))
	pid := id + "/processes/" + ps.ID
	check("GET /v1/sandboxes/{id}/processes", "GET", id+"/processes", nil)
	check("GET /v1/sandboxes/{id}/processes/{pid}", "GET", pid, nil)
	check("POST /v1/sandboxes/{id}/processes/{pid}/stdin", "POST", pid+"/stdin?close=true", "hello\n")
	check("POST /v1/sandboxes/{id}/processes/{pid}/wait", "POST", pid+"/wait?timeoutMs=10000", nil)
	out := check("GET /v1/sandboxes/{id}/processes/{pid}/output", "GET", pid+"/output", nil)
	assert.Contains(t, string(out), `"stdout":"hello\n"`)
	check("POST /v1/sandboxes/{id}/processes/{pid}/signal", "POST", pid+"/signal", api.SignalRequest{Signal: "TERM"})
	check("POST /v1/sandboxes/{id}/snapshots", "POST", id+"/snapshots", api.SnapshotRequest{Name: "s"})
	check("GET /v1/snapshots", "GET", "/v1/snapshots", nil)
	check("GET /v1/snapshots/{name}", "GET", "/v1/snapshots/s", nil)
	check("POST /v1/sandboxes/{id}/restore", "POST", id+"/restore", api.RestoreRequest{Snapshot: "s", Replace: true})
	var fork api.Sandbox
	require.NoError(t, json.Unmarshal(check("POST /v1/sandboxes/{id}/fork", "POST", id+"/fork", nil), &fork))
	check("DELETE /v1/snapshots/{name}", "DELETE", "/v1/snapshots/s", nil)
	check("DELETE /v1/sandboxes/{id}", "DELETE", "/v1/sandboxes/"+fork.ID, nil)
	check("DELETE /v1/sandboxes/{id}", "DELETE", id, nil)

	// Refusals have the document's default answer.
	status, data := ta.do("GET", id, "", nil)
	assert.Equal(t, http.StatusNotFound, status)
	validate(t, reflect.TypeFor[api.Refusal](), data)
	// The memory adapter has no ports and no pause: those routes (and the streams) are the
	// remote adapter's suites' (adapter/remote) and TestAPIPause's; here every other route was
	// answered.
	for _, r := range api.Routes {
		if !r.Upgrade && !strings.Contains(r.Path, "/listeners") && !strings.HasSuffix(r.Path, "/pause") && !strings.HasSuffix(r.Path, "/resume") && !checked[r.Method+" "+r.Path] {
			t.Errorf("%s %s was not checked", r.Method, r.Path)
		}
	}
}

func validate(t *testing.T, ty reflect.Type, data []byte) {
	t.Helper()
	s, err := jsonschema.ForType(ty, &jsonschema.ForOptions{})
	require.NoError(t, err)
	rs, err := s.Resolve(nil)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(data, &v), "%s", data)
	assert.NoError(t, rs.Validate(v), "%s does not match %s", data, ty)
}

// TestAPITenancy: tokens from a file of hashes, a token sees only its own sandboxes, adapters and
// quotas are enforced, and the file is read again when it changes.
func TestAPITenancy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.json")
	alice, err := addToken(file, token{Name: "alice", Adapters: []string{"memory"}, MaxSandboxes: 2, MaxTTLSeconds: 600})
	require.NoError(t, err)
	bob, err := addToken(file, token{Name: "bob", MaxMemoryBytes: 3 << 30})
	require.NoError(t, err)
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), alice, "the file holds no token")
	assert.NotContains(t, string(raw), bob)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	tokens, err := openTokens(file, nil)
	require.NoError(t, err)
	ta := newTestAPI(t, []string{"--adapter", "memory"}, func(o *apiOptions) { o.Tokens = tokens })

	// No token, a wrong one, a malformed header: 401. Health needs none.
	for _, tok := range []string{"", "sbx_wrong"} {
		status, data := ta.do("GET", "/v1/sandboxes", tok, nil)
		ta.refused(status, data, http.StatusUnauthorized, "UNAUTHORIZED")
	}
	status, _ := ta.do("GET", "/v1/health", "", nil)
	assert.Equal(t, http.StatusOK, status)

	a1 := ta.create(alice, api.CreateRequest{})
	assert.Equal(t, "alice", a1.Owner)
	// Adapters: alice may not use local.
	status, data := ta.do("POST", "/v1/sandboxes", alice, api.CreateRequest{Adapter: "local"})
	ta.refused(status, data, http.StatusForbidden, "FORBIDDEN")
	// Lifetime over the token's maximum.
	status, data = ta.do("POST", "/v1/sandboxes", alice, api.CreateRequest{TTLSeconds: 601})
	ta.refused(status, data, http.StatusForbidden, "FORBIDDEN")
	// maxSandboxes 2: the third is refused, and a fork counts.
	a2 := ta.create(alice, api.CreateRequest{})
	status, data = ta.do("POST", "/v1/sandboxes", alice, api.CreateRequest{})
	ta.refused(status, data, http.StatusTooManyRequests, "LIMIT_EXCEEDED")
	status, data = ta.do("POST", "/v1/sandboxes/"+a2.ID+"/fork", alice, nil)
	ta.refused(status, data, http.StatusTooManyRequests, "LIMIT_EXCEEDED")
	// maxMemoryBytes 3 GiB: bob's 2 GiB and 1 GiB fit, one byte more does not.
	gib := int64(1 << 30)
	two, one, more := 2*gib, gib, int64(1)
	ta.create(bob, api.CreateRequest{MemoryBytes: &two})
	ta.create(bob, api.CreateRequest{MemoryBytes: &one})
	status, data = ta.do("POST", "/v1/sandboxes", bob, api.CreateRequest{MemoryBytes: &more})
	ta.refused(status, data, http.StatusTooManyRequests, "LIMIT_EXCEEDED")

	// Bob sees none of alice's sandboxes, and reaching one is answered as a missing one.
	_, data = ta.do("GET", "/v1/sandboxes", bob, nil)
	var list api.SandboxList
	require.NoError(t, json.Unmarshal(data, &list))
	assert.Len(t, list.Sandboxes, 2)
	for _, sb := range list.Sandboxes {
		assert.Equal(t, "bob", sb.Owner)
	}
	for _, req := range []struct{ method, path, body string }{
		{"GET", "", ""}, {"DELETE", "", ""}, {"POST", "/exec", `{"args":["true"]}`}, {"GET", "/files?path=x", ""},
		{"POST", "/tools/read", `{"path":"x"}`}, {"POST", "/fork", ""}, {"GET", "/processes", ""},
	} {
		status, data = ta.do(req.method, "/v1/sandboxes/"+a1.ID+req.path, bob, req.body)
		ta.refused(status, data, http.StatusNotFound, "SANDBOX_UNAVAILABLE")
	}
	status, _ = ta.do("GET", "/v1/sandboxes/"+a1.ID, alice, nil)
	assert.Equal(t, http.StatusOK, status, "alice's sandbox is still there")

	// A token added while the server runs works at once (the file is checked once a second).
	carol, err := addToken(file, token{Name: "carol"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		status, _ := ta.do("GET", "/v1/sandboxes", carol, nil)
		return status == http.StatusOK
	}, 5*time.Second, 100*time.Millisecond)
	// The journal records the token's name in the run id of its tool calls.
	status, data = ta.do("POST", "/v1/sandboxes/"+a1.ID+"/tools/write", alice, `{"path":"x","content":"y"}`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	rows, err := ta.a.j.List(context.Background(), journalFilterAll())
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	assert.Equal(t, "alice/default", rows[len(rows)-1].RunID)
}

// TestAPIBadInput: what a client gets wrong is a clear refusal, nothing is lost, and the server
// goes on serving.
func TestAPIBadInput(t *testing.T) {
	ta := newTestAPI(t, []string{"--adapter", "memory"}, func(o *apiOptions) { o.MaxRequestBytes = 4096; o.MaxFileBytes = 8192 })
	sb := ta.create("", api.CreateRequest{})
	id := "/v1/sandboxes/" + sb.ID
	status, data := ta.do("POST", id+"/tools/write", "", `{"path":"keep.txt","content":"kept"}`)
	require.Equal(t, http.StatusOK, status, "%s", data)

	cases := []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"not JSON", "POST", "/v1/sandboxes", "{", 400, "INVALID_INPUT"},
		{"unknown field", "POST", "/v1/sandboxes", `{"adapter":"memory","colour":"red"}`, 400, "INVALID_INPUT"},
		{"two values", "POST", "/v1/sandboxes", `{} {}`, 400, "INVALID_INPUT"},
		{"unknown adapter", "POST", "/v1/sandboxes", `{"adapter":"vm"}`, 400, "INVALID_INPUT"},
		{"image path", "POST", "/v1/sandboxes", `{"adapter":"oci","image":"oci-layout:/etc"}`, 400, "INVALID_INPUT"},
		{"network both ways", "POST", "/v1/sandboxes", `{"allowNetwork":true,"allowHosts":["example.com"]}`, 400, "INVALID_INPUT"},
		{"negative memory", "POST", "/v1/sandboxes", `{"memoryBytes":-1}`, 400, "INVALID_INPUT"},
		{"oversized body", "POST", id + "/exec", `{"args":["true"],"stdin":"` + strings.Repeat("x", 5000) + `"}`, 400, "TOOL_CONTENT_TOO_LARGE"},
		{"oversized file", "PUT", id + "/files?path=big", strings.Repeat("x", 9000), 413, "TOOL_FILE_TOO_LARGE"},
		{"no path", "GET", id + "/files", nil, 400, "TOOL_PATH_INVALID"},
		{"path escape", "GET", id + "/files?path=../../etc/passwd", nil, 400, "TOOL_PATH_ESCAPE"},
		{"empty argv", "POST", id + "/exec", `{"args":[]}`, 400, "INVALID_INPUT"},
		{"bad encoding", "POST", id + "/exec", `{"args":["true"],"encoding":"latin1"}`, 400, "INVALID_INPUT"},
		{"unknown tool", "POST", id + "/tools/rm", `{}`, 404, "TOOL_NOT_FOUND"},
		{"tool input not an object", "POST", id + "/tools/read", `[1]`, 400, "INVALID_INPUT"},
		{"bad attempt header", "POST", id + "/tools/read", nil, 400, "INVALID_INPUT"},
		{"unknown sandbox", "GET", "/v1/sandboxes/sbx-000000000000", nil, 404, "SANDBOX_UNAVAILABLE"},
		{"hostile id", "GET", "/v1/sandboxes/..%2F..%2Fetc", nil, 404, "SANDBOX_UNAVAILABLE"},
		{"unclean path", "GET", "/v1/sandboxes/../../etc", nil, 404, "TOOL_NOT_FOUND"},
		{"hostile id, one segment", "GET", "/v1/sandboxes/sbx-..%00", nil, 404, "SANDBOX_UNAVAILABLE"},
		{"unknown process", "GET", id + "/processes/p999", nil, 404, "TOOL_NOT_FOUND"},
		{"wrong method", "PATCH", id, nil, 405, "METHOD_NOT_ALLOWED"},
		{"unknown endpoint", "GET", "/v2/things", nil, 404, "TOOL_NOT_FOUND"},
		{"ttl negative", "POST", id + "/extend", `{"ttlSeconds":-5}`, 400, "INVALID_INPUT"},
		{"port out of range", "GET", id + "/ports/70000", nil, 400, "INVALID_INPUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var status int
			var data []byte
			if c.name == "bad attempt header" {
				req, _ := http.NewRequest(c.method, ta.srv.URL+c.path, strings.NewReader(`{"path":"keep.txt"}`))
				req.Header.Set(api.HeaderAttempt, "zero")
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				data, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			} else {
				status, data = ta.do(c.method, c.path, "", c.body)
			}
			ta.refused(status, data, c.status, c.code)
		})
	}
	// Nothing was lost, and the server serves.
	status, data = ta.do("GET", id+"/files?path=keep.txt", "", nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "kept", string(data))
	status, _ = ta.do("GET", "/v1/health", "", nil)
	assert.Equal(t, http.StatusOK, status)
}

// TestAPILifetime: a sandbox past its TTL or idle timeout is removed by the server, with
// nothing left (a local sandbox's workspace directory); extend keeps one alive.
func TestAPILifetime(t *testing.T) {
	ta := newTestAPI(t, []string{"--adapter", "local"})
	zero := int64(0)
	idle := int64(1)
	ws := func(id string) string {
		return filepath.Join(ta.a.opt.Base.StateDir, "serve", "sandboxes", id)
	}
	// kept: 5 s to live, extended at once to 10 minutes; checked 6 s after its creation.
	created := time.Now()
	kept := ta.create("", api.CreateRequest{TTLSeconds: 5, IdleTimeoutSeconds: &zero})
	status, data := ta.do("POST", "/v1/sandboxes/"+kept.ID+"/extend", "", api.ExtendRequest{TTLSeconds: 600})
	require.Equal(t, http.StatusOK, status, "%s", data)
	require.DirExists(t, ws(kept.ID))
	// The other two may be gone by the time they are looked at (a slow machine): each was
	// created (201), and is then gone with its workspace.
	byTTL := ta.create("", api.CreateRequest{TTLSeconds: 1, IdleTimeoutSeconds: &zero})
	byIdle := ta.create("", api.CreateRequest{TTLSeconds: 600, IdleTimeoutSeconds: &idle})
	gone := func(id string) bool {
		status, _ := ta.do("GET", "/v1/sandboxes/"+id, "", nil)
		_, err := os.Stat(ws(id))
		return status == http.StatusNotFound && os.IsNotExist(err)
	}
	require.Eventually(t, func() bool { return gone(byTTL.ID) }, 15*time.Second, 100*time.Millisecond, "past its TTL")
	// The idle one: a GET counts as use, so it is watched from outside the API.
	require.Eventually(t, func() bool {
		_, err := os.Stat(ws(byIdle.ID))
		return os.IsNotExist(err)
	}, 15*time.Second, 100*time.Millisecond, "idle")
	assert.True(t, gone(byIdle.ID))
	time.Sleep(time.Until(created.Add(6 * time.Second))) // past kept's first TTL
	status, _ = ta.do("GET", "/v1/sandboxes/"+kept.ID, "", nil)
	assert.Equal(t, http.StatusOK, status, "extended")
	assert.DirExists(t, ws(kept.ID))
	assert.Contains(t, ta.log.String(), "expired")
}

// TestAPIRemovesWhatACrashedServerLeft: the records of a server that died (its lock released
// with the process) are removed, with their sandboxes, by the next server of the directory.
func TestAPIRemovesWhatACrashedServerLeft(t *testing.T) {
	dir := t.TempDir()
	c := newServeCmd(Streams{})
	require.NoError(t, c.Flags().Parse([]string{"--state-dir", dir, "--journal", "off", "--adapter", "local"}))
	s, err := load(c.Flags())
	require.NoError(t, err)
	var lg bytes.Buffer
	opt := apiOptions{Base: s, TTL: time.Hour, MaxRequestBytes: 1 << 20, MaxFileBytes: 1 << 20, Log: log.New(&lg, "", 0)}
	first, err := newAPIServer(context.Background(), opt)
	require.NoError(t, err)
	srv := httptest.NewServer(first)
	resp, err := http.Post(srv.URL+"/v1/sandboxes", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	var sb api.Sandbox
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&sb))
	resp.Body.Close()
	srv.Close()
	ws := filepath.Join(dir, "serve", "sandboxes", sb.ID)
	require.DirExists(t, ws)

	// A second server while the first holds the directory is refused.
	_, err = newAPIServer(context.Background(), opt)
	require.ErrorContains(t, err, "another sandboxerd serve")

	// The first "crashes": its reaper stops and its lock goes, its sandboxes stay.
	close(first.reg.stop)
	<-first.reg.reaped
	first.reg.lock.Close()
	second, err := newAPIServer(context.Background(), opt)
	require.NoError(t, err)
	defer second.Close()
	assert.NoDirExists(t, ws)
	assert.Contains(t, lg.String(), "removed sandbox "+sb.ID)
	first.reg.boxes[sb.ID].sb.Stop(context.Background())
}

// TestServeListenerRefusesOpenAddresses: only loopback and unix sockets go without tokens and TLS.
func TestServeListenerRefusesOpenAddresses(t *testing.T) {
	for _, c := range []struct {
		listen   string
		tokens   bool
		cert     string
		contains string
	}{
		{"0.0.0.0:0", false, "", "not loopback"},
		{"0.0.0.0:0", true, "", "not loopback"},
		{":0", true, "", "not loopback"},
		{"unix:relative.sock", false, "", "absolute"},
		{"nonsense", false, "", "HOST:PORT"},
	} {
		_, err := serveListener(c.listen, c.tokens, c.cert, "")
		assert.ErrorContains(t, err, c.contains, c.listen)
	}
	_, err := serveListener("127.0.0.1:0", false, "cert.pem", "")
	assert.ErrorContains(t, err, "go together")
	for _, listen := range []string{"127.0.0.1:0", "[::1]:0", "unix:" + filepath.Join(t.TempDir(), "s.sock")} {
		ln, err := serveListener(listen, false, "", "")
		if strings.Contains(listen, "::1") && err != nil {
			continue // no IPv6 loopback here
		}
		require.NoError(t, err, listen)
		ln.Close()
	}
}

func journalFilterAll() journal.Filter { return journal.Filter{} }
