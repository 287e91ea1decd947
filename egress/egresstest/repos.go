package egresstest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The module GoModServer serves, and the text of its one file.
const (
	Module        = "example.test/hello"
	ModuleVersion = "v1.0.0"
	ModuleText    = "hello through the proxy"
)

// GoModServer is a GOPROXY on loopback serving Module at ModuleVersion.
func GoModServer(t testing.TB) *Target {
	t.Helper()
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, body := range map[string]string{
		"go.mod":   "module " + Module + "\n\ngo 1.21\n",
		"hello.go": "package hello\n\nconst Hello = \"" + ModuleText + "\"\n",
	} {
		w, err := zw.Create(Module + "@" + ModuleVersion + "/" + name)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return NewTarget(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/"+Module+"/@v/") {
		case "list":
			fmt.Fprintln(w, ModuleVersion)
		case ModuleVersion + ".info":
			fmt.Fprintf(w, `{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, ModuleVersion)
		case ModuleVersion + ".mod":
			fmt.Fprintf(w, "module %s\n\ngo 1.21\n", Module)
		case ModuleVersion + ".zip":
			w.Write(zbuf.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
}

// GitReadme is the README of the repository GitServer serves.
const GitReadme = "cloned through the proxy\n"

// GitServer serves a repository, repo.git (one commit, README = GitReadme), over git's smart
// HTTP protocol (git http-backend behind net/http/cgi). It skips the test without git.
func GitServer(t testing.TB) *Target {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	out, err := exec.Command(git, "--exec-path").Output()
	require.NoError(t, err)
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skip("git-http-backend is not installed")
	}
	root := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	work := filepath.Join(root, "work")
	require.NoError(t, os.MkdirAll(work, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, "README"), []byte(GitReadme), 0o644))
	for _, argv := range [][]string{
		{git, "init", "-q", "-b", "main", work},
		{git, "-C", work, "add", "README"},
		{git, "-C", work, "commit", "-q", "-m", "first"},
		{git, "clone", "-q", "--bare", work, filepath.Join(root, "repo.git")},
	} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%q: %s", argv, out)
	}
	return NewTarget(t, false, gitBackend(backend, root))
}

func gitBackend(backend, root string) http.Handler {
	return &cgi.Handler{Path: backend, Root: "/", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
}

// PrivateGitServer is GitServer over HTTPS for host (a certificate of its own for that name) that
// answers only requests whose Basic credential has password: 401 asking for one otherwise.
func PrivateGitServer(t testing.TB, host, password string) *Target {
	t.Helper()
	pub := GitServer(t)
	h := pub.Config.Handler
	return NewTargetFor(t, host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
}
