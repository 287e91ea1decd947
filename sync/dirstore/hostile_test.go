package dirstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/dirstore"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hostile tests play a sandbox that can write the store (a store inside its workspace): it
// forges the store's own files and plants links and FIFOs in it, then the host uses the store.
// Each test watches a directory next to the store: nothing there may change.

// outsideDir makes base/outside holding a victim file and a victim directory.
func outsideDir(t *testing.T, base string) string {
	t.Helper()
	out := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(out, "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "victim"), []byte("keep"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(out, "src"), []byte("host secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(out, "dir", "f"), []byte("keep too"), 0o600))
	return out
}

// snapshot records every name below dir with its type, mode and content (links are not followed).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[p] = v
		return nil
	}))
	return out
}

// requireNamesFile asserts that err carries a code and names the store file it came from.
func requireNamesFile(t *testing.T, err error, code errs.Code, file string) {
	t.Helper()
	require.Error(t, err)
	t.Log(err)
	assert.ErrorIs(t, err, code)
	for e := err; e != nil; e = errors.Unwrap(e) {
		if se, ok := e.(*errs.Error); ok && se.Path == file {
			return
		}
	}
	t.Errorf("the error does not name %s: %v", file, err)
}

// seeded opens a store in base/store holding files/a and files/d/x, and closes it.
func seeded(t *testing.T, base string) string {
	t.Helper()
	dir := filepath.Join(base, "store")
	st, err := dirstore.Open(dir)
	require.NoError(t, err)
	_, err = st.Apply(context.Background(), []filesync.Change{
		{Collection: "files", Path: "a", Content: []byte("a")},
		{Collection: "files", Path: "d/x", Content: []byte("x")},
	})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	return dir
}

// TestForgedJournal: a journal naming paths outside the store (through "..", an absolute path,
// a collection that is a path, a staged name that is a path, a link planted in the store) makes
// the next operation fail with an error naming the journal; nothing outside is deleted, written,
// moved or chmodded.
func TestForgedJournal(t *testing.T) {
	t.Parallel()
	// One forged operation each; OUT stands for the outside directory's absolute path.
	cases := map[string]map[string]any{
		"delete dotdot":      {"collection": "files", "path": "../../../outside/victim", "delete": true},
		"delete absolute":    {"collection": "files", "path": "OUT/victim", "delete": true},
		"metadata dotdot":    {"collection": "files", "path": "../../../outside/victim"},
		"chmod dotdot":       {"collection": "files", "path": "../../../outside/victim", "keep": true, "exec": true},
		"staged dotdot":      {"collection": "files", "path": "stolen", "staged": "../../outside/src"},
		"staged absolute":    {"collection": "files", "path": "stolen", "staged": "OUT/src"},
		"put dotdot":         {"collection": "files", "path": "../../../outside/victim", "staged": "0"},
		"collection dotdot":  {"collection": "../outside", "path": "victim", "staged": "0"},
		"collection abs":     {"collection": "OUT", "path": "victim", "delete": true},
		"put through a link": {"collection": "files", "path": "lnk/victim", "staged": "0"},
		"delete via link":    {"collection": "files", "path": "lnk/victim", "delete": true},
		"chmod via link":     {"collection": "files", "path": "lnk/victim", "keep": true, "exec": true},
		"chmod a link":       {"collection": "files", "path": "flink", "keep": true, "exec": true},
		"bad kind":           {"collection": "files", "path": "a", "staged": "0", "kind": "fifo"},
	}
	for name, forged := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			out := outsideDir(t, base)
			dir := seeded(t, base)
			require.NoError(t, os.Symlink(out, filepath.Join(dir, "files", "files", "lnk")))
			require.NoError(t, os.Symlink(filepath.Join(out, "victim"), filepath.Join(dir, "files", "files", "flink")))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, ".staging"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".staging", "0"), []byte("forged"), 0o644))
			j, err := json.Marshal(map[string]any{"version": 1, "ops": []any{forged}})
			require.NoError(t, err)
			j = []byte(strings.ReplaceAll(string(j), "OUT", out))
			jp := filepath.Join(dir, ".journal")
			require.NoError(t, os.WriteFile(jp, j, 0o644))
			before := snapshot(t, out)

			_, err = dirstore.Open(dir)
			requireNamesFile(t, err, errs.Internal, jp)
			assert.Equal(t, before, snapshot(t, out), "nothing outside the store changed")
			_, err = os.Stat(jp)
			assert.NoError(t, err, "the forged journal stays for a person to read")
		})
	}
}

