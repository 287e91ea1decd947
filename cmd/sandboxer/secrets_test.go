package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
)

// secretWorld is README's secrets example played on loopback: an HTTPS API at api.example.com
// that records the Authorization it gets, a private git repository at git.example.com whose
// password is the secret, and the CLI's flags that bind the two secrets (one from the
// environment, one from a file) to them. The test build's SANDBOXER_TEST_EGRESS points the
// proxy's resolver and upstream trust store at these servers; nothing else differs from a real
// call.
type secretWorld struct {
	api, git *egresstest.Target
	vars     []string // SANDBOXER_TEST_EGRESS and the token's variable
	flags    []string
	mu       sync.Mutex
	auth     []string // the Authorization headers the API got
}

const cliSecret = "cli-s3cret-7d41be90"

func newSecretWorld(t *testing.T, e *env) *secretWorld {
	w := &secretWorld{}
	w.api = egresstest.NewTargetFor(t, "api.example.com", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.auth = append(w.auth, r.Header.Get("Authorization"))
		w.mu.Unlock()
		if r.URL.Path == "/v1/stream" { // a download that never ends by itself
			buf := make([]byte, 32<<10)
			for {
				if _, err := rw.Write(buf); err != nil {
					return
				}
				rw.(http.Flusher).Flush()
				time.Sleep(10 * time.Millisecond)
			}
		}
		fmt.Fprintf(rw, "hello %s", r.URL.Path)
	}))
	w.git = egresstest.PrivateGitServer(t, "git.example.com", cliSecret)
	var roots bytes.Buffer
	for _, tg := range []*egresstest.Target{w.api, w.git} {
		require.NoError(t, pem.Encode(&roots, &pem.Block{Type: "CERTIFICATE", Bytes: tg.Certificate().Raw}))
	}
	rootsFile := filepath.Join(e.base, "roots.pem")
	require.NoError(t, os.WriteFile(rootsFile, roots.Bytes(), 0o644))
	tokenFile := filepath.Join(e.base, "git-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(cliSecret+"\n"), 0o600))
	tuning, err := json.Marshal(map[string]any{"hosts": map[string]string{"api.example.com": "127.0.0.1", "git.example.com": "127.0.0.1"}, "roots": rootsFile})
	require.NoError(t, err)
	w.vars = []string{"SANDBOXER_TEST_EGRESS=" + string(tuning), "API_TOKEN=" + cliSecret}
	w.flags = []string{"--allow-host", "api.example.com GET /v1/", "--allow-host", "git.example.com",
		"--secret", "API_KEY=env:API_TOKEN", "--secret", "GIT_TOKEN=file:" + tokenFile,
		"--inject", "api.example.com:Authorization=Bearer {{API_KEY}}", "--inject", "git.example.com:{{GIT_TOKEN}}"}
	return w
}

func (w *secretWorld) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.auth...)
}

// noSecretUnder fails when a file under dir holds the secret.
func noSecretUnder(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() < 64<<20 {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(cliSecret)) {
				t.Errorf("%s holds the secret", p)
			}
		}
		return nil
	})
}

