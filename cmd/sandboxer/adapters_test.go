package main_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// requireDocker skips without a daemon or the default image, except in CI where
// SANDBOXER_TEST_REQUIRE=docker makes that a failure.
func requireDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := image.Exists(ctx, "", image.DefaultTag)
	if err == nil && ok {
		return
	}
	msg := "docker daemon or image " + image.DefaultTag + " not available (sandboxer image build)"
	if testenv.Required("docker") {
		t.Fatalf("%s: %v", msg, err)
	}
	t.Skipf("%s: %v", msg, err)
}

var idRe = regexp.MustCompile(`"id":"(sbx-[0-9a-f]{12})"`)

func TestDockerAdapter(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	e := newEnv(t)

	// Ephemeral: network off is enforced by the container (only the loopback interface).
	r := e.run("", nil, "tool", "bash", "--adapter", "docker", "--input", `{"cmd":"ls","args":["/sys/class/net"]}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	w := decodeReply(t, r)
	assert.Equal(t, "lo", strings.TrimSpace(w.Output))
	assert.Contains(t, r.stdout, `"enforced":true`)

	// Long-lived: files survive across invocations; rm removes the container.
	r = e.run("", nil, "sandbox", "create", "--adapter", "docker")
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "tool", "write", "--sandbox", id, "--input", `{"path":"dir/f.txt","content":"kept"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	r = e.run("", nil, "tool", "grep", "--sandbox", id, "--input", `{"pattern":"kep"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "dir/f.txt:1:kept\n", decodeReply(t, r).Output)
	r = e.run("", nil, "exec", "--sandbox", id, "--", "cat", "dir/f.txt")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "kept", r.stdout)
	r = e.run("", nil, "sandbox", "rm", id)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "tool", "read", "--sandbox", id, "--input", `{"path":"dir/f.txt"}`)
	assert.Equal(t, "SANDBOX_UNAVAILABLE", code(decodeReply(t, r)), "the sandbox is gone")
}

func TestMemoryAdapter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.startMCP(t, "--adapter", "memory")
	res := callTool(t, cs, "write", map[string]any{"path": "a/b.txt", "content": "in memory"})
	require.False(t, res.IsError, text(t, res))
	res = callTool(t, cs, "bash", map[string]any{"cmd": "sh", "args": []string{"-c", "cat a/b.txt; pwd"}})
	require.False(t, res.IsError, text(t, res))
	assert.Equal(t, "in memory/workspace\n", text(t, res))
	res = callTool(t, cs, "read", map[string]any{"path": "/etc/passwd"})
	require.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(text(t, res), "TOOL_PATH_ESCAPE: "), text(t, res))

	// Nothing reached the host workspace; each CLI invocation starts empty.
	_, err := os.Stat(e.work + "/a/b.txt")
	assert.True(t, os.IsNotExist(err))
	r := e.run("", nil, "tool", "read", "--adapter", "memory", "--input", `{"path":"a/b.txt"}`)
	assert.Equal(t, "TOOL_NOT_FOUND", code(decodeReply(t, r)))
	r = e.run("", nil, "sandbox", "create", "--adapter", "memory")
	assert.Equal(t, 2, r.code, "a memory sandbox cannot outlive its process")

	// There is no network in the memory adapter, so command inspection refuses nothing there:
	// a command name in a variable runs, and a network client is simply not found.
	r = e.run("", nil, "exec", "--adapter", "memory", "--journal", "off", "--", "sh", "-c", "c=echo; $c hi; x=printf; $x '%s\\n' there")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "hi\nthere\n", r.stdout)
	r = e.run("", nil, "exec", "--adapter", "memory", "--journal", "off", "--", "sh", "-c", "curl https://example.com")
	assert.Equal(t, 127, r.code, "not refused by the policy: curl does not exist there")
	assert.NotContains(t, r.stderr, "TOOL_NETWORK_DISABLED")
	res = callTool(t, cs, "bash", map[string]any{"cmd": "sh", "args": []string{"-c", "c=curl; $c x || echo not here"}})
	require.False(t, res.IsError, text(t, res))
	assert.Contains(t, text(t, res), "not here")
}

// TestLoopbackClientsReachTheSandboxsOwnServer: with the network enforced off, a network client
// may test the server a command started on the sandbox's loopback (issue 35): inspection lets it
// through because the kernel keeps it there; a URL outside is still refused by inspection.
func TestLoopbackClientsReachTheSandboxsOwnServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	serve := map[string]string{
		"local":  `python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & `,
		"docker": `busybox httpd -p 127.0.0.1:8765 -h "$PWD" && `,
	}
	fetch := map[string]string{"local": "curl -fsS", "docker": "wget -qO-"}
	for _, name := range []string{"local", "docker"} {
		if name == "docker" {
			requireDocker(t)
		}
		script := `echo served > index.html && ` + serve[name] +
			`for i in $(seq 50); do ` + fetch[name] + ` http://127.0.0.1:8765/index.html && exit 0; sleep 0.1; done; exit 1`
		r := e.run("", nil, "exec", "--adapter", name, "--journal", "off", "--", "sh", "-c", script)
		assert.Equal(t, 0, r.code, "%s: %s", name, r.stderr)
		assert.Equal(t, "served\n", r.stdout, name)
		r = e.run("", nil, "exec", "--adapter", name, "--journal", "off", "--", "sh", "-c", fetch[name]+" http://203.0.113.7/")
		assert.NotEqual(t, 0, r.code, name)
		assert.Contains(t, r.stderr, "TOOL_NETWORK_DISABLED", name)
	}
}
