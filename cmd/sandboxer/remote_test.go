package main_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/servetest"
)

// remoteServer starts a real `sandboxerd serve` (local adapter) with a token, and writes the
// token to a file of e's, outside the workspace. It returns the server, the token and its file.
func remoteServer(t *testing.T, e *env) (*servetest.Server, string, string) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tok := servetest.Token(t, tokens, "ci")
	file := filepath.Join(e.base, "token")
	require.NoError(t, os.WriteFile(file, []byte(tok+"\n"), 0o600))
	return servetest.Start(t, "--adapter", "local", "--tokens", tokens), tok, file
}

// serverSandboxes lists what the token has on the server.
func serverSandboxes(t *testing.T, url, tok string) []api.Sandbox {
	t.Helper()
	list, err := remote.List(servetest.Context(t), remote.Config{URL: url, Token: tok})
	require.NoError(t, err)
	return list
}

// reply is the JSON object `sandboxer tool` prints.
type reply struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func toolReply(t *testing.T, r result) reply {
	t.Helper()
	var rep reply
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), "stdout %q stderr %q", r.stdout, r.stderr)
	return rep
}

// noToken checks that the token is in no file under dir.
func noToken(t *testing.T, dir, tok string) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.NotContains(t, string(b), tok, "%s holds the token", p)
		files++
		return nil
	}))
	assert.NotZero(t, files, "%s has files to look in", dir)
}

