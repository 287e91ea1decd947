package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// HOME is the sandbox's own directory, not the workspace, with isolation on and off: writable,
// kept from one command to the next, emptied by Recycle and removed by Stop; what a toolchain
// keeps there (~/.cache) never lands in the project.
func TestHomeIsTheSandboxsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, iso := range []string{local.IsolationAuto, local.IsolationOff} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			sb := newIsolated(t, local.Config{Isolation: iso})
			res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `mkdir -p ~/.cache && echo x > ~/.cache/x && echo "$HOME"`}})
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			home := strings.TrimSpace(string(res.Stdout))
			require.True(t, filepath.IsAbs(home), "%q", home)
			assert.NotEqual(t, sb.Dir(), home)
			assert.False(t, strings.HasPrefix(home, sb.Dir()+"/"), "HOME %s is inside the workspace", home)
			entries, err := os.ReadDir(sb.Dir())
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing lands in the workspace")

			res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `cat ~/.cache/x && stat -c %a ~`}})
			assert.Equal(t, "x\n700\n", string(res.Stdout), "HOME is kept across commands: %s", res.Stderr)

			require.NoError(t, sb.Recycle(ctx))
			res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `ls -A ~ && echo "$HOME"`}})
			assert.Equal(t, home+"\n", string(res.Stdout), "HOME is emptied, at the same place: %s", res.Stderr)

			require.NoError(t, sb.Stop(ctx))
			_, err = os.Stat(home)
			assert.ErrorIs(t, err, os.ErrNotExist, "Stop removes HOME")
		})
	}
}

// With an explicit Config.Path, PATH is that, as given.
func TestExplicitPath(t *testing.T) {
	t.Parallel()
	sb := newIsolated(t, local.Config{Path: "/usr/bin:/bin"})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo "$PATH"`}})
	assert.Equal(t, "/usr/bin:/bin\n", string(res.Stdout))
}
