package rootfs_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/rootfs"
)

func TestRootfsIsDeterministicAndComplete(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("busybox-static not installed")
	}
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("ripgrep not installed")
	}
	a, err := rootfs.Archive(rootfs.Options{})
	require.NoError(t, err)
	b, err := rootfs.Archive(rootfs.Options{})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a, b), "same host files, same archive")

	entries := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		entries[h.Name] = h
	}
	for _, name := range []string{"bin/busybox", "bin/sh", "bin/cat", "bin/kill", "bin/setsid", "bin/nc", "bin/wget", "usr/bin/rg", "usr/local/bin/sandboxer-agent", "etc/passwd", "etc/group", "tmp/", "workspace/", "home/sandbox/"} {
		assert.Contains(t, entries, name)
	}
	assert.Equal(t, 1000, entries["workspace/"].Uid)
	assert.Equal(t, 1000, entries["home/sandbox/"].Uid, "HOME, the sandbox user's")
	assert.Equal(t, int64(0o1777), entries["tmp/"].Mode)

	noAgent, err := rootfs.Archive(rootfs.Options{NoAgent: true})
	require.NoError(t, err)
	assert.NotContains(t, string(noAgent), "usr/local/bin/sandboxer-agent")
	_, err = rootfs.Archive(rootfs.Options{Agent: "/usr/bin/rg"})
	assert.ErrorContains(t, err, "dynamically linked", "a dynamically linked agent is refused")

	_, err = rootfs.Archive(rootfs.Options{Busybox: "/nonexistent/busybox"})
	assert.Error(t, err)
	_, err = rootfs.Archive(rootfs.Options{Busybox: "/usr/bin/rg"})
	assert.Error(t, err, "a dynamically linked busybox is refused")
}

func TestMaterializeOncePerContent(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("busybox-static not installed")
	}
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("ripgrep not installed")
	}
	dir := t.TempDir()
	t.Cleanup(func() { // the tree's directories are read-only
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	a, err := rootfs.Materialize(dir, rootfs.Options{}, false)
	require.NoError(t, err)
	assert.True(t, a.Built)
	assert.Equal(t, filepath.Join(dir, a.ContentHash), a.Dir)
	archive, err := rootfs.Archive(rootfs.Options{})
	require.NoError(t, err)
	sum := sha256.Sum256(archive)
	assert.Equal(t, hex.EncodeToString(sum[:]), a.ContentHash, "named by the archive's content hash")

	// The same inputs reuse the tree without assembling it again.
	start := time.Now()
	b, err := rootfs.Materialize(dir, rootfs.Options{}, false)
	require.NoError(t, err)
	assert.False(t, b.Built)
	assert.Equal(t, a.Dir, b.Dir)
	assert.Less(t, time.Since(start), 100*time.Millisecond, "a reused tree costs no build")

	for _, p := range []string{"bin/busybox", "usr/bin/rg", "usr/local/bin/sandboxer-agent", "etc/passwd"} {
		fi, err := os.Stat(filepath.Join(a.Dir, p))
		require.NoError(t, err, p)
		assert.True(t, fi.Mode().IsRegular(), p)
	}
	link, err := os.Readlink(filepath.Join(a.Dir, "bin/sh"))
	require.NoError(t, err)
	assert.Equal(t, "busybox", link)
	for _, d := range []string{".", "bin", "etc", "workspace"} {
		fi, err := os.Stat(filepath.Join(a.Dir, d))
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o555), fi.Mode().Perm(), "%s is read-only", d)
	}
	fi, err := os.Stat(filepath.Join(a.Dir, "tmp"))
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSticky|fs.ModeDir|0o777, fi.Mode(), "runc gives the /tmp tmpfs this mode")

	// Force unpacks nothing new for the same content, and a stale index entry is rebuilt.
	c, err := rootfs.Materialize(dir, rootfs.Options{}, true)
	require.NoError(t, err)
	assert.Equal(t, a.Dir, c.Dir)
	require.NoError(t, rootfs.Remove(a))
	d, err := rootfs.Materialize(dir, rootfs.Options{}, false)
	require.NoError(t, err)
	assert.True(t, d.Built, "a removed tree is made again")

	_, err = rootfs.Materialize(dir, rootfs.Options{NoAgent: true}, false)
	assert.Error(t, err)
}
