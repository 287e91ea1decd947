package filesync_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodePath: a path survives encoding/json byte for byte through EncodePath, and DecodePath
// accepts only what EncodePath writes.
func TestEncodePath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"a", "a b/ü ñ.txt", "a\ufffd", "a\xff", "a\xfe", "d\xff/x", "\xc3", "\xed\xa0\x80", "<&>\u2028"} {
		b, err := json.Marshal(filesync.EncodePath(p))
		require.NoError(t, err)
		var s string
		require.NoError(t, json.Unmarshal(b, &s))
		got, err := filesync.DecodePath("test", s)
		require.NoError(t, err, "%q", p)
		assert.Equal(t, p, got, "%q round-trips through JSON", p)
	}
	assert.Equal(t, "a/b", filesync.EncodePath("a/b"), "a UTF-8 path is written as itself")
	enc := func(b string) string { return "\x00" + base64.StdEncoding.EncodeToString([]byte(b)) }
	for name, c := range map[string]struct {
		s    string
		code errs.Code
	}{
		"not base64":          {"\x00!!", errs.PathInvalid},
		"UTF-8 spelled twice": {enc("abc"), errs.PathInvalid},
		"empty":               {"\x00", errs.PathInvalid},
		"escapes":             {enc("../\xff"), errs.PathEscape},
		"absolute":            {enc("/etc/\xff"), errs.PathEscape},
		"plain escape":        {"../x", errs.PathEscape},
		"NUL inside":          {enc("a\x00\xff"), errs.PathInvalid},
	} {
		_, err := filesync.DecodePath("test", c.s)
		assert.ErrorIs(t, err, c.code, name)
	}
}

// TestNamesAreBytes: two workspace files whose names differ in one byte that is not UTF-8 are
// flushed as two entries, keep their own bases across a new Sync on the same state file (the
// next CLI call), and hydrate as two files. Both stores, a real workspace.
func TestNamesAreBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, open := range filesynctest.Stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t, t.TempDir())
			t.Cleanup(func() { st.Close() })
			state := filepath.Join(t.TempDir(), "state.json")
			sync := func(ws string) *filesync.Sync {
				s, err := filesync.New(newLocalAt(t, ws), st, filesync.Options{Collections: []string{"files"}, StateFile: state})
				require.NoError(t, err)
				return s
			}
			ws := t.TempDir()
			names := map[string]string{"a\xff": "one", "a\xfe": "two", "d\xff/x": "three", "d\xfe/x": "four"}
			for p, c := range names {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644))
			}
			_, err := sync(ws).Flush(ctx)
			require.NoError(t, err)

			// The next call: a new Sync on the same state file sees its bases by name.
			require.NoError(t, os.WriteFile(filepath.Join(ws, "a\xff"), []byte("one, changed"), 0o644))
			require.NoError(t, os.Remove(filepath.Join(ws, "d\xfe/x")))
			names["a\xff"] = "one, changed"
			delete(names, "d\xfe/x")
			rep, err := sync(ws).Flush(ctx)
			require.NoError(t, err, "no conflict: each name kept its own base")
			assert.Empty(t, rep.Conflicts)

			fresh := t.TempDir()
			_, err = sync(fresh).Hydrate(ctx)
			require.NoError(t, err)
			for p, c := range names {
				b, err := os.ReadFile(filepath.Join(fresh, p))
				require.NoError(t, err, "%q", p)
				assert.Equal(t, c, string(b), "%q", p)
			}
			_, err = os.Lstat(filepath.Join(fresh, "d\xfe/x"))
			assert.True(t, os.IsNotExist(err), "the deleted name stays deleted")
			l, err := st.List(ctx, "files")
			require.NoError(t, err)
			assert.Len(t, l, len(names))
		})
	}
}
