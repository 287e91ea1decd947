package sqlitestore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/sqlitestore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMigrateSchema1 opens testdata/v1.db, a database the schema-1 code made (commit 36484a9,
// before kinds existed), and checks that it is migrated in place: every entry a plain file with
// its content, metadata-only entries kept, and the new columns usable.
func TestMigrateSchema1(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile("testdata/v1.db")
	require.NoError(t, err)
	dbPath := filepath.Join(t.TempDir(), "v1.db")
	require.NoError(t, os.WriteFile(dbPath, src, 0o644))
	assert.Equal(t, 1, userVersion(t, dbPath))

	st, err := sqlitestore.Open(dbPath)
	require.NoError(t, err)
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	require.Len(t, l, 3)
	for _, e := range l {
		assert.Equal(t, filesync.KindFile, e.Kind, e.Path)
		assert.False(t, e.Exec, e.Path)
		assert.Equal(t, e.Hash, e.Version(), "a plain file's version is its hash: old bases stay valid")
	}
	got, err := st.Read(ctx, "files", "dir/data.bin")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2, 255}, got)
	m, err := st.Get(ctx, "meta", "nocontent")
	require.NoError(t, err)
	assert.False(t, m.HasContent())

	// A base taken before the migration (the bare hash) still holds; the bit can now be set.
	run, err := st.Get(ctx, "files", "run.sh")
	require.NoError(t, err)
	conf, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "run.sh", Hash: run.Hash, KeepContent: true, Exec: true, Base: run.Hash}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	require.NoError(t, st.Close())
	assert.Equal(t, 2, userVersion(t, dbPath))

	// Opened again: no second migration, the bit kept; a workspace hydrated from it runs the script.
	st, err = sqlitestore.Open(dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	run, err = st.Get(ctx, "files", "run.sh")
	require.NoError(t, err)
	assert.True(t, run.Exec)
	sb, err := local.New(local.Config{Root: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Stop(ctx) })
	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}})
	require.NoError(t, err)
	_, err = s.Hydrate(ctx)
	require.NoError(t, err)
	fi, err := sb.StatFile(ctx, "run.sh")
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode.Perm())
}

// TestNewerSchemaRefused: a database from a later version is not touched.
func TestNewerSchemaRefused(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "v9.db")
	db, err := sql.Open("sqlite", dbPath)
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 9")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = sqlitestore.Open(dbPath)
	assert.ErrorIs(t, err, errs.InvalidInput)
	assert.Equal(t, 9, userVersion(t, dbPath))
}

// TestHostileSizeClaim: an entry whose size column claims 4 TiB is hydrated by its real length,
// never by the claim.
func TestHostileSizeClaim(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlitestore.Open(dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "claims", Content: []byte("small")}})
	require.NoError(t, err)
	db, err := sql.Open("sqlite", dbPath)
	require.NoError(t, err)
	_, err = db.Exec("UPDATE entries SET size = ? WHERE path = 'claims'", int64(4)<<40)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	sb, err := local.New(local.Config{Root: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Stop(ctx) })
	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}})
	require.NoError(t, err)
	rep, err := s.Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Written)
	got, err := sb.ReadFile(ctx, "claims")
	require.NoError(t, err)
	assert.Equal(t, "small", string(got))
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var v int
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&v))
	return v
}
