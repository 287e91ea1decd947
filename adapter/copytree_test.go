//go:build unix

package adapter_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/errs"
)

// copyTree runs adapter.CopyTree from src into a new directory and returns it, the report and
// the error. The copy runs in a goroutine under a watchdog: a copy that blocks fails the test
// instead of hanging it (the bound is no measurement: a copy of these trees takes milliseconds).
func copyTree(t *testing.T, src string, max int64) (string, adapter.CopyReport, error) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "fork")
	require.NoError(t, os.Mkdir(dst, 0o755))
	sr, err := os.OpenRoot(src)
	require.NoError(t, err)
	t.Cleanup(func() { sr.Close() })
	dr, err := os.OpenRoot(dst)
	require.NoError(t, err)
	t.Cleanup(func() { dr.Close() })
	type result struct {
		rep adapter.CopyReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := adapter.CopyTree(context.Background(), "fork", sr, dr, max)
		done <- result{rep, err}
	}()
	select {
	case r := <-done:
		return dst, r.rep, r.err
	case <-time.After(2 * time.Minute):
		t.Fatal("CopyTree blocked")
		return "", adapter.CopyReport{}, nil
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(p, 0o644))
}

// listenUnix leaves a socket file at p (its listener closed with the test).
func listenUnix(t *testing.T, p string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	require.NoError(t, err)
	l.SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
}

// TestCopyTreeCopiesFilesDirsAndLinks: contents, permission bits (without setuid), directories
// (their permissions plus the owner's rwx), links as links with their targets unchanged, also
// dangling and absolute ones; the source is unchanged.
func TestCopyTreeCopiesFilesDirsAndLinks(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "a/b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a/b/f.txt"), []byte("hello"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(src, "run.sh"), 0o755|os.ModeSetuid))
	require.NoError(t, os.WriteFile(filepath.Join(src, "empty"), nil, 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(src, "ro"), 0o500))
	require.NoError(t, os.Symlink("a/b/f.txt", filepath.Join(src, "rel")))
	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(src, "abs")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(src, "dangling")))

	dst, rep, err := copyTree(t, src, adapter.DefaultCopyMaxFileBytes)
	require.NoError(t, err)
	assert.Empty(t, rep.Skipped)

	data, err := os.ReadFile(filepath.Join(dst, "a/b/f.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	for name, want := range map[string]os.FileMode{"run.sh": 0o755, "empty": 0o600, "a/b/f.txt": 0o644, "ro": os.ModeDir | 0o700, "a": os.ModeDir | 0o755} {
		fi, err := os.Lstat(filepath.Join(dst, name))
		require.NoError(t, err, name)
		assert.Equal(t, want, fi.Mode(), name)
	}
	for name, want := range map[string]string{"rel": "a/b/f.txt", "abs": "/etc/hostname", "dangling": "nowhere"} {
		got, err := os.Readlink(filepath.Join(dst, name))
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
	data, err = os.ReadFile(filepath.Join(src, "a/b/f.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
}

// TestCopyTreeSkipsFIFOsAndSockets: a FIFO (with no writer: opening it for reading would block)
// and a socket are left out and listed, the copy does not block and copies everything else.
func TestCopyTreeSkipsFIFOsAndSockets(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(src, "d"), 0o755))
	mkfifo(t, filepath.Join(src, "d/pipe"))
	// A socket path must fit sun_path (108 bytes): a short directory of its own, linked in.
	sockDir, err := os.MkdirTemp("", "sk")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	listenUnix(t, filepath.Join(sockDir, "s"))
	require.NoError(t, os.Rename(filepath.Join(sockDir, "s"), filepath.Join(src, "sock")))
	require.NoError(t, os.WriteFile(filepath.Join(src, "d/after"), []byte("x"), 0o644))

	dst, rep, err := copyTree(t, src, adapter.DefaultCopyMaxFileBytes)
	require.NoError(t, err)
	assert.ElementsMatch(t, []adapter.Skipped{{Path: "d/pipe", Type: "fifo"}, {Path: "sock", Type: "socket"}}, rep.Skipped)
	for _, name := range []string{"d/pipe", "sock"} {
		_, err := os.Lstat(filepath.Join(dst, name))
		assert.ErrorIs(t, err, os.ErrNotExist, name)
	}
	data, err := os.ReadFile(filepath.Join(dst, "d/after"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))
}

// TestCopyTreeCopiesLinkToHostFileAsLink: a link to a file outside the tree that only root may
// read is copied as the link, never as the file's content.
func TestCopyTreeCopiesLinkToHostFileAsLink(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	src := t.TempDir()
	require.NoError(t, os.Symlink(secret, filepath.Join(src, "leak")))
	require.NoError(t, os.Symlink(filepath.Dir(secret), filepath.Join(src, "leakdir")))

	dst, _, err := copyTree(t, src, adapter.DefaultCopyMaxFileBytes)
	require.NoError(t, err)
	for name, want := range map[string]string{"leak": secret, "leakdir": filepath.Dir(secret)} {
		fi, err := os.Lstat(filepath.Join(dst, name))
		require.NoError(t, err)
		assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), name)
		got, err := os.Readlink(filepath.Join(dst, name))
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

// TestCopyTreeRaceNeverFollowsSwappedLink: while copies run, a goroutine swaps a regular file
// for a link to a host file, a directory for a link to a host directory and another file for a
// FIFO, over and over (by rename, so each name always exists). No copy ever holds the host
// file's content as a file of its own, and no copy blocks on the FIFO. (The workspace's own
// files hold "mine".)
func TestCopyTreeRaceNeverFollowsSwappedLink(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("HOST SECRET"), 0o600))
	src := t.TempDir()
	at := func(name string) string { return filepath.Join(src, name) }
	require.NoError(t, os.WriteFile(at("f"), []byte("mine"), 0o644))
	require.NoError(t, os.WriteFile(at("p"), []byte("mine"), 0o644))
	require.NoError(t, os.Mkdir(at("d"), 0o755))
	require.NoError(t, os.WriteFile(at("d/secret"), []byte("mine"), 0o644))

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			_ = os.Rename(at("f"), at(".f"))
			_ = os.Symlink(secret, at(".flink"))
			_ = os.Rename(at(".flink"), at("f"))
			_ = os.Rename(at("d"), at(".d"))
			_ = os.Symlink(host, at(".dlink"))
			_ = os.Rename(at(".dlink"), at("d"))
			_ = os.Rename(at("p"), at(".p"))
			_ = syscall.Mkfifo(at(".pipe"), 0o644)
			_ = os.Rename(at(".pipe"), at("p"))
			_ = os.Rename(at(".f"), at("f"))
			_ = os.Rename(at(".d"), at("d"))
			_ = os.Rename(at(".p"), at("p"))
		}
	}()
	t.Cleanup(func() { stop.Store(true); wg.Wait() })

	links := 0
	for range 300 {
		dst, _, err := copyTree(t, src, adapter.DefaultCopyMaxFileBytes)
		require.NoError(t, err)
		links += adaptertest.RequireNoFileHolds(t, dst, "HOST SECRET")
		require.NoError(t, os.RemoveAll(dst))
	}
	t.Logf("links copied as links: %d", links)
}

