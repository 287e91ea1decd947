package egresstest

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
)

// SecretValue is the harness's secret: the API server must get it, nothing in the sandbox.
const SecretValue = "s3cr3t-sandboxer-harness-4f1c9e"

// RunSecrets checks, with commands inside a sandbox of the adapter, that a secret reaches only
// the host it is bound to and is never in the sandbox: an HTTPS server on loopback (httptest's
// certificate, for example.com, which the proxy's upstream trust store is pointed at) plays the
// API; the sandbox allows example.com GET and POST under /v1/ and binds API_KEY to it.
//   - the commands trust the proxy's authority with no option (SSL_CERT_FILE and friends): curl
//     and python3 urllib (where present) call the API with the placeholder, and the server gets
//     the value, in the injected header and where the placeholder was;
//   - env, /proc/self/environ and the files of HOME and the workspace hold no value, nor does
//     the command's output, the proxy's record or the tool result;
//   - a request outside the rules (DELETE, /v2/) is 403 naming the rule and never reaches the server.
func RunSecrets(t *testing.T, newSandbox NewSandbox) {
	var mu sync.Mutex
	var got []http.Header
	api := NewTarget(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		fmt.Fprintf(w, "api %s %s", r.Method, r.URL.Path)
	}))
	roots := x509.NewCertPool()
	roots.AddCert(api.Certificate())
	var git *Target // a private repository whose password is the secret GIT_TOKEN
	if _, err := exec.LookPath("git"); err == nil {
		git = PrivateGitServer(t, "git.example.com", SecretValue)
		roots.AddCert(git.Certificate())
	}
	opts := egress.Config{
		Resolve:       Names(map[string]string{"example.com": "127.0.0.1", "git.example.com": "127.0.0.1"}),
		AllowAddrs:    LoopbackOnly,
		UpstreamRoots: roots,
		Secrets:       []egress.Secret{{Name: "API_KEY", Value: SecretValue}, {Name: "GIT_TOKEN", Value: SecretValue}},
		Inject: []egress.Injection{{Host: "example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"},
			{Host: "git.example.com", Template: "{{GIT_TOKEN}}"}}, // a binding only: git puts the placeholder in its URL
	}
	sb := newSandbox(t, []string{"example.com GET,POST /v1/", "git.example.com"}, opts)
	if _, ok := sb.(adapter.PortListener); !ok {
		t.Skip("the adapter has no adapter.PortListener (yet): the egress proxy cannot be attached")
	}
	proxy := egress.Of(sb)
	require.NotNil(t, proxy)
	base := fmt.Sprintf("https://example.com:%d", api.Port)
	headers := func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), got...)
	}
	clean := func(t *testing.T, what string, b []byte) {
		t.Helper()
		assert.NotContains(t, string(b), SecretValue, "%s holds the secret", what)
	}

	t.Run("Curl", func(t *testing.T) {
		if sh(t, sb, "command -v curl").ExitCode != 0 {
			t.Skip("no curl in the sandbox")
		}
		before := len(headers())
		res := sh(t, sb, `curl -sS -H "X-Token: $API_KEY" `+base+`/v1/models`)
		require.Equal(t, 0, res.ExitCode, "%s %s", res.Stdout, res.Stderr)
		assert.Equal(t, "api GET /v1/models", string(res.Stdout))
		clean(t, "curl's output", append(res.Stdout, res.Stderr...))
		hs := headers()
		require.Len(t, hs, before+1)
		assert.Equal(t, "Bearer "+SecretValue, hs[before].Get("Authorization"))
		assert.Equal(t, SecretValue, hs[before].Get("X-Token"), "the placeholder in API_KEY is replaced on the way out")
	})
	t.Run("PythonUrllib", func(t *testing.T) {
		if sh(t, sb, "command -v python3").ExitCode != 0 {
			t.Skip("no python3 in the sandbox")
		}
		before := len(headers())
		res := sh(t, sb, `python3 -c 'import sys, urllib.request as u; print(u.urlopen(u.Request(sys.argv[1], data=b"{}", method="POST")).read().decode())' `+base+`/v1/jobs`)
		require.Equal(t, 0, res.ExitCode, "%s %s", res.Stdout, res.Stderr)
		assert.Equal(t, "api POST /v1/jobs\n", string(res.Stdout))
		hs := headers()
		require.Len(t, hs, before+1)
		assert.Equal(t, "Bearer "+SecretValue, hs[before].Get("Authorization"))
	})
	t.Run("OutsideTheRules", func(t *testing.T) {
		// curl where there is, else python3: the body, a newline, the status.
		fetch := `curl -sS -w '\n%{http_code}' -X "$1" "$2"`
		if sh(t, sb, "command -v curl").ExitCode != 0 {
			if sh(t, sb, "command -v python3").ExitCode != 0 {
				t.Skip("neither curl nor python3 in the sandbox")
			}
			fetch = `python3 -c 'import sys, urllib.request as u, urllib.error as e
try:
    r = u.urlopen(u.Request(sys.argv[2], method=sys.argv[1])); print(r.read().decode()); print(r.status, end="")
except e.HTTPError as x:
    print(x.read().decode()); print(x.code, end="")' "$1" "$2"`
		}
		before := len(headers())
		for _, c := range [][2]string{{"DELETE", base + "/v1/models"}, {"GET", base + "/v2/models"}} {
			res := sh(t, sb, fmt.Sprintf("set -- %s %s; %s", c[0], c[1], fetch))
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			assert.True(t, strings.HasSuffix(string(res.Stdout), "\n403"), "%s: %s", c, res.Stdout)
			assert.Contains(t, string(res.Stdout), `"example.com GET,POST /v1/"`)
		}
		assert.Len(t, headers(), before, "a request outside the rules reached the server")
	})
	t.Run("GitClonePrivate", func(t *testing.T) {
		if git == nil || sh(t, sb, "command -v git").ExitCode != 0 {
			t.Skip("no git on the host or in the sandbox")
		}
		url := fmt.Sprintf("https://x-access-token:$GIT_TOKEN@git.example.com:%d/repo.git", git.Port)
		res := sh(t, sb, "GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 git clone -q "+url+" private && cat private/README")
		require.Equal(t, 0, res.ExitCode, "%s %s", res.Stdout, res.Stderr)
		assert.Equal(t, GitReadme, string(res.Stdout))
		clean(t, "git's output", append(res.Stdout, res.Stderr...))
		res = sh(t, sb, "git -C private remote get-url origin")
		assert.Contains(t, string(res.Stdout), egress.Placeholder("GIT_TOKEN"), "the clone keeps the placeholder, not the token")
	})
	t.Run("BundleComesBack", func(t *testing.T) {
		// A command removes the bundle where it may (the local adapter's HOME is the sandbox's;
		// docker's and oci's .sandboxer directory is root's), as a recycled sandbox's emptied
		// HOME does: the next command has it again, the sandbox's own certificates before the
		// proxy's. (egress.TestWriteBundleChecksCheaply covers the remaking itself.)
		sh(t, sb, `rm -f "$SSL_CERT_FILE"`)
		res := sh(t, sb, `test -s "$SSL_CERT_FILE" && grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE"`)
		require.Equal(t, 0, res.ExitCode, "%s %s", res.Stdout, res.Stderr)
		n, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
		require.NoError(t, err)
		assert.Greater(t, n, 1, "the bundle holds the sandbox's own certificates and the proxy's")
	})
	t.Run("NeverInTheSandbox", func(t *testing.T) {
		res := sh(t, sb, `env; cat /proc/self/environ; echo "$API_KEY"; cat "$SSL_CERT_FILE" >/dev/null && echo trusted`)
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		clean(t, "the environment", res.Stdout)
		assert.Contains(t, string(res.Stdout), egress.Placeholder("API_KEY"))
		assert.Contains(t, string(res.Stdout), "trusted\n")
		res = sh(t, sb, `grep -r -l -F -e "`+SecretValue+`" "$HOME" . 2>/dev/null; true`)
		assert.Empty(t, string(res.Stdout), "files holding the secret")
		for _, d := range since(t, proxy, egress.Mark(0)) {
			clean(t, "a decision", []byte(fmt.Sprintf("%+v", d)))
		}
	})
}
