package dirstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/sync/dirstore"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilesOnDisk: the stored files carry the executable bit for people who read the store, and a
// link is a plain file holding its target text (nothing that reads the store follows it).
func TestFilesOnDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := dirstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Apply(ctx, []filesync.Change{
		{Collection: "files", Path: "bin/run.sh", Content: []byte("#!/bin/sh\n"), Exec: true},
		{Collection: "files", Path: "plain", Content: []byte("x")},
		{Collection: "files", Path: "link", Kind: filesync.KindSymlink, Content: []byte("/etc/passwd")},
	})
	require.NoError(t, err)
	mode := func(p string) os.FileMode {
		fi, err := os.Lstat(filepath.Join(dir, "files", "files", p))
		require.NoError(t, err, p)
		return fi.Mode()
	}
	assert.Equal(t, os.FileMode(0o755), mode("bin/run.sh"))
	assert.Equal(t, os.FileMode(0o644), mode("plain"))
	assert.Equal(t, os.FileMode(0o644), mode("link"), "a regular file, not a link")
	h := filesync.Hash([]byte("#!/bin/sh\n"))
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "bin/run.sh", Hash: h, KeepContent: true, Base: h + "+x"}})
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), mode("bin/run.sh"))
	man, err := os.ReadFile(filepath.Join(dir, "files", "manifest.json"))
	require.NoError(t, err)
	assert.Contains(t, string(man), `"version":2`)
	assert.NotContains(t, string(man), `"kind":"file"`, "the default kind is left out")
	assert.Contains(t, string(man), `"kind":"symlink"`)
}

// TestManifestVersion1: a store written before kinds existed reads as plain files.
func TestManifestVersion1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := dirstore.Open(dir)
	require.NoError(t, err)
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "a", Content: []byte("a")}})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	mp := filepath.Join(dir, "files", "manifest.json")
	h := filesync.Hash([]byte("a"))
	v1 := `{"version":1,"entries":[
{"path":"a","hash":"` + h + `","size":1,"updatedAt":"2026-01-02T03:04:05Z"}
]}
`
	require.NoError(t, os.WriteFile(mp, []byte(v1), 0o644))
	st, err = dirstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	e, err := st.Get(ctx, "files", "a")
	require.NoError(t, err)
	assert.Equal(t, filesync.KindFile, e.Kind)
	assert.False(t, e.Exec)
	assert.Equal(t, h, e.Version())
}

// TestHostileSizes: a manifest claiming 4 TiB, and a stored file that really is 4 TiB (sparse),
// are skipped at hydrate with the reason, never loaded.
func TestHostileSizes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := dirstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Apply(ctx, []filesync.Change{
		{Collection: "files", Path: "claims", Content: []byte("small")},
		{Collection: "files", Path: "sparse", Content: []byte("small")},
		{Collection: "files", Path: "ok", Content: []byte("ok")},
	})
	require.NoError(t, err)
	mp := filepath.Join(dir, "files", "manifest.json")
	man, err := os.ReadFile(mp)
	require.NoError(t, err)
	man = []byte(strings.Replace(string(man), `"size":5,`, `"size":4398046511104,`, 1)) // "claims" sorts first
	require.Contains(t, string(man), "4398046511104")
	require.NoError(t, os.WriteFile(mp, man, 0o644))
	require.NoError(t, os.Truncate(filepath.Join(dir, "files", "files", "sparse"), 4<<40))

	sb, err := local.New(local.Config{Root: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Stop(ctx) })
	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}})
	require.NoError(t, err)
	rep, err := s.Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Written)
	assert.Equal(t, []string{"claims", "sparse"}, rep.Skipped)
	for _, p := range rep.Skipped {
		assert.Contains(t, rep.Reasons[p], "limit", p)
	}
	got, err := sb.ReadFile(ctx, "ok")
	require.NoError(t, err)
	assert.Equal(t, "ok", string(got))
}
