package main_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
)

// goProject fills the env's workspace with a Go module and its tests (go 1.19: the Debian
// toolchain image's Go).
func goProject(e *env) {
	e.write("go.mod", "module example.com/q\n\ngo 1.19\n")
	e.write("rev.go", "package q\n\nfunc Rev(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}\n")
	e.write("rev_test.go", "package q\n\nimport \"testing\"\n\nfunc TestRev(t *testing.T) {\n\tif Rev(\"abc\") != \"cba\" {\n\t\tt.Fatal(Rev(\"abc\"))\n\t}\n}\n")
}

// The "done when" (35): a one-shot `exec -- go test ./...` in a Go project passes in a
// container with a toolchain image, on the project's files, and what the tests write lands.
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
}
