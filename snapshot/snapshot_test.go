package snapshot_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/sync/dirstore"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/sqlitestore"
)

// Modules of the module cache used as real workspaces: a small one, and one with files over
// the streaming threshold (zip test data of several MB).
const (
	smallModule = "github.com/spf13/cobra@v1.10.2"
	largeModule = "github.com/klauspost/compress@v1.19.2"
)

func modCache(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// realTree copies a module of the module cache into a new temporary directory (files 0644, the
// cache's are read-only) and adds what a module lacks: an executable script, links inside (to
// a file and to a directory), a link outside (which a snapshot skips), empty directories.
func realTree(t testing.TB, mod string) string {
	t.Helper()
	src := filepath.Join(modCache(t), mod)
	dst := t.TempDir()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	}))
	require.NoError(t, os.MkdirAll(filepath.Join(dst, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "bin/run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	require.NoError(t, os.Symlink("../README.md", filepath.Join(dst, "bin/readme")))
	require.NoError(t, os.Symlink("bin", filepath.Join(dst, "bindir")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dst, "outside")))
	require.NoError(t, os.MkdirAll(filepath.Join(dst, "empty/nested"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dst, "empty2"), 0o755))
	return dst
}

func localConfig(root string) local.Config {
	cfg := local.Config{Root: root}
	if !local.KernelIsolation {
		cfg.Isolation = local.IsolationOff
	}
	return cfg
}

func newLocal(t testing.TB, root string) *local.Sandbox {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	sb, err := local.New(localConfig(root))
	require.NoError(t, err)
	t.Cleanup(func() { sb.Stop(context.Background()) })
	return sb
}

func newMemory(t testing.TB) *memory.Sandbox {
	t.Helper()
	sb, err := memory.New(memory.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Stop(context.Background()) })
	return sb
}

func openCatalog(t testing.TB, opts snapshot.Options) *snapshot.Catalog {
	t.Helper()
	c, err := snapshot.Open(t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// tree is what a workspace holds, as the tests compare it: path -> "file <mode> <sha256>",
// "link <target>" or "dir" (empty directories only).
func treeOf(t testing.TB, ctx context.Context, sb adapter.Sandbox) map[string]string {
	t.Helper()
	files, err := sb.(adapter.Lister).ListFiles(ctx, "")
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		if f.IsLink() {
			out[f.Path] = "link " + f.Link
			continue
		}
		data, err := sb.ReadFile(ctx, f.Path)
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		mode := "0644"
		if f.Executable() {
			mode = "0755"
		}
		out[f.Path] = "file " + mode + " " + hex.EncodeToString(sum[:])
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"find", ".", "-mindepth", "1", "-type", "d", "-empty"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	for _, d := range strings.Fields(string(res.Stdout)) {
		out[strings.TrimPrefix(d, "./")] = "dir"
	}
	return out
}

// taken snapshots a real tree of module mod on local as "s" in a new catalog, and returns the
// catalog and the tree a restore must give.
func taken(t testing.TB, mod string) (*snapshot.Catalog, map[string]string) {
	t.Helper()
	ctx := context.Background()
	src := newLocal(t, realTree(t, mod))
	c := openCatalog(t, snapshot.Options{})
	_, err := c.Take(ctx, src, "s")
	require.NoError(t, err)
	return c, withoutOutside(treeOf(t, ctx, src))
}

// withoutOutside is tree minus the link that leads outside the workspace (a snapshot skips it).
func withoutOutside(tree map[string]string) map[string]string {
	out := map[string]string{}
	for p, v := range tree {
		if p != "outside" {
			out[p] = v
		}
	}
	return out
}

func TestTakeRestoreLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newLocal(t, realTree(t, smallModule))
	c := openCatalog(t, snapshot.Options{})
	m, err := c.Take(ctx, src, "first")
	require.NoError(t, err)
	assert.Equal(t, []string{"outside"}, m.Skipped)
	assert.Greater(t, m.Files, 50)
	assert.Equal(t, m.Files, m.Read)
	want := withoutOutside(treeOf(t, ctx, src))
	assert.Equal(t, "dir", want["empty/nested"])
	assert.Equal(t, "link bin", want["bindir"])

	dst := newLocal(t, "")
	require.NoError(t, c.Restore(ctx, "first", dst, snapshot.RestoreOptions{}))
	assert.Equal(t, want, treeOf(t, ctx, dst))

	list, err := c.List(ctx, snapshot.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "first", list[0].Name)
	assert.Equal(t, m.Bytes, list[0].Bytes)

	// A second catalog on the same directory (another process) sees the same snapshot.
	c2, err := snapshot.Open(c.Dir(), snapshot.Options{})
	require.NoError(t, err)
	got, err := c2.Get(ctx, "first")
	require.NoError(t, err)
	assert.Equal(t, m.Entries, got.Entries)

	_, err = c.Take(ctx, src, "first")
	assert.ErrorIs(t, err, errs.Conflict, "a name is taken once")
	_, err = c.Take(ctx, src, "../x")
	assert.ErrorIs(t, err, errs.InvalidInput)
	assert.ErrorIs(t, c.Restore(ctx, "none", dst, snapshot.RestoreOptions{}), errs.NotFound)
}

// Take on one adapter, restore on another, and back: the trees are equal.
func TestCrossAdapter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newLocal(t, realTree(t, largeModule))
	want := withoutOutside(treeOf(t, ctx, src))
	c := openCatalog(t, snapshot.Options{})
	_, err := c.Take(ctx, src, "on-local")
	require.NoError(t, err)

	mem := newMemory(t)
	require.NoError(t, c.Restore(ctx, "on-local", mem, snapshot.RestoreOptions{}))
	assert.Equal(t, want, treeOf(t, ctx, mem))

	// Change the memory sandbox, take it there, restore on local.
	require.NoError(t, mem.WriteFile(ctx, "zstd/new.txt", []byte("made in memory")))
	require.NoError(t, mem.RemoveFile(ctx, "README.md"))
	m, err := c.Take(ctx, mem, "on-memory")
	require.NoError(t, err)
	assert.Equal(t, 1, m.Stored, "only the new file is a new blob")
	want2 := treeOf(t, ctx, mem)
	back := newLocal(t, "")
	require.NoError(t, c.Restore(ctx, "on-memory", back, snapshot.RestoreOptions{}))
	assert.Equal(t, want2, treeOf(t, ctx, back))
}

