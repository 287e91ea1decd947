package memfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample(t *testing.T) *FS {
	t.Helper()
	f := New(0)
	require.NoError(t, f.MkdirAll("/w/d/e", 0o755))
	require.NoError(t, f.WriteFile("/w/a.txt", []byte("aaa"), 0o644))
	require.NoError(t, f.WriteFile("/w/d/b.txt", []byte("bb"), 0o644))
	require.NoError(t, f.WriteFile("/w/d/e/c.bin", []byte{0, 1}, 0o600))
	require.NoError(t, f.Symlink("d/b.txt", "/w/link"))
	require.NoError(t, f.Symlink("d", "/w/dirlink"))
	require.NoError(t, f.MkdirAll("/outside", 0o755))
	require.NoError(t, f.WriteFile("/outside/secret", []byte("s"), 0o644))
	return f
}

func TestFSConformance(t *testing.T) {
	t.Parallel()
	f := sample(t)
	require.NoError(t, fstest.TestFS(f.Sub("/w"), "a.txt", "d/b.txt", "d/e/c.bin", "link"))
}

func TestJailedResolution(t *testing.T) {
	t.Parallel()
	f := sample(t)
	require.NoError(t, f.Symlink("/outside/secret", "/w/abs-out"))
	require.NoError(t, f.Symlink("../outside", "/w/rel-out"))
	require.NoError(t, f.Symlink("/w/d/b.txt", "/w/abs-in"))
	require.NoError(t, f.Symlink("/outside/missing", "/w/dangling-out"))
	require.NoError(t, f.Symlink("loop2", "/w/loop1"))
	require.NoError(t, f.Symlink("loop1", "/w/loop2"))
	for _, p := range []string{"/w/abs-out", "/w/rel-out/secret", "/w/dangling-out", "/w/d/../../outside/secret", "/w/.."} {
		_, err := f.Resolve(p, "/w", true)
		assert.ErrorIs(t, err, ErrEscape, p)
	}
	for p, want := range map[string]string{"/w/abs-in": "/w/d/b.txt", "/w/link": "/w/d/b.txt", "/w/dirlink/e/c.bin": "/w/d/e/c.bin", "/w/new": "/w/new", "/w": "/w"} {
		got, err := f.Resolve(p, "/w", true)
		require.NoError(t, err, p)
		assert.Equal(t, want, got, p)
	}
	_, err := f.Resolve("/w/loop1", "/w", true)
	assert.ErrorIs(t, err, syscall.ELOOP)
	// Without a jail, ".." at the root stays there and links may go anywhere in the tree.
	got, err := f.Resolve("/../../w/rel-out/secret", "/", true)
	require.NoError(t, err)
	assert.Equal(t, "/outside/secret", got)
}

func TestCloneIsIndependent(t *testing.T) {
	t.Parallel()
	f := sample(t)
	fl, err := f.OpenFile("/w/a.txt", os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = fl.Write([]byte("1"))
	require.NoError(t, err)
	c := f.Clone()
	_, err = fl.Write([]byte("2"))
	require.NoError(t, err)
	cf, err := c.OpenFile("/w/a.txt", os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = cf.Write([]byte("X"))
	require.NoError(t, err)
	require.NoError(t, c.Remove("/w/d/b.txt"))
	got, _ := f.ReadFile("/w/a.txt")
	assert.Equal(t, "aaa12", string(got))
	got, _ = c.ReadFile("/w/a.txt")
	assert.Equal(t, "aaa1X", string(got))
	_, err = f.ReadFile("/w/d/b.txt")
	assert.NoError(t, err)
	assert.Equal(t, int64(2), f.Size()-c.Size(), "the clone dropped b.txt (2 bytes)")
}

func TestByteBudget(t *testing.T) {
	t.Parallel()
	f := New(10)
	require.NoError(t, f.WriteFile("/a", []byte("12345"), 0o644))
	err := f.WriteFile("/b", []byte("123456"), 0o644)
	assert.ErrorIs(t, err, ErrNoSpace)
	assert.True(t, errors.Is(err, syscall.ENOSPC))
	require.NoError(t, f.WriteFile("/a", []byte("1234567890"), 0o644), "replacing frees the old bytes")
	require.NoError(t, f.Remove("/a"))
	assert.Zero(t, f.Size())
	fl, err := f.OpenFile("/y", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	n := 0
	for {
		_, err = fl.Write([]byte("y\n"))
		if err != nil {
			break
		}
		n++
	}
	assert.ErrorIs(t, err, ErrNoSpace)
	assert.Equal(t, 5, n)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	f := sample(t)
	_, err := f.ReadFile("/w/missing")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = f.ReadFile("/w/d")
	assert.ErrorIs(t, err, syscall.EISDIR)
	assert.ErrorIs(t, f.WriteFile("/w/a.txt/x", nil, 0o644), syscall.ENOTDIR)
	assert.ErrorIs(t, f.Remove("/w/d"), syscall.ENOTEMPTY)
	assert.ErrorIs(t, f.Mkdir("/w/d", 0o755), fs.ErrExist)
	require.NoError(t, f.Rename("/w/d", "/w/moved"))
	got, err := f.ReadFile("/w/moved/e/c.bin")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1}, got)
	assert.ErrorIs(t, f.Rename("/w/moved", "/w/moved/e/x"), fs.ErrInvalid)
}
