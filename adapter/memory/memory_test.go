package memory_test

import (
	"context"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSandbox(t *testing.T, cfg memory.Config) *memory.Sandbox {
	t.Helper()
	sb, err := memory.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) adapter.Sandbox { return newSandbox(t, memory.Config{}) },
		Outside: func(t *testing.T, sb adapter.Sandbox) (string, func(string) ([]byte, bool)) {
			tree := sb.(*memory.Sandbox).Tree()
			dir := "/tmp/outside-" + path.Base(t.Name())
			require.NoError(t, tree.MkdirAll(dir, 0o755))
			require.NoError(t, tree.WriteFile(dir+"/secret", []byte(adaptertest.SecretContent), 0o644))
			return dir, func(name string) ([]byte, bool) {
				data, err := tree.ReadFile(path.Join(dir, name))
				if err != nil {
					return nil, false
				}
				return data, true
			}
		},
	})
}

var _ = os.Getpid

// A descriptor opened with <> writes where Bash's does, at the start of the file, however the
// goroutine that feeds its read side is scheduled (patch 0025: before it, the copy into that
// pipe moved the offset the write used, some of the time). Many rounds in one script make the
// race show when it is there.
func TestReadWriteRedirectionWritesAtTheStart(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, memory.Config{})
	const rounds = 300
	res, err := run(t, sb, `i=0; while [ $i -lt `+strconv.Itoa(rounds)+` ]; do echo aaaa > f; echo b 1<> f; cat f; i=$((i+1)); done`)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Equal(t, strings.Repeat("b\naa\n", rounds), string(res.Stdout))
}