// Options.Store keeps the blobs in a filesync.Store: a dirstore and an SQLite store.
func TestFileSyncStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ds, err := dirstore.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	ss, err := sqlitestore.Open(filepath.Join(t.TempDir(), "blobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	src := newLocal(t, realTree(t, smallModule))
	want := withoutOutside(treeOf(t, ctx, src))
	for name, st := range map[string]filesync.Store{"dirstore": ds, "sqlite": ss} {
		c := openCatalog(t, snapshot.Options{Store: st})
		_, err := c.Take(ctx, src, "s")
		require.NoError(t, err, name)
		cols, err := st.Collections(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"snapshot-blobs"}, cols, name)
		dst := newMemory(t)
		require.NoError(t, c.Restore(ctx, "s", dst, snapshot.RestoreOptions{}), name)
		assert.Equal(t, want, treeOf(t, ctx, dst), name)
		require.NoError(t, c.Delete(ctx, "s"))
		cols, err = st.Collections(ctx)
		require.NoError(t, err)
		assert.Empty(t, cols, "%s: deletion freed every blob", name)
	}
}

// A second Take reads only what changed (the stat cache) and stores only new content.
func TestIncremental(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := realTree(t, smallModule)
	src := newLocal(t, root)
	c := openCatalog(t, snapshot.Options{})
	m1, err := c.Take(ctx, src, "one")
	require.NoError(t, err)
	before := blobCount(t, c)
	// Age the files past the racy window, as minutes of work would.
	ageTree(t, root)
	m2, err := c.Take(ctx, src, "two")
	require.NoError(t, err)
	assert.Equal(t, m1.Files, m2.Files)
	assert.Equal(t, 0, m2.Stored)
	// The files aged after "one": they are read once more, then cached.
	m3, err := c.Take(ctx, src, "three")
	require.NoError(t, err)
	assert.Equal(t, 0, m3.Read, "nothing changed: nothing read")

	require.NoError(t, src.WriteFile(ctx, "command.go", []byte("package cobra // changed\n")))
	require.NoError(t, src.WriteFile(ctx, "new/file.txt", []byte("new")))
	require.NoError(t, src.WriteFile(ctx, "copy.txt", []byte("package cobra // changed\n"))) // same content twice
	m4, err := c.Take(ctx, src, "four")
	require.NoError(t, err)
	assert.Equal(t, 3, m4.Read)
	assert.Equal(t, before+2, blobCount(t, c), "two new contents, one blob each")

	dst := newMemory(t)
	require.NoError(t, c.Restore(ctx, "four", dst, snapshot.RestoreOptions{}))
	got, err := dst.ReadFile(ctx, "command.go")
	require.NoError(t, err)
	assert.Equal(t, "package cobra // changed\n", string(got))
	dst2 := newMemory(t)
	require.NoError(t, c.Restore(ctx, "one", dst2, snapshot.RestoreOptions{}))
	got, err = dst2.ReadFile(ctx, "command.go")
	require.NoError(t, err)
	assert.NotEqual(t, "package cobra // changed\n", string(got), "an older snapshot keeps its content")

	// Every snapshot deleted: the cache's hashes name freed blobs, so everything is read again.
	require.NoError(t, c.Delete(ctx, "one", "two", "three", "four"))
	require.Zero(t, blobCount(t, c))
	m5, err := c.Take(ctx, src, "five")
	require.NoError(t, err)
	assert.Equal(t, m5.Files, m5.Read)
	require.NoError(t, c.Restore(ctx, "five", newMemory(t), snapshot.RestoreOptions{}))
}

