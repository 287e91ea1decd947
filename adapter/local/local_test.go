package local_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newLocal(t *testing.T) adapter.Sandbox {
	sb, err := local.New(runnable(local.Config{Root: t.TempDir()}))
	require.NoError(t, err)
	return sb
}

func outside(t *testing.T, _ adapter.Sandbox) (string, func(string) ([]byte, bool)) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(adaptertest.SecretContent), 0o600))
	return dir, func(name string) ([]byte, bool) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		return data, err == nil
	}
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{New: newLocal, Outside: outside, PrivateHome: true})
}

func TestReadFIFODoesNotHang(t *testing.T) {
	t.Parallel()
	sb, err := local.New(runnable(local.Config{Root: t.TempDir()}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	require.NoError(t, syscall.Mkfifo(filepath.Join(sb.Dir(), "fifo"), 0o600))
	done := make(chan error, 1)
	go func() { _, err := sb.ReadFile(context.Background(), "fifo"); done <- err }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, errs.NotFound)
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO hung")
	}
	assert.Error(t, sb.WriteFile(context.Background(), "fifo", []byte("x")), "a FIFO is not replaced")
}

func TestTemporaryWorkspaceIsRemovedByStop(t *testing.T) {
	t.Parallel()
	sb, err := local.New(runnable(local.Config{}))
	require.NoError(t, err)
	dir := sb.Dir()
	require.DirExists(t, dir)
	require.NoError(t, sb.Stop(context.Background()))
	assert.NoDirExists(t, dir)

	kept := t.TempDir()
	sb, err = local.New(runnable(local.Config{Root: kept}))
	require.NoError(t, err)
	require.NoError(t, sb.Stop(context.Background()))
	assert.DirExists(t, kept, "a workspace the caller gave is kept")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	_, err := local.New(runnable(local.Config{Env: []string{"NOEQUALS"}}))
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = local.New(runnable(local.Config{KillGrace: -1}))
	assert.ErrorIs(t, err, errs.InvalidInput)

	sb, err := local.New(runnable(local.Config{Root: t.TempDir(), Env: []string{"FROM_CONFIG=1"}, Path: "/bin:/usr/bin"}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"env"}})
	require.NoError(t, err)
	assert.Contains(t, string(res.Stdout), "FROM_CONFIG=1\n")
	assert.Contains(t, string(res.Stdout), "PATH=/bin:/usr/bin\n")
	assert.Contains(t, string(res.Stdout), "HOME=")
	assert.NotContains(t, string(res.Stdout), "HOME="+sb.Dir()+"\n", "HOME is the sandbox's own, not the workspace")
}

func TestSymlinkedRootAcceptsBothSpellings(t *testing.T) {
	t.Parallel()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "ws")
	require.NoError(t, os.Symlink(real, link))
	sb, err := local.New(runnable(local.Config{Root: link}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	ctx := context.Background()
	require.NoError(t, sb.WriteFile(ctx, filepath.Join(link, "a.txt"), []byte("a")))
	got, err := sb.ReadFile(ctx, filepath.Join(real, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a", string(got))
}
