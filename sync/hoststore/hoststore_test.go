package hoststore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/hoststore"
)

const coll = "workspace"

// open returns the store of a fresh directory (inside a temporary base, with "outside" beside it).
func open(t *testing.T) (*hoststore.Store, string, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	dir, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Mkdir(outside, 0o755))
	s, err := hoststore.Open(dir, coll)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, dir, outside
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

// Scan lists files and links without following them, and a file over the read limit unread.
func TestScan(t *testing.T) {
	t.Parallel()
	s, dir, outside := open(t)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "f"), []byte("hello"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 100), 0o644))
	require.NoError(t, os.Symlink("../outside/secret", filepath.Join(dir, "out")))
	require.NoError(t, os.Symlink("../outside", filepath.Join(dir, "outdir")))
	got := map[string]string{}
	ctx := adapter.WithReadLimit(context.Background(), 10)
	require.NoError(t, s.Scan(ctx, coll, func(e filesync.Entry, data []byte) error {
		got[e.Path] = e.Kind + ":" + string(data)
		if e.Path == "d/f" {
			assert.True(t, e.Exec)
			assert.Equal(t, filesync.Hash([]byte("hello")), e.Hash)
		}
		return nil
	}))
	assert.Equal(t, map[string]string{"big": "file:", "d/f": "file:hello", "out": "symlink:../outside/secret", "outdir": "symlink:../outside"}, got)
	_, err := s.Read(ctx, coll, "big")
	assert.ErrorIs(t, err, errs.FileTooLarge)
	_, err = s.Get(ctx, coll, "outdir/secret")
	assert.Error(t, err, "never through a link out")
}

// Apply writes, replaces and deletes against the file as it is now: a change whose base no longer
// holds is a conflict and nothing is written; a replaced file keeps its permissions; a directory
// emptied by a delete goes; nothing else is left in the directory.
func TestApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, dir, _ := open(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "b", "gone"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "private"), []byte("v1"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host"), []byte("changed on the host"), 0o644))

	conflicts, err := s.Apply(ctx, []filesync.Change{
		{Collection: coll, Path: "a/b/gone", Delete: true, Base: filesync.Hash([]byte("x"))},
		{Collection: coll, Path: "private", Content: []byte("v2"), Base: filesync.Hash([]byte("v1"))},
		{Collection: coll, Path: "host", Content: []byte("sandbox"), Base: filesync.Hash([]byte("the base"))},
		{Collection: coll, Path: "new/run.sh", Content: []byte("#!/bin/sh\n"), Exec: true, Base: filesync.Absent},
		{Collection: coll, Path: "link", Kind: filesync.KindSymlink, Content: []byte("new/run.sh"), Base: filesync.Absent},
	})
	require.NoError(t, err)
	require.Len(t, conflicts, 1)
	assert.Equal(t, "host", conflicts[0].Path)
	assert.Equal(t, filesync.Hash([]byte("changed on the host")), conflicts[0].Theirs)
	b, err := os.ReadFile(filepath.Join(dir, "host"))
	require.NoError(t, err)
	assert.Equal(t, "changed on the host", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "private"))
	require.NoError(t, err)
	assert.Equal(t, "v2", string(b))
	fi, err := os.Stat(filepath.Join(dir, "private"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, "new", "run.sh"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode().Perm()&0o100)
	target, err := os.Readlink(filepath.Join(dir, "link"))
	require.NoError(t, err)
	assert.Equal(t, "new/run.sh", target)
	assert.ElementsMatch(t, []string{"host", "link", "new", "new/run.sh", "private"}, names(t, dir))
}

// Hostile changes: a link leading out is never made, and a path through a link out (planted in
// the directory) is never written through; both come back as conflicts and the other changes of
// the batch apply.
func TestApplyStaysInside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, dir, outside := open(t)
	require.NoError(t, os.Symlink("../outside", filepath.Join(dir, "out")))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, "etc")))
	conflicts, err := s.Apply(ctx, []filesync.Change{
		{Collection: coll, Path: "pw", Kind: filesync.KindSymlink, Content: []byte("/etc/passwd"), Base: filesync.Absent},
		{Collection: coll, Path: "up", Kind: filesync.KindSymlink, Content: []byte("../x"), Base: filesync.Absent},
		{Collection: coll, Path: "out/pwned", Content: []byte("x"), Base: filesync.Absent},
		{Collection: coll, Path: "etc/passwd", Delete: true, Base: filesync.Any},
		{Collection: coll, Path: "etc/sandboxer-test", Content: []byte("x"), Base: filesync.Any},
		{Collection: coll, Path: "ok", Content: []byte("fine"), Base: filesync.Absent},
	})
	require.NoError(t, err)
	var paths []string
	for _, c := range conflicts {
		paths = append(paths, c.Path)
	}
	assert.ElementsMatch(t, []string{"pw", "up", "out/pwned", "etc/passwd", "etc/sandboxer-test"}, paths)
	assert.NoFileExists(t, filepath.Join(outside, "pwned"))
	assert.FileExists(t, "/etc/passwd")
	assert.NoFileExists(t, "/etc/sandboxer-test")
	assert.ElementsMatch(t, []string{"etc", "ok", "out"}, names(t, dir))
}