// ageTree sets every file's modification time an hour back.
func ageTree(t testing.TB, root string) {
	t.Helper()
	old := mustStat(t, root).ModTime().Add(-3600e9)
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
}

func mustStat(t testing.TB, p string) fs.FileInfo {
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi
}

func blobCount(t testing.TB, c *snapshot.Catalog) int { return snapshot.BlobCount(c) }

// storeFiles lists the files of a catalog's default store (packs, indexes, anything left).
func storeFiles(t testing.TB, c *snapshot.Catalog) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.Dir(), "blobs"))
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func entryOf(t testing.TB, m snapshot.Manifest, p string) snapshot.Entry {
	for _, e := range m.Entries {
		if e.Path == p {
			return e
		}
	}
	t.Fatalf("no entry %s", p)
	return snapshot.Entry{}
}

func verifyDetails(t testing.TB, err error) map[string]any {
	t.Helper()
	require.ErrorIs(t, err, errs.VerifyFailed)
	var e *errs.Error
	require.True(t, errors.As(err, &e))
	return e.Details
}

// A blob altered, deleted or truncated in the catalog fails the restore, naming the paths.
func TestCorruption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newLocal(t, realTree(t, largeModule))
	c := openCatalog(t, snapshot.Options{})
	m, err := c.Take(ctx, src, "s")
	require.NoError(t, err)
	var bigs []string // streamed files, each in a pack of its own
	for _, e := range m.Entries {
		if e.Type == snapshot.TypeFile && e.Size > 4<<20 {
			bigs = append(bigs, e.Path)
		}
	}
	require.GreaterOrEqual(t, len(bigs), 2)
	// Test-only invariant: these files have contents no other file shares.
	for _, p := range []string{"README.md", bigs[0], bigs[1]} {
		n := 0
		for _, e := range m.Entries {
			if e.Hash == entryOf(t, m, p).Hash {
				n++
			}
		}
		require.Equal(t, 1, n, p)
	}
	// Alter one byte of README.md in its pack.
	pack, off, _ := snapshot.BlobPack(c, entryOf(t, m, "README.md").Hash)
	f, err := os.OpenFile(pack, os.O_RDWR, 0)
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off+10)
	require.NoError(t, err)
	b[0] ^= 1
	_, err = f.WriteAt(b, off+10)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// Truncate one large file's pack, delete the other's.
	pack, off, _ = snapshot.BlobPack(c, entryOf(t, m, bigs[0]).Hash)
	require.Zero(t, off)
	require.NoError(t, os.Truncate(pack, 1000))
	pack, _, _ = snapshot.BlobPack(c, entryOf(t, m, bigs[1]).Hash)
	require.NoError(t, os.Remove(pack))

	for _, dst := range []adapter.Sandbox{newLocal(t, ""), newMemory(t)} {
		err = c.Restore(ctx, "s", dst, snapshot.RestoreOptions{})
		d := verifyDetails(t, err)
		assert.Equal(t, []string{bigs[1]}, d["missing"])
		assert.ElementsMatch(t, []string{"README.md", bigs[0]}, d["altered"])
		assert.ElementsMatch(t, []string{"README.md", bigs[0]}, d["corrupt"])
		assert.Contains(t, err.Error(), bigs[1])
		assert.Contains(t, err.Error(), "README.md")
	}
}

