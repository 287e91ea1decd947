package agent_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// workspace makes a root with a sub directory, links that stay inside (relative and absolute) and
// links that leave it.
func workspace(t *testing.T) string {
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub/deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sub/tool"), []byte("#!/bin/sh\necho tool \"$@\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sub/data"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink("sub/deep", filepath.Join(root, "rel")))
	require.NoError(t, os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "abs")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, os.Symlink("../..", filepath.Join(root, "sub/up")))
	require.NoError(t, os.Symlink("loop", filepath.Join(root, "loop")))
	return root
}

func runWrapped(t *testing.T, c *agent.Client, root, dir string, args ...string) (agent.Exit, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e, err := c.Run(context.Background(), agent.Spec{
		Start:  agent.Start{Args: args, Wrap: &agent.Wrap{Root: root, Dir: dir, ID: "id1", Nonce: "n0"}},
		Stdout: &out, Stderr: &errb,
	}, nil, time.Second)
	require.NoError(t, err)
	return e, out.String(), errb.String()
}

func TestWrapResolvesTheDirectoryInTheJail(t *testing.T) {
	c, _ := serve(t)
	root := workspace(t)
	for dir, want := range map[string]string{
		".":        root,
		"sub":      root + "/sub",
		"rel":      root + "/sub/deep",
		"abs/deep": root + "/sub/deep",
	} {
		e, out, errOut := runWrapped(t, c, root, dir, "pwd")
		assert.Equal(t, 0, e.Code, "%s: %s", dir, errOut)
		assert.Equal(t, want+"\n", out, dir)
	}
	for dir, code := range map[string]string{
		"..":           "escape",
		"out":          "escape",
		"sub/up":       "escape",
		"missing":      "notfound",
		"sub/data":     "notfound",
		"loop":         "notfound",
		"rel/../../..": "escape",
	} {
		e, out, errOut := runWrapped(t, c, root, dir, "pwd")
		assert.Equal(t, 199, e.Code, dir)
		assert.Empty(t, out, dir)
		assert.Equal(t, "sandboxer:n0:"+code+"\n", errOut, dir)
	}
}

func TestWrapChecksTheProgram(t *testing.T) {
	c, _ := serve(t)
	root := workspace(t)
	e, out, _ := runWrapped(t, c, root, "sub", "./tool", "a")
	assert.Equal(t, 0, e.Code)
	assert.Equal(t, "tool a\n", out, "a relative program is found from the working directory")
	for _, prog := range []string{"./data", "./missing", "no-such-program-anywhere", "sub"} {
		e, _, errOut := runWrapped(t, c, root, ".", prog)
		assert.Equal(t, 199, e.Code, prog)
		assert.Equal(t, "sandboxer:n0:noexec\n", errOut, prog)
	}
	var out2 bytes.Buffer
	e, err := c.Run(context.Background(), agent.Spec{
		Start:  agent.Start{Args: []string{"tool", "b"}, Env: []string{"PATH=" + root + "/sub"}, Wrap: &agent.Wrap{Root: root, Dir: ".", ID: "id2", Nonce: "n"}},
		Stdout: &out2,
	}, nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, e.Code)
	assert.Equal(t, "tool b\n", out2.String(), "the command's own PATH is searched")
}

func TestWrapKillsTheTreeWhenTheCommandExits(t *testing.T) {
	c, _ := serve(t)
	root := workspace(t)
	pids := filepath.Join(root, "pids")
	start := time.Now()
	e, out, _ := runWrapped(t, c, root, ".", "/bin/sh", "-c",
		`echo "$SANDBOXER_EXEC_ID"; sleep 30 & echo $! >>pids; setsid sleep 31 & echo $! >>pids; exit 4`)
	assert.Equal(t, 4, e.Code)
	assert.Equal(t, "id1\n", out, "the marker is in the command's environment")
	assert.Less(t, time.Since(start), 5*time.Second)
	b, err := os.ReadFile(pids)
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.Len(t, f, 2)
	for _, s := range f {
		pid, _ := strconv.Atoi(s)
		assert.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond,
			"background process %d (one in a session of its own) dies with the command", pid)
	}
}

func TestKillFrameEndsTheTree(t *testing.T) {
	c, _ := serve(t)
	root := workspace(t)
	for name, tc := range map[string]struct {
		script string
		code   int
	}{
		"terminated":   {`echo ready; exec sleep 30`, 143},
		"ignores term": {`trap '' TERM; echo ready; while :; do sleep 0.05; done`, 137},
	} {
		// The call is cancelled once the script says it is ready (its trap is set).
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		e, err := c.Run(ctx, agent.Spec{
			Start:     agent.Start{Args: []string{"/bin/sh", "-c", tc.script}, Wrap: &agent.Wrap{Root: root, Dir: ".", ID: "k" + name, Nonce: "n"}},
			Stdout:    cancelOnWrite(cancel),
			KillGrace: 200 * time.Millisecond,
		}, nil, 5*time.Second)
		cancel()
		require.ErrorIs(t, err, context.Canceled, name)
		assert.Equal(t, tc.code, e.Code, name)
		assert.Less(t, time.Since(start), 3*time.Second, name)
	}
}

// cancelOnWrite calls cancel at the first write.
type cancelOnWrite context.CancelFunc

func (c cancelOnWrite) Write(p []byte) (int, error) {
	c()
	return len(p), nil
}
