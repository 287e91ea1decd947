package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// requireRuntime skips without the OCI runtime (or without root, which the oci adapter needs),
// except where SANDBOXER_TEST_REQUIRE=oci makes that a failure (testenv.NeedOCIRuntime).
func requireRuntime(t *testing.T, rt string) {
	t.Helper()
	testenv.NeedOCIRuntime(t, rt)
}

// shareGoCache gives e's invocations the Go build cache of this run: the first oci sandbox of a
// state directory unpacks the root file system, compiling the agent with the Go toolchain, which
// takes minutes from an empty cache on a loaded machine.
func shareGoCache(e *env) {
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		e.vars = append(e.vars, "GOCACHE="+strings.TrimSpace(string(out)))
	}
}

func TestOCIAdapter(t *testing.T) {
	t.Parallel()
	requireRuntime(t, "runc")
	requireRuntime(t, "runsc")
	e := newEnv(t)
	shareGoCache(e)
	// Whatever an invocation killed by its timeout left behind.
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })

	// Ephemeral, under gVisor: its kernel answers uname.
	r := e.run("", nil, "tool", "bash", "--adapter", "oci", "--runtime", "runsc", "--input", `{"cmd":"uname","args":["-r"]}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "4.4.0", strings.TrimSpace(decodeReply(t, r).Output), "gVisor's kernel")
	// Under runc (the default): the network is an empty namespace, enforced.
	r = e.run("", nil, "tool", "bash", "--adapter", "oci", "--input", `{"cmd":"sh","args":["-c","tail -n +3 /proc/net/dev | cut -d: -f1"]}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "lo", strings.TrimSpace(decodeReply(t, r).Output))
	assert.Contains(t, r.stdout, `"enforced":true`)
	assert.Contains(t, r.stdout, `"userns"`)
	r = e.run("", nil, "tool", "bash", "--adapter", "oci", "--runtime", "kata", "--input", `{"cmd":"true"}`)
	assert.Equal(t, 2, r.code, "an unknown runtime is a usage error: %s", r.stderr)

	// Long-lived: files survive across invocations; a fork copies them; rm removes everything.
	r = e.run("", nil, "sandbox", "create", "--adapter", "oci")
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "tool", "write", "--sandbox", id, "--input", `{"path":"dir/f.txt","content":"kept"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	r = e.run("", nil, "tool", "grep", "--sandbox", id, "--input", `{"pattern":"kep"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "dir/f.txt:1:kept\n", decodeReply(t, r).Output)
	r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", "cat dir/f.txt; echo more >> dir/f.txt")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "kept", r.stdout)

	r = e.run("", nil, "sandbox", "fork", id)
	require.Equal(t, 0, r.code, r.stderr)
	fork := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", fork) })
	r = e.run("", nil, "exec", "--sandbox", fork, "--", "sh", "-c", "cat dir/f.txt; echo fork > dir/f.txt")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "keptmore\n", r.stdout)
	r = e.run("", nil, "exec", "--sandbox", id, "--", "cat", "dir/f.txt")
	assert.Equal(t, "keptmore\n", r.stdout, "the source is unchanged")

	// Fork N ways: each its own copy.
	r = e.run("", nil, "sandbox", "fork", id, "--count", "2")
	require.Equal(t, 0, r.code, r.stderr)
	var forks struct{ IDs []string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &forks), r.stdout)
	require.Len(t, forks.IDs, 2)
	r = e.run("", nil, "exec", "--sandbox", forks.IDs[0], "--", "sh", "-c", "echo first > dir/f.txt")
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "exec", "--sandbox", forks.IDs[1], "--", "cat", "dir/f.txt")
	assert.Equal(t, "keptmore\n", r.stdout, "one fork's change is its own")
	r = e.run("", nil, "sandbox", "rm", forks.IDs[0], forks.IDs[1])
	require.Equal(t, 0, r.code, r.stderr)

	r = e.run("", nil, "sandbox", "ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 2, strings.Count(r.stdout, `"adapter":"oci"`), r.stdout)
	assert.Equal(t, 2, strings.Count(r.stdout, `"alive":true`), r.stdout)
	r = e.run("", nil, "sandbox", "prune")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, id, "a live sandbox is not pruned")

	for _, sb := range []string{id, fork} {
		r = e.run("", nil, "sandbox", "rm", sb)
		require.Equal(t, 0, r.code, r.stderr)
	}
	r = e.run("", nil, "tool", "read", "--sandbox", id, "--input", `{"path":"dir/f.txt"}`)
	assert.Equal(t, "SANDBOX_UNAVAILABLE", code(decodeReply(t, r)), "the sandbox is gone")
	for _, d := range []string{"sandboxes", "workspaces"} {
		ents, _ := os.ReadDir(filepath.Join(e.state, "oci", d))
		assert.Empty(t, ents, "nothing left in %s", d)
	}
}

// --image gives the oci adapter any image's root file system: a `docker save` tarball named
// relative to where the command runs, one-shot and long-lived, unpacked once for both.
func TestOCIAnyImage(t *testing.T) {
	t.Parallel()
	requireRuntime(t, "runc")
	e := newEnv(t)
	shareGoCache(e)
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })
	tar := filepath.Join(e.base, "bb.tar")
	if out, err := exec.Command("docker", "save", "sandboxer-sandbox:latest", "-o", tar).CombinedOutput(); err != nil {
		if testenv.Required("docker") {
			t.Fatalf("docker save sandboxer-sandbox:latest: %v: %s", err, out)
		}
		t.Skipf("docker save sandboxer-sandbox:latest (sandboxer image build makes it): %v: %s", err, out)
	}

	r := e.run("", nil, "tool", "bash", "--adapter", "oci", "--image", "docker-archive:../bb.tar", "--input",
		`{"cmd":"sh","args":["-c","id -u; echo $HOME; test -x /.sandboxer-agent && echo brought"]}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "1000\n/home/sandbox\nbrought\n", decodeReply(t, r).Output)

	r = e.run("", nil, "sandbox", "create", "--adapter", "oci", "--image", "docker-archive:../bb.tar")
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", "test -x /.sandboxer-agent && echo ok")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ok\n", r.stdout)
	r = e.run("", nil, "sandbox", "rm", id)
	require.Equal(t, 0, r.code, r.stderr)

	images := filepath.Join(e.state, "oci", "images")
	trees, err := filepath.Glob(filepath.Join(images, "[0-9a-f]*"))
	require.NoError(t, err)
	require.Len(t, trees, 1, "one tree for the image")
	// No sandbox uses it any more: prune removes it.
	r = e.run("", nil, "sandbox", "prune")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "oci:image:sha256:"+filepath.Base(trees[0])+"\n", r.stdout)
	ents, err := os.ReadDir(images)
	require.NoError(t, err)
	assert.Empty(t, ents, "the tree and its lock file are gone")
	r = e.run("", nil, "tool", "bash", "--adapter", "oci", "--image", "docker-archive:missing.tar", "--input", `{"cmd":"true"}`)
	assert.Contains(t, r.stdout+r.stderr, "INVALID_INPUT", "a missing file")
}