// A workspace changed behind the restore's back (a sandbox that writes wrong) fails the
// verification: the check reads what the sandbox holds, not what was sent.
func TestVerifyReadsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newMemory(t)
	require.NoError(t, src.WriteFile(ctx, "a.txt", []byte("a")))
	require.NoError(t, src.WriteFile(ctx, "b/c.txt", []byte("c")))
	c := openCatalog(t, snapshot.Options{})
	_, err := c.Take(ctx, src, "s")
	require.NoError(t, err)
	dst := &lyingWriter{Sandbox: newMemory(t)}
	err = c.Restore(ctx, "s", dst, snapshot.RestoreOptions{})
	d := verifyDetails(t, err)
	assert.Equal(t, []string{"b/c.txt"}, d["altered"])
	assert.Empty(t, d["corrupt"], "the catalog is fine")
}

// lyingWriter is a real memory sandbox whose bulk writes corrupt b/c.txt and README.md.
type lyingWriter struct{ *memory.Sandbox }

func (l *lyingWriter) WriteFiles(ctx context.Context, files []adapter.File) error {
	for i := range files {
		if files[i].Path == "b/c.txt" || files[i].Path == "README.md" {
			files[i].Data = []byte("X")
		}
	}
	return l.Sandbox.WriteFiles(ctx, files)
}

// Restore refuses a workspace that holds files unless told to replace; replacing removes what the
// snapshot does not list and rewrites the rest.
func TestRestoreIntoNonEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, want := taken(t, smallModule)

	for _, dst := range []adapter.Sandbox{newLocal(t, ""), newMemory(t)} {
		require.NoError(t, dst.WriteFile(ctx, "stray/file.txt", []byte("x")))
		require.NoError(t, dst.WriteFile(ctx, "README.md", []byte("other")))
		require.NoError(t, dst.WriteFile(ctx, "bin/run.sh", []byte("not a script")))
		require.NoError(t, dst.(adapter.ModeWriter).Symlink(ctx, "command.go", "README.md")) // a link where a file was
		require.NoError(t, dst.WriteFile(ctx, "doc/x/y.txt", []byte("x")))
		require.NoError(t, dst.WriteFile(ctx, "cobra.go/inner.txt", []byte("a directory where the snapshot has a file")))
		err := c.Restore(ctx, "s", dst, snapshot.RestoreOptions{})
		require.ErrorIs(t, err, errs.Conflict)
		data, err := dst.ReadFile(ctx, "README.md")
		require.NoError(t, err)
		assert.Equal(t, "other", string(data), "a refused restore touches nothing")

		require.NoError(t, c.Restore(ctx, "s", dst, snapshot.RestoreOptions{Replace: true}))
		assert.Equal(t, want, treeOf(t, ctx, dst))
		_, err = dst.(adapter.Statter).StatFile(ctx, "stray")
		assert.ErrorIs(t, err, errs.NotFound, "a directory the snapshot does not have is removed")
	}
}

// A manifest is a file of the state directory: one forged to hold a link out of the workspace
// is refused before anything is written.
func TestForgedManifestLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newMemory(t)
	require.NoError(t, src.WriteFile(ctx, "a", []byte("a")))
	require.NoError(t, src.Symlink(ctx, "l", "a"))
	c := openCatalog(t, snapshot.Options{})
	_, err := c.Take(ctx, src, "s")
	require.NoError(t, err)
	mf := filepath.Join(c.Dir(), "manifests", "s.json")
	data, err := os.ReadFile(mf)
	require.NoError(t, err)
	forged := strings.Replace(string(data), `"target":"a"`, `"target":"../../etc/passwd"`, 1)
	require.NotEqual(t, string(data), forged)
	require.NoError(t, os.WriteFile(mf, []byte(forged), 0o644))
	dst := newMemory(t)
	err = c.Restore(ctx, "s", dst, snapshot.RestoreOptions{})
	require.ErrorIs(t, err, errs.PathEscape)
	_, err = dst.ReadFile(ctx, "a")
	assert.ErrorIs(t, err, errs.NotFound, "nothing was written")
}

