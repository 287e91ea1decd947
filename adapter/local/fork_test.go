package local_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
)

// fork forks sb under a watchdog (a fork that blocks fails the test instead of hanging it; the
// bound measures nothing) and stops the fork with the test.
func fork(t *testing.T, sb *local.Sandbox) (*local.Sandbox, error) {
	t.Helper()
	type result struct {
		sb  adapter.Sandbox
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := sb.Fork(context.Background())
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		t.Cleanup(func() { _ = r.sb.Stop(context.Background()) })
		return r.sb.(*local.Sandbox), nil
	case <-time.After(2 * time.Minute):
		t.Fatal("Fork blocked")
		return nil, nil
	}
}

// TestForkSkipsFIFOsAndSockets: a FIFO a command made (no writer: an open for reading would
// block) and a listening socket in the workspace are left out of the fork and listed; the fork
// does not block and has everything else.
func TestForkSkipsFIFOsAndSockets(t *testing.T) {
	t.Parallel()
	sb := newIsolated(t, local.Config{})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", "mkdir d && mkfifo d/pipe && echo kept > d/kept"}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	// A socket path must fit sun_path: made in a short directory, then moved in.
	short, err := os.MkdirTemp("", "sk")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(short) })
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(short, "s"), Net: "unix"})
	require.NoError(t, err)
	l.SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, os.Rename(filepath.Join(short, "s"), filepath.Join(sb.Dir(), "sock")))

	f, err := fork(t, sb)
	require.NoError(t, err)
	assert.ElementsMatch(t, []adapter.Skipped{{Path: "d/pipe", Type: "fifo"}, {Path: "sock", Type: "socket"}}, f.ForkSkipped().Skipped)
	data, err := f.ReadFile(context.Background(), "d/kept")
	require.NoError(t, err)
	assert.Equal(t, "kept\n", string(data))
	for _, name := range []string{"d/pipe", "sock"} {
		_, err := os.Lstat(filepath.Join(f.Dir(), name))
		assert.ErrorIs(t, err, os.ErrNotExist, name)
	}
	assert.Empty(t, sb.ForkSkipped().Skipped, "a sandbox Fork did not make")
}

// TestForkNeverCopiesHostFileThroughLink: a command links a file only the host's user may read
// (0600, outside the workspace) and, in a loop, swaps a workspace file for such a link; forks
// taken meanwhile hold the link or the workspace's own file, never the host file's content.
func TestForkNeverCopiesHostFileThroughLink(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("HOST SECRET"), 0o600))
	sb := newIsolated(t, local.Config{})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `ln -s "$1" leak && echo mine > f`, "sh", secret}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)

	f, err := fork(t, sb)
	require.NoError(t, err)
	target, err := os.Readlink(filepath.Join(f.Dir(), "leak"))
	require.NoError(t, err, "copied as a link")
	assert.Equal(t, secret, target)

	ctx := context.Background()
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"sh", "-c", adaptertest.SwapToLinkLoop, "sh", secret}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Signal(ctx, "KILL"); _, _ = p.Wait(ctx) })
	for range 30 {
		f, err := fork(t, sb)
		require.NoError(t, err)
		adaptertest.RequireNoFileHolds(t, f.Dir(), "HOST SECRET")
		require.NoError(t, f.Stop(ctx))
	}
	st, err := p.State(ctx)
	require.NoError(t, err)
	assert.True(t, st.Running, "the swapping loop ran through the forks")
}

// TestForkFileTooLarge: a file above Config.ForkMaxFileBytes fails the fork with
// errs.FileTooLarge naming it; at the bound, and with NoLimit, the fork works.
func TestForkFileTooLarge(t *testing.T) {
	t.Parallel()
	for limit, ok := range map[int64]bool{10: false, 11: true, local.NoLimit: true} {
		sb := newIsolated(t, local.Config{ForkMaxFileBytes: limit})
		require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "big"), make([]byte, 11), 0o644))
		_, err := fork(t, sb)
		if ok {
			assert.NoError(t, err, "limit %d", limit)
			continue
		}
		require.ErrorIs(t, err, errs.FileTooLarge, "limit %d", limit)
		var e *errs.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "big", e.Path)
	}
	_, err := local.New(local.Config{ForkMaxFileBytes: -2})
	assert.ErrorIs(t, err, errs.InvalidInput)
}