// TestHostileStoreFiles: the store's own files replaced by links out of the store, a FIFO, or
// garbage: the operation fails with an error naming the file (or ignores it), never follows the
// link, never hangs, and nothing outside changes.
func TestHostileStoreFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	apply := func(st *dirstore.Store) error {
		_, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "a", Content: []byte("new")}, {Collection: "files", Path: "n", Content: []byte("n")}})
		return err
	}
	cases := []struct {
		name string
		// plant returns the store file the error names, "" when the link is simply replaced
		// (a temporary file the store writes anew).
		plant func(t *testing.T, dir, out string) string
		use   func(st *dirstore.Store) error
	}{
		{"journal tmp links out", func(t *testing.T, dir, out string) string {
			link(t, filepath.Join(out, "victim"), dir, ".journal.tmp")
			return ""
		}, apply},
		{"manifest tmp links out", func(t *testing.T, dir, out string) string {
			link(t, filepath.Join(out, "victim"), dir, "files/manifest.json.tmp")
			return ""
		}, apply},
		{"staged file links out", func(t *testing.T, dir, out string) string {
			require.NoError(t, os.Mkdir(filepath.Join(dir, ".staging"), 0o755))
			link(t, filepath.Join(out, "victim"), dir, ".staging/0")
			return ""
		}, apply},
		{"manifest links out", func(t *testing.T, dir, out string) string {
			return link(t, filepath.Join(out, "victim"), dir, "files/manifest.json")
		}, func(st *dirstore.Store) error { _, err := st.List(ctx, "files"); return err }},
		{"collection links out", func(t *testing.T, dir, out string) string {
			return link(t, out, dir, "other")
		}, func(st *dirstore.Store) error {
			_, err := st.Apply(ctx, []filesync.Change{{Collection: "other", Path: "victim", Content: []byte("new")}})
			return err
		}},
		{"files dir links out", func(t *testing.T, dir, out string) string {
			return link(t, out, dir, "files/files")
		}, apply},
		{"entry dir links out", func(t *testing.T, dir, out string) string {
			return link(t, filepath.Join(out, "dir"), dir, "files/files/d")
		}, func(st *dirstore.Store) error {
			_, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "d/f", Content: []byte("new")}})
			return err
		}},
		{"entry links out, read", func(t *testing.T, dir, out string) string {
			return link(t, filepath.Join(out, "src"), dir, "files/files/a")
		}, func(st *dirstore.Store) error { _, err := st.Read(ctx, "files", "a"); return err }},
		{"entry links inside the store, read", func(t *testing.T, dir, out string) string {
			return link(t, "d/x", dir, "files/files/a")
		}, func(st *dirstore.Store) error { _, err := st.Read(ctx, "files", "a"); return err }},
		{"entry links out, chmod", func(t *testing.T, dir, out string) string {
			return link(t, filepath.Join(out, "victim"), dir, "files/files/a")
		}, func(st *dirstore.Store) error {
			_, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "a", Hash: filesync.Hash([]byte("a")), KeepContent: true, Exec: true}})
			return err
		}},
		{"entry is a FIFO", func(t *testing.T, dir, out string) string {
			p := filepath.Join(dir, "files", "files", "a")
			require.NoError(t, os.Remove(p))
			require.NoError(t, syscall.Mkfifo(p, 0o644))
			return p
		}, func(st *dirstore.Store) error { _, err := st.Read(ctx, "files", "a"); return err }},
		{"manifest is a FIFO", func(t *testing.T, dir, out string) string {
			p := filepath.Join(dir, "files", "manifest.json")
			require.NoError(t, os.Remove(p))
			require.NoError(t, syscall.Mkfifo(p, 0o644))
			return p
		}, func(st *dirstore.Store) error { _, err := st.List(ctx, "files"); return err }},
		{"manifest names a path out", func(t *testing.T, dir, out string) string {
			p := filepath.Join(dir, "files", "manifest.json")
			require.NoError(t, os.WriteFile(p, []byte(`{"version":2,"entries":[{"path":"../../../outside/src","hash":"`+filesync.Hash([]byte("host secret"))+`","size":11}]}`), 0o644))
			return p
		}, func(st *dirstore.Store) error { _, err := st.List(ctx, "files"); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			out := outsideDir(t, base)
			dir := seeded(t, base)
			st, err := dirstore.Open(dir)
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			before := snapshot(t, out)
			file := c.plant(t, dir, out)
			err = c.use(st)
			if file == "" {
				require.NoError(t, err)
			} else {
				requireNamesFile(t, err, errs.Internal, file)
			}
			assert.Equal(t, before, snapshot(t, out), "nothing outside the store changed")
			// The store is not broken: other entries still work.
			_, err = st.Apply(ctx, []filesync.Change{{Collection: "more", Path: "m", Content: []byte("m")}})
			require.NoError(t, err)
			got, err := st.Read(ctx, "more", "m")
			require.NoError(t, err)
			assert.Equal(t, "m", string(got))
			assert.Equal(t, before, snapshot(t, out))
		})
	}
}