// A Take that fails midway (cancelled, or its store fails) lists nothing, and GC frees what it
// stored.
func TestCrashDuringTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := realTree(t, largeModule)

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		c := openCatalog(t, snapshot.Options{Workers: 1})
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sb := &cancellingReader{Sandbox: newLocal(t, root), after: 1, cancel: cancel}
		_, err := c.Take(cctx, sb, "s")
		require.ErrorIs(t, err, context.Canceled)
		assertNothingListed(t, c)
		assert.Zero(t, blobCount(t, c), "the packs of the cancelled Take were never indexed")
		assert.Empty(t, storeFiles(t, c), "and were removed")
		_, err = c.GC(ctx)
		require.NoError(t, err)
	})
	t.Run("store", func(t *testing.T) {
		t.Parallel()
		ds, err := dirstore.Open(t.TempDir())
		require.NoError(t, err)
		t.Cleanup(func() { ds.Close() })
		st := &failingStore{Store: ds, failAfter: 20}
		c := openCatalog(t, snapshot.Options{Store: st, Workers: 1})
		_, err = c.Take(ctx, newLocal(t, root), "s")
		require.ErrorIs(t, err, errs.Internal)
		assertNothingListed(t, c)
		ents, err := ds.List(ctx, "snapshot-blobs")
		require.NoError(t, err)
		assert.Len(t, ents, 20)
		st.mu.Lock()
		st.failAfter = 1 << 30
		st.mu.Unlock()
		_, err = c.GC(ctx)
		require.NoError(t, err)
		ents, err = ds.List(ctx, "snapshot-blobs")
		require.NoError(t, err)
		assert.Empty(t, ents)
	})
}

// A Take killed after its blobs, before its manifest: nothing listed, GC frees the blobs. Not
// parallel: the hook is the package's.
func TestCrashBeforeManifest(t *testing.T) {
	ctx := context.Background()
	root := realTree(t, smallModule)
	c := openCatalog(t, snapshot.Options{})
	restore := snapshot.SetTestHook(func(p string) error {
		if strings.HasPrefix(p, "rename s.json") {
			return errors.New("killed")
		}
		return nil
	})
	_, err := c.Take(ctx, newLocal(t, root), "s")
	restore()
	require.Error(t, err)
	assertNothingListed(t, c)
	ents, err := os.ReadDir(filepath.Join(c.Dir(), "manifests"))
	require.NoError(t, err)
	assert.Empty(t, ents, "no temporary manifest left")
	assert.Positive(t, blobCount(t, c), "the blobs were committed before the manifest")
	_, err = c.GC(ctx)
	require.NoError(t, err)
	assert.Zero(t, blobCount(t, c))
	assert.Empty(t, storeFiles(t, c))
}

func assertNothingListed(t *testing.T, c *snapshot.Catalog) {
	t.Helper()
	list, err := c.List(context.Background(), snapshot.Filter{})
	require.NoError(t, err)
	assert.Empty(t, list)
	_, err = c.Get(context.Background(), "s")
	assert.ErrorIs(t, err, errs.NotFound)
}

// cancellingReader is a real local sandbox that cancels the Take's context after some bulk reads.
type cancellingReader struct {
	*local.Sandbox
	mu     sync.Mutex
	after  int
	cancel func()
}

func (r *cancellingReader) ReadFiles(ctx context.Context, paths []string, fn func(string, []byte) error) error {
	r.mu.Lock()
	r.after--
	if r.after < 0 {
		r.cancel()
	}
	r.mu.Unlock()
	return r.Sandbox.ReadFiles(ctx, paths, fn)
}

// failingStore is a real store whose Apply fails after failAfter batches.
type failingStore struct {
	*dirstore.Store
	mu        sync.Mutex
	failAfter int
}

