package egress_test

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
)

// The tests in this file drive real clients (curl, busybox wget, python urllib, git, go) through
// the proxy with the environment a sandbox's commands get (egress.Env, pointed at the test's
// proxy), against real servers on loopback that the proxy's resolver maps test names to.

func need(t *testing.T, bin string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err != nil {
		t.Skipf("%s is not installed", bin)
	}
	return p
}

// proxyEnv is egress.Env with the test proxy's address instead of 127.0.0.1:Port, over a
// minimal environment (no proxy settings of the host leak in).
func proxyEnv(t *testing.T, pu *url.URL) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C"}
	for _, kv := range egress.Env() {
		env = append(env, strings.ReplaceAll(kv, fmt.Sprintf("127.0.0.1:%d", egress.Port), pu.Host))
	}
	return env
}

func run(t *testing.T, env []string, dir string, argv ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeCA(t *testing.T, tg *target) string {
	f := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tg.Certificate().Raw}), 0o644))
	return f
}

func TestClientsCurlWgetPython(t *testing.T) {
	t.Parallel()
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s", r.URL.Path) })
	plain := newTarget(t, false, hello)
	secure := newTarget(t, true, hello)
	denied := newTarget(t, false, hello)
	_, pu := startProxy(t, egress.Config{AllowHosts: []string{"example.com"},
		Resolve:    names(map[string]string{"example.com": "127.0.0.1", "other.test": "127.0.0.1"}),
		AllowAddrs: loopbackOnly})
	env := proxyEnv(t, pu)
	ca := writeCA(t, secure)
	httpURL := fmt.Sprintf("http://example.com:%d/plain", plain.Port)
	httpsURL := fmt.Sprintf("https://example.com:%d/tls", secure.Port)
	deniedURL := fmt.Sprintf("http://other.test:%d/", denied.Port)

	t.Run("curl", func(t *testing.T) {
		curl := need(t, "curl")
		out, err := run(t, env, "", curl, "-sS", httpURL)
		require.NoError(t, err, out)
		assert.Equal(t, "hello /plain", out)
		out, err = run(t, env, "", curl, "-sS", "--cacert", ca, httpsURL)
		require.NoError(t, err, out)
		assert.Equal(t, "hello /tls", out)
		out, err = run(t, env, "", curl, "-sS", "-w", "\n%{http_code}", deniedURL)
		require.NoError(t, err, out)
		assert.Contains(t, out, "--allow-host other.test")
		assert.True(t, strings.HasSuffix(out, "403"), out)
		out, err = run(t, env, "", curl, "-sS", "--cacert", ca, strings.Replace(deniedURL, "http:", "https:", 1))
		require.Error(t, err, "a refused CONNECT fails curl")
		assert.Contains(t, out, "403")
	})
	t.Run("busybox-wget", func(t *testing.T) {
		bb := need(t, "busybox")
		out, err := run(t, env, "", bb, "wget", "-q", "-O", "-", httpURL)
		require.NoError(t, err, out)
		assert.Equal(t, "hello /plain", out)
		out, err = run(t, env, "", bb, "wget", "-q", "-O", "-", deniedURL)
		require.Error(t, err, out)
	})
	t.Run("python-urllib", func(t *testing.T) {
		py := need(t, "python3")
		const script = `import ssl, sys, urllib.request, urllib.error
ctx = ssl.create_default_context(cafile=sys.argv[1])
for u in sys.argv[2:4]:
    print(urllib.request.urlopen(u, context=ctx).read().decode())
try:
    urllib.request.urlopen(sys.argv[4])
except urllib.error.HTTPError as e:
    print(e.code)
`
		out, err := run(t, env, "", py, "-c", script, ca, httpURL, httpsURL, deniedURL)
		require.NoError(t, err, out)
		assert.Equal(t, "hello /plain\nhello /tls\n403\n", out)
	})
	assert.Zero(t, denied.Conns(), "the refused host was never reached")
}

// TestClientGitClone clones over smart HTTP (git http-backend behind net/http/cgi) through the
// proxy.
func TestClientGitClone(t *testing.T) {
	t.Parallel()
	git := need(t, "git")
	srv := egresstest.GitServer(t)
	_, pu := startProxy(t, egress.Config{AllowHosts: []string{"git.example.com"},
		Resolve: names(map[string]string{"git.example.com": "127.0.0.1", "evil.test": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	env := append(proxyEnv(t, pu), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	dst := filepath.Join(t.TempDir(), "clone")
	cloned, err := run(t, env, "", git, "clone", "-q", fmt.Sprintf("http://git.example.com:%d/repo.git", srv.Port), dst)
	require.NoError(t, err, cloned)
	b, err := os.ReadFile(filepath.Join(dst, "README"))
	require.NoError(t, err)
	assert.Equal(t, egresstest.GitReadme, string(b))
	before := srv.Conns()
	refused, err := run(t, env, "", git, "clone", "-q", fmt.Sprintf("http://evil.test:%d/repo.git", srv.Port), dst+"2")
	require.Error(t, err, refused)
	assert.Contains(t, refused, "403")
	assert.Equal(t, before, srv.Conns())
}

// TestClientGoModDownload: `go mod download` against a GOPROXY that only the proxy can reach.
func TestClientGoModDownload(t *testing.T) {
	t.Parallel()
	goBin := need(t, "go")
	srv := egresstest.GoModServer(t)
	p, pu := startProxy(t, egress.Config{AllowHosts: []string{"goproxy.example.com"},
		Resolve: names(map[string]string{"goproxy.example.com": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	tmp := t.TempDir()
	env := append(proxyEnv(t, pu), "GOPATH="+filepath.Join(tmp, "gopath"), "GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOCACHE="+filepath.Join(tmp, "cache"), "GOENV=off", "GOTOOLCHAIN=local", "GOSUMDB=off", "GOFLAGS=-modcacherw",
		fmt.Sprintf("GOPROXY=http://goproxy.example.com:%d", srv.Port))
	m := p.Mark()
	mv := egresstest.Module + "@" + egresstest.ModuleVersion
	out, err := run(t, env, tmp, goBin, "mod", "download", "-json", mv)
	require.NoError(t, err, out)
	assert.Contains(t, out, `"Version": "v1.0.0"`)
	b, err := os.ReadFile(filepath.Join(tmp, "modcache", mv, "hello.go"))
	require.NoError(t, err)
	assert.Contains(t, string(b), egresstest.ModuleText)
	ds := since(t, p, m)
	require.NotEmpty(t, ds)
	for _, d := range ds {
		assert.Equal(t, "goproxy.example.com", d.Host)
		assert.True(t, d.Allowed)
	}
}
