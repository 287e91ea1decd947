package coreutils_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/memory/coreutils"
	"github.com/sandboxer/sandboxer/adapter/memory/memfs"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run calls one utility directly over a tree, without the adapter or the shell.
func run(t *testing.T, tree *memfs.FS, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f, ok := coreutils.Lookup(args[0])
	require.True(t, ok, args[0])
	e := &coreutils.Env{Ctx: context.Background(), FS: coreutils.Plain(tree), Dir: "/w",
		Stdin: bytes.NewBufferString(stdin), Stdout: &out, Stderr: &errOut, Vars: expand.ListEnviron("A=1")}
	code := f(e, args)
	return out.String(), errOut.String(), code
}

func TestUtilitiesStandalone(t *testing.T) {
	t.Parallel()
	tree := memfs.New(0)
	require.NoError(t, tree.MkdirAll("/w/d", 0o755))
	require.NoError(t, tree.WriteFile("/w/d/f.txt", []byte("alpha\nbeta\ngamma\n"), 0o644))

	out, _, code := run(t, tree, "", "rg", "-n", "--", "^g|ta$", "d")
	assert.Equal(t, "d/f.txt:2:beta\nd/f.txt:3:gamma\n", out)
	assert.Equal(t, 0, code)

	out, _, _ = run(t, tree, "x\ny\n", "sed", "s/x/z/")
	assert.Equal(t, "z\ny\n", out)

	_, errOut, code := run(t, tree, "", "cat", "missing")
	assert.Equal(t, "cat: missing: No such file or directory\n", errOut)
	assert.Equal(t, 1, code)

	_, _, code = run(t, tree, "", "mkdir", "-p", "new/deep")
	assert.Equal(t, 0, code)
	info, err := tree.Stat("/w/new/deep", true)
	require.NoError(t, err)
	assert.True(t, info.IsDir())

	out, _, _ = run(t, tree, "", "env")
	assert.Equal(t, "A=1\n", out)

	_, errOut, code = run(t, tree, "", "xargs", "echo")
	assert.Equal(t, 1, code, "without Exec a utility cannot start commands")
	assert.NotEmpty(t, errOut)

	assert.Contains(t, coreutils.Names(), "rg")
}