// The CLI over a real server: one-shot tool calls on a copy of the project (written back), the
// token from --token-file or SANDBOXER_TOKEN, long-lived sandboxes created, used, forked, listed
// and removed on the server; refusals (no --url, a wrong token, no server) say why and leave
// nothing; the token is never in the state directory, the resident servers' files or any output.
func TestRemoteCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, tok, tokFile := remoteServer(t, e)
	at := []string{"--adapter", "remote", "--url", srv.URL, "--token-file", tokFile}
	var outputs []string
	run := func(extraEnv []string, args ...string) result {
		t.Helper()
		r := e.run("", extraEnv, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	for _, mode := range []string{"served", "direct"} {
		env := []string{"SANDBOXER_SERVER=on"}
		if mode == "direct" {
			env = []string{"SANDBOXER_SERVER=off"}
		}
		tool := func(name, input string, extra ...string) result {
			t.Helper()
			return run(env, append(append([]string{"tool", name, "--input", input}, at...), extra...)...)
		}
		r := tool("write", `{"path":"notes/`+mode+`.txt","content":"written on the server\n"}`)
		require.Equal(t, 0, r.code, "%s: %s%s", mode, r.stdout, r.stderr)
		b, err := os.ReadFile(filepath.Join(e.work, "notes", mode+".txt"))
		require.NoError(t, err, "%s: the write is synced back to the project", mode)
		assert.Equal(t, "written on the server\n", string(b))
		r = tool("read", `{"path":"notes/`+mode+`.txt"}`)
		require.Equal(t, 0, r.code, "%s: %s", mode, r.stderr)
		assert.Equal(t, "written on the server\n", toolReply(t, r).Output)
		r = tool("bash", `{"cmd":"sh","args":["-c","cat notes/`+mode+`.txt; echo made > made-`+mode+`"]}`)
		require.Equal(t, 0, r.code, "%s: %s", mode, r.stderr)
		assert.Equal(t, "written on the server\n", toolReply(t, r).Output)
		assert.FileExists(t, filepath.Join(e.work, "made-"+mode))
		// The token from the environment instead of a file.
		r = run(append(env, "SANDBOXER_TOKEN="+tok), "tool", "read", "--adapter", "remote", "--url", srv.URL, "--input", `{"path":"made-`+mode+`"}`)
		require.Equal(t, 0, r.code, "%s: %s", mode, r.stderr)
		assert.Equal(t, "made\n", toolReply(t, r).Output)
		assert.Empty(t, serverSandboxes(t, srv.URL, tok), "%s: one-shot sandboxes are deleted on the server", mode)
	}

	// Long-lived: create, use, fork, list, remove.
	r := run(nil, append([]string{"sandbox", "create"}, at...)...)
	require.Equal(t, 0, r.code, r.stderr)
	m := idOut.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	id := m[1]
	r = run(nil, "tool", "write", "--sandbox", id, "--token-file", tokFile, "--input", `{"path":"f","content":"kept"}`)
	require.Equal(t, 0, r.code, r.stderr)
	r = run([]string{"SANDBOXER_TOKEN=" + tok}, "exec", "--sandbox", id, "--", "cat", "f")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "kept", r.stdout)
	assert.NoFileExists(t, filepath.Join(e.work, "f"), "a long-lived sandbox's files stay in it")
	r = run(nil, "sandbox", "fork", id, "--token-file", tokFile)
	require.Equal(t, 0, r.code, r.stderr)
	m = idOut.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	forkID := m[1]
	r = run(nil, "exec", "--sandbox", forkID, "--token-file", tokFile, "--", "cat", "f")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "kept", r.stdout)
	assert.Len(t, serverSandboxes(t, srv.URL, tok), 2)
	r = run(nil, "sandbox", "ls", "--json", "--token-file", tokFile)
	require.Equal(t, 0, r.code, r.stderr)
	var rows []struct {
		ID, Adapter, URL, Backend string
		Alive                     bool
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows), r.stdout)
	require.Len(t, rows, 2)
	for _, row := range rows {
		assert.Equal(t, "remote", row.Adapter)
		assert.Equal(t, srv.URL, row.URL)
		assert.NotEmpty(t, row.Backend)
		assert.True(t, row.Alive, row.ID)
	}
	// Without the token the server refuses: not known, not "gone".
	r = run(nil, "sandbox", "ls")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "unknown")
	assert.NotContains(t, r.stdout, "gone")
	assert.Contains(t, r.stderr, "refused the token")
	noToken(t, e.state, tok)
	r = run(nil, "sandbox", "rm", id, forkID, "--token-file", tokFile)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, serverSandboxes(t, srv.URL, tok), "removed on the server")

	// Refusals.
	r = run(nil, "tool", "bash", "--adapter", "remote", "--input", `{"cmd":"true"}`)
	assert.Equal(t, 2, r.code, r.stdout)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "INVALID_INPUT")
	assert.Contains(t, r.stderr, "--url")
	wrong := filepath.Join(e.base, "wrong-token")
	require.NoError(t, os.WriteFile(wrong, []byte("sbx_wrong\n"), 0o600))
	r = run(nil, "tool", "bash", "--adapter", "remote", "--url", srv.URL, "--token-file", wrong, "--input", `{"cmd":"true"}`)
	assert.Equal(t, 1, r.code, r.stderr)
	rep := toolReply(t, r)
	require.NotNil(t, rep.Error)
	assert.Equal(t, "UNAUTHORIZED", rep.Error.Code)
	assert.Contains(t, rep.Error.Message, srv.URL+" refused the token")
	r = run(nil, "sandbox", "create", "--adapter", "remote", "--url", srv.URL, "--token-file", wrong)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "UNAUTHORIZED")
	r = run(nil, "exec", "--adapter", "remote", "--url", srv.URL, "--", "true") // no token at all
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "UNAUTHORIZED")
	assert.Empty(t, serverSandboxes(t, srv.URL, tok), "a refused token leaves nothing on the server")
	r = run(nil, "sandbox", "ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[]\n", r.stdout, "nor a record")
	r = run(nil, "tool", "bash", "--adapter", "remote", "--url", "http://127.0.0.1:1", "--token-file", tokFile, "--input", `{"cmd":"true"}`)
	assert.Equal(t, 1, r.code, r.stderr)
	rep = toolReply(t, r)
	require.NotNil(t, rep.Error)
	assert.Equal(t, "SANDBOX_UNAVAILABLE", rep.Error.Code)
	assert.Contains(t, rep.Error.Message, "http://127.0.0.1:1")
	inProject := filepath.Join(e.work, ".token")
	require.NoError(t, os.WriteFile(inProject, []byte(tok), 0o600))
	r = run(nil, "tool", "bash", "--adapter", "remote", "--url", srv.URL, "--token-file", inProject, "--input", `{"cmd":"true"}`)
	assert.Equal(t, 2, r.code, "a project holding the token file is not copied to the server: %s", r.stdout)
	assert.Contains(t, r.stderr, "--root")
	require.NoError(t, os.Remove(inProject))
	e.userConfig("token: " + tok + "\n")
	r = run(nil, "tool", "bash", "--adapter", "remote", "--url", srv.URL, "--input", `{"cmd":"true"}`)
	assert.Equal(t, 2, r.code, "a token in a config file is refused: %s", r.stdout)
	assert.Contains(t, r.stderr, "never read from a config file")
	require.NoError(t, os.Remove(filepath.Join(e.base, "home", ".config", "sandboxer", "sandboxer.yaml")))

	noToken(t, e.state, tok)
	noToken(t, e.serverDir(), tok)
	for _, out := range outputs {
		assert.NotContains(t, out, tok, "the token is never printed")
	}
}

