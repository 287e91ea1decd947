package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
)

// goProject fills the env's workspace with a Go module and its tests (go 1.19: the Debian
// toolchain image's Go).
func goProject(e *env) { goProjectIn(e.t, e.work) }

// goProjectIn writes that Go module into dir.
func goProjectIn(t testing.TB, dir string) {
	for name, content := range map[string]string{
		"go.mod":      "module example.com/q\n\ngo 1.19\n",
		"rev.go":      "package q\n\nfunc Rev(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}\n",
		"rev_test.go": "package q\n\nimport \"testing\"\n\nfunc TestRev(t *testing.T) {\n\tif Rev(\"abc\") != \"cba\" {\n\t\tt.Fatal(Rev(\"abc\"))\n\t}\n}\n",
	} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}

// The "done when" (35): a one-shot `exec -- go test ./...` in a Go project passes in a
// container with a toolchain image, on the project's files, and what the tests write lands; Go's
// build cache, in HOME, does not.
func TestOneShotGoTestInAToolchainImage(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	img := adaptertest.DebianImage(t)
	e := newEnv(t)
	goProject(e)
	r := e.run("", nil, "exec", "--adapter", "docker", "--image", img, "--timeout", "5m", "--",
		"sh", "-c", "go test ./... && go vet ./... && echo vetted > vet.txt")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "ok  \texample.com/q")
	got, err := os.ReadFile(e.work + "/vet.txt")
	require.NoError(t, err)
	assert.Equal(t, "vetted\n", string(got))
	noHomeIn(t, e.work)
}

// noHomeIn checks that nothing of a command's HOME landed in the project dir: Go's build cache
// ($HOME/.cache/go-build) stays in the sandbox's own HOME, outside the workspace that is synced
// back.
func noHomeIn(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{".cache", ".config"} {
		assert.NoDirExists(t, filepath.Join(dir, d), "HOME's %s is not in the project", d)
	}
}

// The same on kubernetes: the Debian image with the agent brought by an init container.
func TestKubernetesOneShotGoTestInAToolchainImage(t *testing.T) {
	t.Parallel()
	vars, _ := k8sEnv(t)
	img := os.Getenv("SANDBOXER_TEST_K8S_DEBIAN_IMAGE")
	if img == "" {
		t.Skip("SANDBOXER_TEST_K8S_DEBIAN_IMAGE unset (.ci/kubernetes.sh sets it when the Debian image exists)")
	}
	e := newEnv(t)
	e.vars = append(e.vars, vars...)
	goProject(e)
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })
	r := e.run("", nil, "exec", "--adapter", "kubernetes", "--kubernetes-agent-image", os.Getenv("SANDBOXER_TEST_K8S_IMAGE"),
		"--kubernetes-image", img, "--timeout", "5m", "--", "go", "test", "./...")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "ok  \texample.com/q")
	noHomeIn(t, e.work)
}

// The same on oci under each runtime (runc, crun, runsc): the Debian image from the local docker
// daemon, unpacked once for the three (one state directory), each a project of its own.
func TestOCIOneShotGoTestInAToolchainImage(t *testing.T) {
	t.Parallel()
	img := adaptertest.DebianImage(t)
	e := newEnv(t)
	shareGoCache(e)
	// The first call unpacks the image (a 922 MB tree, tens of seconds); go test compiles the
	// standard library's packages it needs in each new sandbox, slowly under gVisor's ptrace.
	e.timeout = 9 * time.Minute
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })
	for _, rt := range []string{"runc", "crun", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			requireRuntime(t, rt)
			dir := filepath.Join(e.base, "project-"+rt)
			goProjectIn(t, dir)
			start := time.Now()
			r := e.runIn(dir, nil, "exec", "--adapter", "oci", "--runtime", rt, "--image", img, "--timeout", "8m", "--",
				"sh", "-c", "uname -r > kernel.txt && go test ./... && go vet ./... && echo vetted $(id -u) > vet.txt")
			t.Logf("%s: %v", rt, time.Since(start))
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stdout, "ok  \texample.com/q")
			got, err := os.ReadFile(filepath.Join(dir, "vet.txt"))
			require.NoError(t, err, "what the command wrote lands in the project")
			assert.Equal(t, "vetted 1000\n", string(got))
			fi, err := os.Stat(filepath.Join(dir, "vet.txt"))
			require.NoError(t, err)
			assert.Equal(t, uint32(os.Getuid()), fi.Sys().(*syscall.Stat_t).Uid, "owned by the caller")
			kernel, err := os.ReadFile(filepath.Join(dir, "kernel.txt"))
			require.NoError(t, err)
			assert.Equal(t, rt == "runsc", strings.TrimSpace(string(kernel)) == "4.4.0", "gVisor's kernel under runsc only: %s", kernel)
			noHomeIn(t, dir)
		})
	}
}