// TestSecretsThroughTheCLI: an authenticated API call and a clone of a private repository with
// --secret and --inject, on local (curl, git and node), docker and oci (python3 and git in the
// Debian image): the servers get the secret; the output, the workspace, the state directory
// (journal, records) hold only its placeholder; a request outside the rules is refused.
func TestSecretsThroughTheCLI(t *testing.T) {
	t.Parallel()
	script := func(client string) string {
		return `set -e
` + client + `
GIT_TERMINAL_PROMPT=0 git clone -q "https://x-access-token:$GIT_TOKEN@git.example.com:$GIT_PORT/repo.git" private
cat private/README
echo "env: API_KEY=$API_KEY"`
	}
	curl := `curl -sS "https://api.example.com:$API_PORT/v1/user"; echo
test "$(curl -sS -o /dev/null -w '%{http_code}' -X POST "https://api.example.com:$API_PORT/v1/user")" = 403`
	python := `python3 -c 'import os, urllib.request as u, urllib.error as e
print(u.urlopen("https://api.example.com:%s/v1/user" % os.environ["API_PORT"]).read().decode())
try:
    u.urlopen(u.Request("https://api.example.com:%s/v1/user" % os.environ["API_PORT"], method="DELETE")); raise SystemExit("DELETE passed")
except e.HTTPError as x:
    assert x.code == 403, x.code'`
	// Node 20's fetch does not honour HTTPS_PROXY: node opens the tunnel itself, and trusts the
	// proxy's authority through NODE_EXTRA_CA_CERTS.
	node := `node -e '
const http = require("http"), tls = require("tls"), p = new URL(process.env.HTTPS_PROXY), port = process.env.API_PORT;
http.request({host: p.hostname, port: p.port, method: "CONNECT", path: "api.example.com:" + port}).on("connect", (res, sock) => {
  const s = tls.connect({socket: sock, servername: "api.example.com"}, () =>
    s.write("GET /v1/node HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n"));
  let out = ""; s.on("data", d => out += d); s.on("end", () => console.log(out.split("\r\n\r\n")[1]));
}).end()'`
	cases := []struct {
		name, client string
		want         []string
		args         []string
		need         func(t *testing.T) []string
	}{
		{name: "local", client: curl + "\n" + node, want: []string{"hello /v1/user\n", "hello /v1/node\n"}, need: func(t *testing.T) []string {
			if !local.Probe().Network {
				t.Skip("no network namespace here: the proxy is not attached")
			}
			for _, p := range []string{"curl", "git", "node"} {
				if _, err := exec.LookPath(p); err != nil {
					t.Skipf("no %s on this host", p)
				}
			}
			return nil
		}},
		{name: "docker", client: python, want: []string{"hello /v1/user\n"}, need: func(t *testing.T) []string {
			requireDocker(t)
			return []string{"--adapter", "docker", "--image", adaptertest.DebianImage(t)}
		}},
		{name: "oci", client: python, want: []string{"hello /v1/user\n"}, need: func(t *testing.T) []string {
			requireRuntime(t, "runc")
			return []string{"--adapter", "oci", "--runtime", "runc", "--image", adaptertest.DebianImage(t)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := c.need(t)
			e := newEnv(t)
			e.timeout = 5 * time.Minute // the oci adapter unpacks the Debian image first
			w := newSecretWorld(t, e)
			vars := append(w.vars, fmt.Sprintf("API_PORT=%d", w.api.Port), fmt.Sprintf("GIT_PORT=%d", w.git.Port))
			// The ports travel as SANDBOXER_-less variables of the caller: sh -c reads them from
			// its arguments instead, since a sandbox never sees the caller's environment.
			sc := fmt.Sprintf("API_PORT=%d GIT_PORT=%d; export API_PORT GIT_PORT\n", w.api.Port, w.git.Port) + script(c.client)
			r := e.run("", vars, append(append(append([]string{"exec"}, args...), w.flags...), "--", "sh", "-c", sc)...)
			require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
			assert.Equal(t, strings.Join(c.want, "")+egresstest.GitReadme+"env: API_KEY="+egress.Placeholder("API_KEY")+"\n", r.stdout)
			assert.NotContains(t, r.stdout+r.stderr, cliSecret)
			for _, a := range w.seen() {
				assert.Equal(t, "Bearer "+cliSecret, a, "every request to the API carried the secret")
			}
			assert.Len(t, w.seen(), len(c.want), "the refused request never arrived")
			noSecretUnder(t, e.work)
			noSecretUnder(t, e.state)
			noSecretUnder(t, filepath.Join(e.base, "home"))
		})
	}
}

// TestNetworkChangesLive: a long-lived sandbox keeps its network policy (secrets by source);
// a call that names none takes it; `sandbox network ID` narrows it while a download runs, which
// stops, and the next call is refused the host.
func TestNetworkChangesLive(t *testing.T) {
	t.Parallel()
	if !local.Probe().Network {
		t.Skip("no network namespace here: the proxy is not attached")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on this host")
	}
	e := newEnv(t)
	w := newSecretWorld(t, e)
	r := e.run("", w.vars, append([]string{"sandbox", "create"}, w.flags...)...)
	require.Equal(t, 0, r.code, r.stderr)
	m := idRe.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	id := m[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	noSecretUnder(t, e.state)

	r = e.run("", w.vars, "sandbox", "network", id)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"allowHosts":["api.example.com GET /v1/","git.example.com"]`)
	assert.Contains(t, r.stdout, `{"name":"API_KEY","source":"env:API_TOKEN"}`)

	url := fmt.Sprintf("https://api.example.com:%d/v1/", w.api.Port)
	r = e.run("", w.vars, "exec", "--sandbox", id, "--", "curl", "-sS", url+"user")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "hello /v1/user", r.stdout, "a call that names no network takes the sandbox's")
	require.Equal(t, []string{"Bearer " + cliSecret}, w.seen())

	// A download runs in one call while another narrows the sandbox to git.example.com.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dl := exec.CommandContext(ctx, bin, "exec", "--sandbox", id, "--", "curl", "-sS", "-o", "/dev/null", url+"stream")
	dl.Dir, dl.Env = e.work, append(append([]string(nil), e.vars...), w.vars...)
	var dlErr bytes.Buffer
	dl.Stderr = &dlErr
	require.NoError(t, dl.Start())
	done := make(chan error, 1)
	go func() { done <- dl.Wait() }()
	require.Eventually(t, func() bool { return len(w.seen()) == 2 }, time.Minute, 50*time.Millisecond, "the download started")

	r = e.run("", w.vars, "sandbox", "network", id, "--allow-host", "git.example.com",
		"--secret", "GIT_TOKEN=env:API_TOKEN", "--inject", "git.example.com:{{GIT_TOKEN}}")
	require.Equal(t, 0, r.code, r.stderr)
	select {
	case err := <-done:
		require.Error(t, err, "curl fails when its download is cut: %s", dlErr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the download to a host no longer allowed went on")
	}
	r = e.run("", w.vars, "exec", "--sandbox", id, "--", "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url+"user")
	assert.NotEqual(t, 0, r.code, "the host is no longer allowed: %s", r.stdout)
	assert.Len(t, w.seen(), 2, "nothing reached the API after the change")

	r = e.run("", w.vars, "sandbox", "network", id, "--allow-host", "*")
	assert.Equal(t, 2, r.code, "an invalid policy is a usage error")
	r = e.run("", w.vars, "sandbox", "network", id, "--none")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"network":{"allowHosts":[]}`)
	noSecretUnder(t, e.state)
}