// link plants a symbolic link to target at the store-relative path rel (in place of what is
// there) and returns its path.
func link(t *testing.T, target, dir, rel string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.RemoveAll(p))
	require.NoError(t, os.Symlink(target, p))
	return p
}

// TestHostileLockAndMarker: a FIFO as the lock and a link as the marker or the lock fail Open
// with the file named, without hanging or creating anything outside.
func TestHostileLockAndMarker(t *testing.T) {
	t.Parallel()
	for _, name := range []string{".lock", ".format"} {
		for _, kind := range []string{"link", "fifo"} {
			t.Run(name+" "+kind, func(t *testing.T) {
				t.Parallel()
				base := t.TempDir()
				out := outsideDir(t, base)
				dir := seeded(t, base)
				p := filepath.Join(dir, name)
				require.NoError(t, os.Remove(p))
				if kind == "link" {
					require.NoError(t, os.Symlink(filepath.Join(out, "new"), p))
				} else {
					require.NoError(t, syscall.Mkfifo(p, 0o644))
				}
				before := snapshot(t, out)
				_, err := dirstore.Open(dir)
				requireNamesFile(t, err, errs.Internal, p)
				assert.Equal(t, before, snapshot(t, out))
			})
		}
	}
}

// TestFlushThroughPlantedLink: the sandbox plants a link in the store (inside its workspace)
// pointing out of it; the next flush does not write through it, and the rest of the flush lands.
func TestFlushThroughPlantedLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	out := outsideDir(t, base)
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	dir := filepath.Join(ws, ".store") // the store inside the workspace: the sandbox can write it
	st, err := dirstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "d/x", Content: []byte("x")}})
	require.NoError(t, err)
	sb, err := local.New(local.Config{Root: ws})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Stop(ctx) })
	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"},
		Filter: func(p string) bool { return !strings.HasPrefix(p, ".store/") }})
	require.NoError(t, err)
	_, err = s.Hydrate(ctx)
	require.NoError(t, err)
	before := snapshot(t, out)

	// From inside: the store's d/ becomes a link to the outside directory, and new files appear.
	planted := filepath.Join(dir, "files", "files", "d")
	require.NoError(t, os.RemoveAll(planted))
	require.NoError(t, os.Symlink(filepath.Join(out, "dir"), planted))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "d", "f"), []byte("through the link"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "d", "new"), []byte("through the link"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "top"), []byte("fine"), 0o644))
	_, err = s.Flush(ctx)
	requireNamesFile(t, err, errs.Internal, planted)
	assert.Equal(t, before, snapshot(t, out), "the flush did not write through the link")
	_, err = os.Stat(filepath.Join(out, "dir", "new"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestUnrepresentableName: a name no file system can hold (a component over 255 bytes) is
// refused at the Apply that brings it with TOOL_PATH_INVALID, and the store stays usable.
func TestUnrepresentableName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := dirstore.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, p := range []string{strings.Repeat("x", 256), "d/" + strings.Repeat("y", 300) + "/z"} {
		_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: p, Content: []byte("x")}, {Collection: "files", Path: "ok", Content: []byte("ok")}})
		assert.ErrorIs(t, err, errs.PathInvalid, "%d bytes", len(p))
	}
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: strings.Repeat("x", 255), Content: []byte("x")}})
	require.NoError(t, err, "255 bytes is a valid name")
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	require.Len(t, l, 1)
}
