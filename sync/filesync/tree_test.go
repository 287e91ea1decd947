package filesync_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/sqlitestore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFullFlushOnePass covers the full flush over local's one-pass walk (adapter.TreeReader):
// nested directories, binary content, symlinks stored as links (an outside one skipped, never
// followed), the filter, deletions, a walk that
// fails, and changes past the in-memory budget that are read again after the walk.
func TestFullFlushOnePass(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sb, err := local.New(local.Config{Root: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(ctx) })
	_, ok := any(sb).(adapter.TreeReader)
	require.True(t, ok, "local implements adapter.TreeReader")
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })

	files := map[string][]byte{"top": []byte("t"), "empty": {}, "bin": {0, 0xff, 0, '\n', 0x80}}
	for i := range 200 { // more directories than the walk queues at once
		files[filepath.ToSlash(filepath.Join("a", string(rune('a'+i%26)), "d"+string(rune('a'+i/26)), "f"))] = []byte{byte(i), 0}
	}
	for p, data := range files {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, data, 0o644))
	}
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "linkdir")))
	require.NoError(t, os.Symlink("top", filepath.Join(dir, "linkfile")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "skip.tmp"), []byte("x"), 0o644))

	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}, Mode: filesync.ModeFull,
		Filter: func(p string) bool { return filepath.Ext(p) != ".tmp" }})
	require.NoError(t, err)
	rep, err := s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, len(files)+2, rep.Listed) // and the two links
	assert.Equal(t, len(files), rep.Hashed)
	assert.Len(t, rep.Added, len(files)+1)
	assert.Equal(t, []string{"linkdir"}, rep.Skipped)
	assert.Contains(t, rep.Reasons["linkdir"], "outside")
	for p, data := range files {
		got, err := st.Read(ctx, "files", p)
		require.NoError(t, err, p)
		assert.Equal(t, data, got, p)
	}
	e, err := st.Get(ctx, "files", "linkfile")
	require.NoError(t, err)
	assert.Equal(t, filesync.KindSymlink, e.Kind)
	got, err := st.Read(ctx, "files", "linkfile")
	require.NoError(t, err)
	assert.Equal(t, "top", string(got))
	for _, p := range []string{"linkdir/secret", "linkdir", "skip.tmp"} {
		_, err := st.Get(ctx, "files", p)
		assert.ErrorIs(t, err, errs.NotFound, p)
	}

	// A cancelled walk aborts: nothing written, nothing deleted.
	require.NoError(t, os.Remove(filepath.Join(dir, "top")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin"), []byte("changed"), 0o644))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Flush(cctx)
	assert.ErrorIs(t, err, context.Canceled)
	got, err = st.Read(ctx, "files", "top")
	require.NoError(t, err)
	assert.Equal(t, []byte("t"), got)
	got, err = st.Read(ctx, "files", "bin")
	require.NoError(t, err)
	assert.Equal(t, files["bin"], got)

	// A walk that completes deletes and updates.
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"top"}, rep.Deleted)
	assert.Equal(t, []string{"bin"}, rep.Updated)

	// Past the in-memory budget, changed files are read again after the walk and still land.
	defer filesync.SetApplyBudget(1)()
	changed := 0
	for p := range files {
		if p == "top" || p == "bin" {
			continue
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(p+" v2"), 0o644))
		changed++
	}
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Len(t, rep.Updated, changed)
	assert.Equal(t, len(files)-1, rep.Hashed, "each file counted once")
	for p := range files {
		if p == "top" || p == "bin" {
			continue
		}
		got, err := st.Read(ctx, "files", p)
		require.NoError(t, err, p)
		assert.Equal(t, []byte(p+" v2"), got, p)
	}
}
