package adaptertest

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
)

// homeScript prints HOME, then HOME resolved, and writes under $HOME/.cache as toolchains do (Go's
// build cache): it fails when HOME is not a directory the command can write.
const homeScript = `printf '%s\n' "$HOME"
cd "$HOME" && pwd -P
mkdir -p .cache/sandboxer-home && echo cached > .cache/sandboxer-home/entry && cat .cache/sandboxer-home/entry`

// testPrivateHome: commands have a HOME of their own outside the workspace (Harness.PrivateHome),
// so that what toolchains keep there never lands in the project: HOME is neither the workspace
// nor under it (also once resolved), it exists and the command can write it, and a file written
// to $HOME/.cache is not in the workspace's listing. A fork starts with a HOME of its own, empty,
// as the local adapter's does.
func (s *suite) testPrivateHome(t *testing.T) {
	if !s.h.PrivateHome {
		t.Skip("the adapter's HOME is the workspace (Harness.PrivateHome unset)")
	}
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	ws := caps(t, sb).Workspace
	res := shOK(t, sb, homeScript)
	lines := strings.Split(string(res.Stdout), "\n")
	require.Len(t, lines, 4, "%q", res.Stdout)
	for _, home := range lines[:2] {
		require.NotEmpty(t, home, "HOME is set")
		if ws != "" {
			h, w := path.Clean(home), path.Clean(ws)
			assert.False(t, h == w || strings.HasPrefix(h, w+"/"), "HOME %s is outside the workspace %s", home, ws)
		}
	}
	assert.Equal(t, "cached", lines[2], "HOME is writable")
	if l, ok := sb.(adapter.Lister); ok {
		files, err := l.ListFiles(ctx, "")
		require.NoError(t, err)
		for _, f := range files {
			assert.NotContains(t, f.Path, "sandboxer-home", "what the command wrote under HOME is not in the workspace")
		}
	}
	res = shOK(t, sb, "find . -name sandboxer-home")
	assert.Empty(t, string(res.Stdout), "what the command wrote under HOME is not in the workspace")
	res = shOK(t, sb, `cat "$HOME/.cache/sandboxer-home/entry"`)
	assert.Equal(t, "cached\n", string(res.Stdout), "HOME stays for the sandbox's later commands")

	f, ok := sb.(adapter.Forker)
	if !ok {
		return
	}
	fork, err := f.Fork(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fork.Stop(context.Background()) })
	res = shOK(t, fork, `ls -A "$HOME"; test -w "$HOME" && echo writable`)
	assert.Equal(t, "writable\n", string(res.Stdout), "a fork's HOME is its own, empty: %s", res.Stderr)
}