// `sandboxer mcp --adapter remote`: the tools run in one sandbox on the server for the session,
// which is deleted there when the client goes away.
func TestRemoteMCP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, tok, tokFile := remoteServer(t, e)
	cs := e.startMCP(t, "--adapter", "remote", "--url", srv.URL, "--token-file", tokFile)
	res := callTool(t, cs, "write", map[string]any{"path": "src/a.txt", "content": "alpha\n"})
	require.False(t, res.IsError, text(t, res))
	res = callTool(t, cs, "bash", map[string]any{"cmd": "sh", "args": []string{"-c", "cat src/a.txt; echo beta >> src/a.txt"}})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "alpha\n", text(t, res))
	res = callTool(t, cs, "read", map[string]any{"path": "src/a.txt"})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "alpha\nbeta\n", text(t, res))
	list := serverSandboxes(t, srv.URL, tok)
	require.Len(t, list, 1, "one sandbox for the session")
	assert.Equal(t, "local", list[0].Adapter)
	require.NoError(t, cs.Close())
	assert.Empty(t, serverSandboxes(t, srv.URL, tok), "deleted when the session ended")
	b, err := os.ReadFile(filepath.Join(e.work, "src", "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\nbeta\n", string(b), "the session's changes are in the project")
	noToken(t, e.state, tok)
}

// doctor --url probes the server: its health, the token, a probe sandbox's capabilities; a
// refused token is the row's error, not a failed check.
func TestRemoteDoctor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, tok, tokFile := remoteServer(t, e)
	type row struct {
		Name         string          `json:"name"`
		Capabilities json.RawMessage `json:"capabilities"`
		Server       string          `json:"server"`
		Error        string          `json:"error"`
		NotProbed    string          `json:"notProbed"`
	}
	remoteRow := func(r result) row {
		t.Helper()
		var rep struct {
			Adapters []row `json:"adapters"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout+r.stderr)
		for _, a := range rep.Adapters {
			if a.Name == "remote" {
				return a
			}
		}
		t.Fatalf("no remote row: %s", r.stdout)
		return row{}
	}
	r := e.run("", nil, "doctor", "--json", "--url", srv.URL, "--token-file", tokFile)
	a := remoteRow(r)
	assert.Empty(t, a.Error)
	assert.Empty(t, a.NotProbed)
	assert.Contains(t, a.Server, srv.URL+": sandboxerd ")
	assert.Contains(t, a.Server, "local")
	assert.Contains(t, string(a.Capabilities), `"adapter":"remote:local"`)
	assert.Empty(t, serverSandboxes(t, srv.URL, tok), "the probe sandbox is deleted")

	wrong := e.run("", []string{"SANDBOXER_TOKEN=sbx_wrong"}, "doctor", "--json", "--url", srv.URL)
	a = remoteRow(wrong)
	assert.Contains(t, a.Error, "refused the token")
	assert.Contains(t, a.Server, srv.URL, "the server answered its health")
	assert.Equal(t, r.code, wrong.code, "the server is never a failed check")
	assert.NotContains(t, r.stdout+r.stderr, tok)
}
