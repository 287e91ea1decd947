package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The local adapter's workspace (the current directory, or --root) is vetted before any sandbox
// exists: `/`, system directories, home directories and directories holding sandboxer's own
// files are refused with a usage error that says how to pick one, whether the call is served or
// run by the engine alone, and nothing the command would have written is there. The commands
// that write only ever target directories of the test's own.
func TestWorkspaceIsVetted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := filepath.Join(e.base, "home")
	// The front and the engine copied into a project, as `go build -o bin/ ./cmd/...` did.
	proj := filepath.Join(e.base, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "bin"), 0o755))
	front := filepath.Join(proj, "bin", "sandboxer")
	for _, name := range []string{"sandboxer", "sandboxerd"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(bin), name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(proj, "bin", name), b, 0o755))
	}
	frontBefore, err := os.ReadFile(front)
	require.NoError(t, err)

	write := func(name string) string {
		return `{"cmd":"sh","args":["-c","echo pwned > ` + name + `"]}`
	}
	cases := []struct {
		name, dir, input string
		env              []string
		binary           string
	}{
		{name: "root", dir: "/", input: `{"cmd":"true"}`},
		{name: "etc", dir: "/etc", input: `{"cmd":"true"}`},
		{name: "home", dir: home, input: write(".bashrc")},
		{name: "parent of the state directory", dir: e.base, input: write("state/sandboxes")},
		{name: "holding the binaries", dir: proj, input: write("bin/sandboxer"), binary: front},
		{name: "holding the store", dir: e.work, input: write("st/.journal"), env: []string{"SANDBOXER_STORE=dir:" + filepath.Join(e.work, "st")}},
		{name: "holding the journal", dir: e.work, input: write("j.db"), env: []string{"SANDBOXER_JOURNAL=" + filepath.Join(e.work, "j.db")}},
		{name: "holding the server directory", dir: e.work, input: write("srv/x.sock"), env: []string{"SANDBOXER_SERVER_DIR=" + filepath.Join(e.work, "srv")}},
	}
	for _, c := range cases {
		for _, mode := range []string{"served", "direct"} {
			env := append([]string{"SANDBOXER_SERVER=on"}, c.env...)
			if mode == "direct" {
				env = append(env, "SANDBOXER_SERVER=off")
			}
			r := e.runWith(c.binary, c.dir, "", env, "tool", "bash", "--input", c.input)
			assert.Equal(t, 2, r.code, "%s, %s: a usage error: %s%s", c.name, mode, r.stdout, r.stderr)
			assert.Contains(t, r.stderr, "INVALID_INPUT", "%s, %s", c.name, mode)
			assert.Contains(t, r.stderr, "--root", "%s, %s: says how to pick a workspace", c.name, mode)
			r = e.runWith(c.binary, c.dir, "", env, "exec", "--", "true")
			assert.NotEqual(t, 0, r.code, "%s, %s: exec", c.name, mode)
		}
	}
	_, err = os.Stat(filepath.Join(home, ".bashrc"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a command wrote the home's dotfiles")
	after, err := os.ReadFile(front)
	require.NoError(t, err)
	assert.Equal(t, frontBefore, after, "a command replaced the front")
	_, err = os.Stat(filepath.Join(e.work, "srv", "x.sock"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	// mcp refuses at start, before it reads a message.
	r := e.runIn("/", nil, "mcp")
	assert.Equal(t, 2, r.code, "%s", r.stderr)
	// A project named by --root is fine wherever sandboxer starts.
	r = e.runIn("/", nil, "tool", "bash", "--root", e.work, "--input", `{"cmd":"sh","args":["-c","echo ok > made"]}`)
	require.Equal(t, 0, r.code, "%s", r.stderr)
	b, err := os.ReadFile(filepath.Join(e.work, "made"))
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(b))
	assert.False(t, strings.Contains(r.stderr, "INVALID_INPUT"))
}
