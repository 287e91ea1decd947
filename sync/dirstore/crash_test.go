package dirstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash tests re-run this test binary as a child that applies a batch and kills itself with
// SIGKILL at a named point of the commit; the parent then checks what the next Open sees.
const (
	crashEnvDir   = "SANDBOXER_DIRSTORE_CRASH_DIR"
	crashEnvPoint = "SANDBOXER_DIRSTORE_CRASH_POINT"
	crashFiles    = 40
)

func oldContent(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("old %d;", i)), 1000+i) }
func newContent(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("NEW %d|", i)), 3000-i) }

func crashBatch() []filesync.Change {
	var ch []filesync.Change
	for i := range crashFiles {
		ch = append(ch, filesync.Change{Collection: "files", Path: fmt.Sprintf("d%d/f%d", i%4, i),
			Content: newContent(i), Base: filesync.Hash(oldContent(i))})
	}
	// One delete and one brand-new entry in the same batch.
	ch = append(ch, filesync.Change{Collection: "files", Path: "gone", Delete: true, Base: filesync.Hash([]byte("gone"))},
		filesync.Change{Collection: "other", Path: "born", Content: []byte("born"), Base: filesync.Absent})
	return ch
}

func TestCrashChild(t *testing.T) {
	dir, point := os.Getenv(crashEnvDir), os.Getenv(crashEnvPoint)
	if dir == "" {
		t.Skip("only runs as the child of TestCrashDuringCommit")
	}
	st, err := Open(dir)
	require.NoError(t, err)
	testHook = func(p string) {
		if p == point {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never reached
		}
	}
	_, err = st.Apply(context.Background(), crashBatch())
	require.NoError(t, err)
	t.Fatalf("crash point %q was never reached", point)
}

func TestCrashDuringCommit(t *testing.T) {
	t.Parallel()
	// Points before the journal is in place give the old state; the others the new one.
	cases := []struct {
		point string
		isNew bool
	}{
		{"staged", false},
		{"committed", true},
		{"renamed 1", true},
		{fmt.Sprintf("renamed %d", crashFiles/2), true},
		{"manifest files", true},
		{"manifest other", true},
	}
	for _, c := range cases {
		t.Run(c.point, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			st, err := Open(dir)
			require.NoError(t, err)
			var seed []filesync.Change
			for i := range crashFiles {
				seed = append(seed, filesync.Change{Collection: "files", Path: fmt.Sprintf("d%d/f%d", i%4, i), Content: oldContent(i)})
			}
			seed = append(seed, filesync.Change{Collection: "files", Path: "gone", Content: []byte("gone")})
			_, err = st.Apply(context.Background(), seed)
			require.NoError(t, err)
			require.NoError(t, st.Close())

			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvPoint+"="+c.point)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the child must die: %s", out)
			ws, ok := ee.Sys().(syscall.WaitStatus)
			require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "killed by SIGKILL at %q: %s", c.point, out)
			if c.isNew {
				_, err := os.Stat(filepath.Join(dir, journalFile))
				require.NoError(t, err, "the journal is left for recovery")
			}

			st, err = Open(dir) // recovers
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			ctx := context.Background()
			for i := range crashFiles {
				p := fmt.Sprintf("d%d/f%d", i%4, i)
				e, err := st.Get(ctx, "files", p)
				require.NoError(t, err)
				got, err := st.Read(ctx, "files", p)
				require.NoError(t, err)
				assert.Equal(t, e.Hash, filesync.Hash(got), "%s: manifest and content agree", p)
				want := oldContent(i)
				if c.isNew {
					want = newContent(i)
				}
				assert.True(t, bytes.Equal(want, got), "%s is entirely old or entirely new (want new=%v)", p, c.isNew)
			}
			_, gerr := st.Get(ctx, "files", "gone")
			_, berr := st.Get(ctx, "other", "born")
			if c.isNew {
				assert.Error(t, gerr)
				assert.NoError(t, berr)
			} else {
				assert.NoError(t, gerr)
				assert.Error(t, berr)
			}
			for _, name := range []string{journalFile, stagingDir, journalFile + ".tmp"} {
				_, err := os.Stat(filepath.Join(dir, name))
				assert.True(t, os.IsNotExist(err), "%s cleaned up", name)
			}
			// The store is usable: the same batch now applies or is settled.
			conf, err := st.Apply(ctx, crashBatch())
			require.NoError(t, err)
			assert.Empty(t, conf)
			got, err := st.Read(ctx, "files", "d1/f1")
			require.NoError(t, err)
			assert.Equal(t, newContent(1), got)
		})
	}
}