// TestCopyTreeFileTooLarge: a file above the bound fails the copy with errs.FileTooLarge naming
// every such file; no content is copied after the first; at the bound the copy works.
func TestCopyTreeFileTooLarge(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "small"), []byte("1234"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(src, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "d/big"), make([]byte, 11), 0o644))
	mkfifo(t, filepath.Join(src, "pipe"))

	_, _, err := copyTree(t, src, 10)
	require.ErrorIs(t, err, errs.FileTooLarge)
	var e *errs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "d/big", e.Path)
	assert.Equal(t, []string{"d/big"}, e.Details["too_large"])
	assert.EqualValues(t, 10, e.Details["limit"])
	assert.Equal(t, []adapter.Skipped{{Path: "pipe", Type: "fifo"}}, e.Details["skipped"])

	dst, _, err := copyTree(t, src, 11)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dst, "d/big"))
	require.NoError(t, err)
	assert.EqualValues(t, 11, fi.Size())

	_, _, err = copyTree(t, src, -1)
	require.NoError(t, err, "no bound")
}

// TestCopyTreeDepthBound: directories nested deeper than 1024 levels (each level holds two
// descriptors) fail the copy with errs.LimitExceeded instead of running out of descriptors.
func TestCopyTreeDepthBound(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, strings.Repeat("d/", 1030)), 0o755))
	_, _, err := copyTree(t, src, -1)
	require.ErrorIs(t, err, errs.LimitExceeded)
	require.NoError(t, os.RemoveAll(filepath.Join(src, "d", strings.Repeat("d/", 1000))))
	_, _, err = copyTree(t, src, -1)
	require.NoError(t, err, "1001 levels")
}

// TestCopyTreeStopsWithContext: a cancelled context stops the copy with an error that says so.
func TestCopyTreeStopsWithContext(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644))
	sr, err := os.OpenRoot(src)
	require.NoError(t, err)
	defer sr.Close()
	dr, err := os.OpenRoot(t.TempDir())
	require.NoError(t, err)
	defer dr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = adapter.CopyTree(ctx, "fork", sr, dr, -1)
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, errs.Internal)
}