func (s *failingStore) Apply(ctx context.Context, changes []filesync.Change) ([]filesync.Conflict, error) {
	s.mu.Lock()
	s.failAfter--
	fail := s.failAfter < 0
	s.mu.Unlock()
	if fail {
		return nil, errs.New(errs.Internal, "apply", "", "disk full")
	}
	return s.Store.Apply(ctx, changes)
}

// A Delete killed after it removed the manifest leaves it unlisted; the next GC frees its blobs.
func TestCrashDuringDelete(t *testing.T) {
	ctx := context.Background()
	c := openCatalog(t, snapshot.Options{})
	src := newMemory(t)
	require.NoError(t, src.WriteFile(ctx, "a", []byte("a")))
	_, err := c.Take(ctx, src, "keep")
	require.NoError(t, err)
	require.NoError(t, src.WriteFile(ctx, "b", []byte("b")))
	_, err = c.Take(ctx, src, "gone")
	require.NoError(t, err)
	require.Equal(t, 2, blobCount(t, c))
	restore := snapshot.SetTestHook(func(p string) error {
		if p == "deleted" {
			return errors.New("killed")
		}
		return nil
	})
	require.Error(t, c.Delete(ctx, "gone"))
	restore()
	list, err := c.List(ctx, snapshot.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "keep", list[0].Name)
	assert.Equal(t, 2, blobCount(t, c), "the blob of b is still there")
	c2, err := snapshot.Open(c.Dir(), snapshot.Options{})
	require.NoError(t, err)
	n, err := c2.GC(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, c2.Restore(ctx, "keep", newMemory(t), snapshot.RestoreOptions{}))
}

// Keep deletes all but the k newest of a prefix or a source; deletion frees only blobs no other
// snapshot refers to.
func TestRetentionAndGC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := openCatalog(t, snapshot.Options{})
	a, b := newMemory(t), newMemory(t)
	require.NoError(t, a.WriteFile(ctx, "shared.txt", []byte("in every snapshot")))
	require.NoError(t, b.WriteFile(ctx, "shared.txt", []byte("in every snapshot")))
	for i := range 5 {
		require.NoError(t, a.WriteFile(ctx, "step.txt", []byte{'a', byte('0' + i)}))
		_, err := c.Take(ctx, a, "a-"+string(rune('0'+i)))
		require.NoError(t, err)
	}
	for i := range 3 {
		require.NoError(t, b.WriteFile(ctx, "step.txt", []byte{'b', byte('0' + i)}))
		_, err := c.Take(ctx, b, "b-"+string(rune('0'+i)))
		require.NoError(t, err)
	}
	assert.Equal(t, 1+5+3, blobCount(t, c))

	deleted, err := c.Keep(ctx, 2, snapshot.Filter{Prefix: "a-"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a-0", "a-1", "a-2"}, deleted)
	assert.Equal(t, 1+2+3, blobCount(t, c))

	deleted, err = c.Keep(ctx, 1, snapshot.Filter{Source: b.ID()})
	require.NoError(t, err)
	assert.Equal(t, []string{"b-0", "b-1"}, deleted)
	list, err := c.List(ctx, snapshot.Filter{})
	require.NoError(t, err)
	var names []string
	for _, in := range list {
		names = append(names, in.Name)
	}
	assert.Equal(t, []string{"a-3", "a-4", "b-2"}, names)
	assert.Equal(t, 1+2+1, blobCount(t, c))

	assert.ErrorIs(t, c.Delete(ctx, "a-3", "nope"), errs.NotFound)
	require.NoError(t, c.Delete(ctx, "a-3", "a-4"))
	dst := newMemory(t)
	require.NoError(t, c.Restore(ctx, "b-2", dst, snapshot.RestoreOptions{}))
	assert.Equal(t, 2, blobCount(t, c))
	require.NoError(t, c.Delete(ctx, "b-2"))
	assert.Zero(t, blobCount(t, c))
	_, err = c.Keep(ctx, -1, snapshot.Filter{})
	assert.ErrorIs(t, err, errs.InvalidInput)
}

// Several processes share a catalog: concurrent takes, restores, and deletes of other snapshots
// never break a snapshot that is listed.
func TestConcurrentCatalogs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	root := realTree(t, smallModule)
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := snapshot.Open(dir, snapshot.Options{})
			if err != nil {
				errc <- err
				return
			}
			src, err := local.New(localConfig(root))
			if err != nil {
				errc <- err
				return
			}
			defer src.Stop(ctx)
			for j := range 3 {
				name := "c" + string(rune('0'+i)) + "-" + string(rune('0'+j))
				if _, err := c.Take(ctx, src, name); err != nil {
					errc <- err
					return
				}
				if _, err := c.Keep(ctx, 1, snapshot.Filter{Prefix: "c" + string(rune('0'+i))}); err != nil {
					errc <- err
					return
				}
				dst, err := memory.New(memory.Config{})
				if err != nil {
					errc <- err
					return
				}
				err = c.Restore(ctx, name, dst, snapshot.RestoreOptions{})
				dst.Stop(ctx)
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	c, err := snapshot.Open(dir, snapshot.Options{})
	require.NoError(t, err)
	list, err := c.List(ctx, snapshot.Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 4)
}

// ForkN makes independent sandboxes from one snapshot.
func TestForkN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, want := taken(t, smallModule)
	sbs, err := c.ForkN(ctx, "s", 4, func(ctx context.Context, i int) (adapter.Sandbox, error) {
		if i%2 == 0 {
			return memory.New(memory.Config{})
		}
		return local.New(localConfig(t.TempDir()))
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, sb := range sbs {
			sb.Stop(ctx)
		}
	})
	require.Len(t, sbs, 4)
	require.NoError(t, sbs[0].WriteFile(ctx, "README.md", []byte("fork 0 was here")))
	require.NoError(t, sbs[1].WriteFile(ctx, "README.md", []byte("fork 1 was here")))
	got := treeOf(t, ctx, sbs[2])
	assert.Equal(t, want, got, "a fork is independent of its siblings")
	assert.Equal(t, want, treeOf(t, ctx, sbs[3]))
	d0, err := sbs[0].ReadFile(ctx, "README.md")
	require.NoError(t, err)
	assert.Equal(t, "fork 0 was here", string(d0))

	// All or nothing: a failing sandbox stops every one made.
	var made []*memory.Sandbox
	var mu sync.Mutex
	_, err = c.ForkN(ctx, "s", 3, func(ctx context.Context, i int) (adapter.Sandbox, error) {
		sb, err := memory.New(memory.Config{})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		made = append(made, sb)
		mu.Unlock()
		if i == 1 {
			return &lyingWriter{Sandbox: sb}, nil
		}
		return sb, nil
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, errs.VerifyFailed)
	for _, sb := range made {
		_, err := sb.ReadFile(ctx, "README.md")
		assert.ErrorIs(t, err, errs.SandboxUnavailable, "stopped")
	}
}

// Deleting a snapshot whose pack is mostly dead rewrites the pack with the live blobs only.
func TestGCRewritesPacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := openCatalog(t, snapshot.Options{})
	sb := newMemory(t)
	big := make([]byte, 100000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	require.NoError(t, sb.WriteFile(ctx, "big", big))
	require.NoError(t, sb.WriteFile(ctx, "small", []byte("small file")))
	_, err := c.Take(ctx, sb, "a")
	require.NoError(t, err)
	require.NoError(t, sb.RemoveFile(ctx, "big"))
	m, err := c.Take(ctx, sb, "b")
	require.NoError(t, err)
	assert.Zero(t, m.Stored, "small is in a's pack already")
	require.Len(t, storeFiles(t, c), 2, "one pack and its index")

	require.NoError(t, c.Delete(ctx, "a"))
	files := storeFiles(t, c)
	require.Len(t, files, 2)
	for _, f := range files {
		if strings.HasSuffix(f, ".pack") {
			assert.Equal(t, int64(len("small file")), mustStat(t, filepath.Join(c.Dir(), "blobs", f)).Size(), "the pack was rewritten")
		}
	}
	dst := newMemory(t)
	require.NoError(t, c.Restore(ctx, "b", dst, snapshot.RestoreOptions{}))
	got, err := dst.ReadFile(ctx, "small")
	require.NoError(t, err)
	assert.Equal(t, "small file", string(got))
	// A second catalog (another process) reads the rewritten pack too.
	c2, err := snapshot.Open(c.Dir(), snapshot.Options{})
	require.NoError(t, err)
	require.NoError(t, c2.Restore(ctx, "b", newMemory(t), snapshot.RestoreOptions{}))
}
