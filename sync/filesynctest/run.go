package filesynctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/dirstore"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/sqlitestore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Harness tells Run how to make sandboxes of one adapter.
type Harness struct {
	// New returns a fresh, started sandbox with an empty workspace; Run stops it when the test
	// ends. Commands it runs need sh with echo, rm and redirections.
	New func(t *testing.T) adapter.Sandbox
}

// Stores are the stores Run runs every case over, by name.
var Stores = map[string]OpenStore{
	"dirstore": func(t testing.TB, dir string) filesync.Store {
		st, err := dirstore.Open(dir)
		require.NoError(t, err)
		return st
	},
	"sqlitestore": func(t testing.TB, dir string) filesync.Store {
		st, err := sqlitestore.Open(filepath.Join(dir, "store.db"))
		require.NoError(t, err)
		return st
	},
}

// Run runs the FileSync suite over the adapter h describes, once per store.
func Run(t *testing.T, h Harness) {
	require.NotNil(t, h.New, "Harness.New is required")
	for _, name := range []string{"dirstore", "sqlitestore"} {
		open := Stores[name]
		t.Run(name, func(t *testing.T) {
			e := &env{h: h, open: open}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.fn(t, e)
				})
			}
		})
	}
}

type env struct {
	h    Harness
	open OpenStore
}

var cases = []struct {
	name string
	fn   func(*testing.T, *env)
}{
	{"HydrateWritesEntries", testHydrate},
	{"NullContentSkipped", testNullContent},
	{"NewChangedDeleted", testNewChangedDeleted},
	{"Filter", testFilter},
	{"UnchangedUntouched", testUnchanged},
	{"FullMode", testFullMode},
	{"Ownership", testOwnership},
	{"BinaryRoundTrip", testBinaryRoundTrip},
	{"FailedWalkDeletesNothing", testFailedWalk},
	{"NeverHydratedNeverDeleted", testNeverHydrated},
	{"Conflicts", testConflicts},
	{"ExecHooks", testExecHooks},
	{"WriteFileFlushes", testWriteFile},
	{"StateFileResume", testStateFile},
	{"ConcurrentFlushes", testConcurrentFlushes},
	{"HostilePaths", testHostilePaths},
	{"ExecutableBit", testExecutable},
	{"Symlinks", testSymlinks},
	{"HostileStoreLinks", testHostileLinks},
	{"ModeConflicts", testModeConflicts},
	{"HydrateReplaces", testReplacesWhatIsThere},
	{"SizeLimit", testSizeLimit},
}

var ctx = context.Background()

func (e *env) sandbox(t *testing.T) adapter.Sandbox {
	sb := e.h.New(t)
	t.Cleanup(func() { sb.Stop(context.Background()) })
	return sb
}

func (e *env) store(t *testing.T) filesync.Store {
	st := e.open(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	return st
}

func newSync(t *testing.T, sb adapter.Sandbox, st filesync.Store, opts filesync.Options) *filesync.Sync {
	if opts.Collections == nil {
		opts.Collections = []string{"files", "artifacts"}
	}
	s, err := filesync.New(sb, st, opts)
	require.NoError(t, err)
	return s
}

func seed(t *testing.T, st filesync.Store, coll string, files map[string]string) {
	var ch []filesync.Change
	for p, c := range files {
		ch = append(ch, filesync.Change{Collection: coll, Path: p, Content: []byte(c)})
	}
	conf, err := st.Apply(ctx, ch)
	require.NoError(t, err)
	require.Empty(t, conf)
}

func read(t *testing.T, st filesync.Store, coll, p string) string {
	t.Helper()
	b, err := st.Read(ctx, coll, p)
	require.NoError(t, err, "%s/%s", coll, p)
	return string(b)
}

func absent(t *testing.T, st filesync.Store, coll, p string) {
	t.Helper()
	_, err := st.Get(ctx, coll, p)
	assert.ErrorIs(t, err, errs.NotFound, "%s/%s should not be in the store", coll, p)
}

func remove(t *testing.T, sb adapter.Sandbox, p string) {
	t.Helper()
	if r, ok := sb.(adapter.Remover); ok {
		require.NoError(t, r.RemoveFile(ctx, p))
		return
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"rm", "-f", "--", p}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
}

func write(t *testing.T, sb adapter.Sandbox, p, content string) {
	t.Helper()
	require.NoError(t, sb.WriteFile(ctx, p, []byte(content)))
}

func sbRead(t *testing.T, sb adapter.Sandbox, p string) string {
	t.Helper()
	b, err := sb.ReadFile(ctx, p)
	require.NoError(t, err, p)
	return string(b)
}

func updatedAt(t *testing.T, st filesync.Store, coll string) map[string]time.Time {
	l, err := st.List(ctx, coll)
	require.NoError(t, err)
	out := map[string]time.Time{}
	for _, e := range l {
		out[e.Path] = e.UpdatedAt
	}
	return out
}

func testHydrate(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"a.txt": "alpha\n", "dir/sub/b.txt": "beta", "empty": ""})
	seed(t, st, "artifacts", map[string]string{"out/r.txt": "report"})
	s := newSync(t, sb, st, filesync.Options{})
	rep, err := s.Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Written)
	assert.Equal(t, "alpha\n", sbRead(t, sb, "a.txt"))
	assert.Equal(t, "beta", sbRead(t, sb, "dir/sub/b.txt"))
	assert.Equal(t, "", sbRead(t, sb, "empty"))
	assert.Equal(t, "report", sbRead(t, sb, "out/r.txt"))
	coll, hash, ok := s.Base("out/r.txt")
	assert.True(t, ok)
	assert.Equal(t, "artifacts", coll)
	assert.Equal(t, filesync.Hash([]byte("report")), hash)
	// Nothing changed: the first flush writes nothing.
	before := updatedAt(t, st, "files")
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Added)
	assert.Empty(t, rep.Updated)
	assert.Empty(t, rep.Deleted)
	assert.Equal(t, before, updatedAt(t, st, "files"))
}

func testNullContent(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	_, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "placeholder.txt", NoContent: true},
		{Collection: "files", Path: "real.txt", Content: []byte("real")}})
	require.NoError(t, err)
	s := newSync(t, sb, st, filesync.Options{})
	rep, err := s.Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Written)
	assert.Equal(t, []string{"placeholder.txt"}, rep.Skipped)
	_, err = sb.ReadFile(ctx, "placeholder.txt")
	assert.ErrorIs(t, err, errs.NotFound, "an entry without content is not written")
	_, err = s.Flush(ctx)
	require.NoError(t, err)
	en, err := st.Get(ctx, "files", "placeholder.txt")
	require.NoError(t, err, "never hydrated, so never deleted")
	assert.False(t, en.HasContent())
	// The sandbox may fill it in: it is not a conflict, there was no content to clobber.
	write(t, sb, "placeholder.txt", "filled")
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"placeholder.txt"}, rep.Added)
	assert.Equal(t, "filled", read(t, st, "files", "placeholder.txt"))
}

func testNewChangedDeleted(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"a": "one", "b": "two", "c": "three", "d/e/f": "deep"})
	s := newSync(t, sb, st, filesync.Options{})
	_, err := s.Hydrate(ctx)
	require.NoError(t, err)
	cBefore, err := st.Get(ctx, "files", "c")
	require.NoError(t, err)
	write(t, sb, "new.txt", "fresh")
	write(t, sb, "a", "ONE!")
	remove(t, sb, "b")
	remove(t, sb, "d/e/f")
	rep, err := s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"new.txt"}, rep.Added)
	assert.Equal(t, []string{"a"}, rep.Updated)
	assert.Equal(t, []string{"b", "d/e/f"}, rep.Deleted)
	assert.Empty(t, rep.Conflicts)
	assert.Equal(t, "fresh", read(t, st, "files", "new.txt"))
	assert.Equal(t, "ONE!", read(t, st, "files", "a"))
	absent(t, st, "files", "b")
	absent(t, st, "files", "d/e/f")
	cAfter, err := st.Get(ctx, "files", "c")
	require.NoError(t, err)
	assert.Equal(t, cBefore, cAfter, "an unchanged file is untouched")
	// A second flush has nothing to do.
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Added)
	assert.Empty(t, rep.Updated)
	assert.Empty(t, rep.Deleted)
}

func testFilter(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"node_modules/x/index.js": "dep", "src/main.go": "package main"})
	s := newSync(t, sb, st, filesync.Options{Filter: func(p string) bool {
		return !strings.HasPrefix(p, "node_modules/") && !strings.Contains(p, "/node_modules/")
	}})
	rep, err := s.Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Written, "hydrate writes every entry, filtered or not")
	write(t, sb, "node_modules/y/index.js", "new dep")
	write(t, sb, "src/node_modules/z", "nested")
	remove(t, sb, "node_modules/x/index.js")
	write(t, sb, "src/util.go", "package main // util")
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"src/util.go"}, rep.Added)
	assert.Empty(t, rep.Deleted)
	assert.Equal(t, 2, rep.Listed, "filtered paths are not listed")
	absent(t, st, "files", "node_modules/y/index.js")
	absent(t, st, "files", "src/node_modules/z")
	assert.Equal(t, "dep", read(t, st, "files", "node_modules/x/index.js"), "a filtered path is never deleted")
}

func testUnchanged(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	files := map[string]string{}
	for i := range 20 {
		files[string(rune('a'+i))+"/f.txt"] = strings.Repeat("x", i)
	}
	seed(t, st, "files", files)
	s := newSync(t, sb, st, filesync.Options{RacyWindow: 50 * time.Millisecond})
	_, err := s.Hydrate(ctx)
	require.NoError(t, err)
	before := updatedAt(t, st, "files")
	rep, err := s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, 20, rep.Listed)
	assert.Empty(t, rep.Added)
	assert.Empty(t, rep.Updated)
	assert.Empty(t, rep.Deleted)
	// Once the files are older than the racy window, the stat cache vouches for all of them.
	time.Sleep(120 * time.Millisecond)
	_, err = s.Flush(ctx)
	require.NoError(t, err)
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Hashed, "diff mode hashes nothing when nothing changed")
	assert.Equal(t, 20, rep.Listed)
	assert.Equal(t, before, updatedAt(t, st, "files"), "the store was not written")
	// A change is still seen.
	write(t, sb, "c/f.txt", "changed")
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"c/f.txt"}, rep.Updated)
	assert.Equal(t, 1, rep.Hashed)
}

func testFullMode(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"a": "1", "b": "2", "c": "3"})
	s := newSync(t, sb, st, filesync.Options{Mode: filesync.ModeFull, RacyWindow: time.Nanosecond})
	_, err := s.Hydrate(ctx)
	require.NoError(t, err)
	for range 2 {
		rep, err := s.Flush(ctx)
		require.NoError(t, err)
		assert.Equal(t, filesync.ModeFull, rep.Mode)
		assert.Equal(t, 3, rep.Hashed, "full mode hashes every file")
		assert.Empty(t, rep.Updated)
	}
	write(t, sb, "b", "two")
	rep, err := s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, rep.Updated)
	_, err = filesync.New(sb, st, filesync.Options{Collections: []string{"files"}, Mode: "fast"})
	assert.ErrorIs(t, err, errs.InvalidInput)
}

func testOwnership(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"src/a.go": "a", "dup.txt": "from files"})
	seed(t, st, "artifacts", map[string]string{"out/report.txt": "r1", "dup.txt": "from artifacts"})
	_, err := st.Apply(ctx, []filesync.Change{{Collection: "artifacts", Path: "out/later.txt", NoContent: true}})
	require.NoError(t, err)
	s := newSync(t, sb, st, filesync.Options{})
	rep, err := s.Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, "from files", sbRead(t, sb, "dup.txt"), "the first collection wins a shared path")
	assert.Contains(t, rep.Skipped, "dup.txt")
	write(t, sb, "out/report.txt", "r2")
	write(t, sb, "brand-new.txt", "n")
	write(t, sb, "out/later.txt", "filled")
	write(t, sb, "dup.txt", "edited")
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, "r2", read(t, st, "artifacts", "out/report.txt"), "an owned path stays in its collection")
	absent(t, st, "files", "out/report.txt")
	assert.Equal(t, "n", read(t, st, "files", "brand-new.txt"), "a new path goes to the first collection")
	absent(t, st, "artifacts", "brand-new.txt")
	assert.Equal(t, "filled", read(t, st, "artifacts", "out/later.txt"), "a path an existing entry holds goes to that collection")
	absent(t, st, "files", "out/later.txt")
	assert.Equal(t, "edited", read(t, st, "files", "dup.txt"))
	assert.Equal(t, "from artifacts", read(t, st, "artifacts", "dup.txt"))
}

func testBinaryRoundTrip(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	all := make([]byte, 512)
	for i := range all {
		all[i] = byte(i)
	}
	random := make([]byte, 1<<20+3)
	_, _ = rand.Read(random)
	_, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "all.bin", Content: all},
		{Collection: "files", Path: "random.bin", Content: random}})
	require.NoError(t, err)
	s := newSync(t, sb, st, filesync.Options{})
	_, err = s.Hydrate(ctx)
	require.NoError(t, err)
	got, err := sb.ReadFile(ctx, "all.bin")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(all, got), "hydrate is byte for byte")
	got, err = sb.ReadFile(ctx, "random.bin")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(random, got))

	invalid := []byte("\xff\xfe\x00\x80 not utf-8 \r\n\x00")
	require.NoError(t, sb.WriteFile(ctx, "bad-utf8.bin", invalid))
	flipped := bytes.Clone(random)
	flipped[len(flipped)/2] ^= 0xff
	require.NoError(t, sb.WriteFile(ctx, "random.bin", flipped))
	_, err = s.Flush(ctx)
	require.NoError(t, err)
	b, err := st.Read(ctx, "files", "bad-utf8.bin")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(invalid, b), "flush is byte for byte")
	b, err = st.Read(ctx, "files", "random.bin")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(flipped, b))
	en, err := st.Get(ctx, "files", "random.bin")
	require.NoError(t, err)
	assert.Equal(t, filesync.Hash(flipped), en.Hash)
}

// failingLister is a sandbox whose walk fails: the failure is injected, the sandbox is real.
type failingLister struct {
	adapter.Sandbox
	err error
}

func (f failingLister) ListFiles(context.Context, string) ([]adapter.FileInfo, error) {
	return nil, f.err
}

// plain hides every optional interface of a sandbox.
type plain struct{ sb adapter.Sandbox }

func (p plain) ExecuteCommand(ctx context.Context, c adapter.Command) (adapter.Result, error) {
	return p.sb.ExecuteCommand(ctx, c)
}
func (p plain) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return p.sb.ReadFile(ctx, path)
}
func (p plain) WriteFile(ctx context.Context, path string, data []byte) error {
	return p.sb.WriteFile(ctx, path, data)
}
func (p plain) Stop(ctx context.Context) error { return p.sb.Stop(ctx) }

func testFailedWalk(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"a": "1", "b/c": "2", "d": "3"})
	s := newSync(t, sb, st, filesync.Options{})
	_, err := s.Hydrate(ctx)
	require.NoError(t, err)
	for _, p := range []string{"a", "b/c", "d"} {
		remove(t, sb, p)
	}
	before, err := st.List(ctx, "files")
	require.NoError(t, err)
	require.Len(t, before, 3)

	// A cancelled context fails the walk.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Flush(cctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)

	// A walk that fails half way (injected into a real sandbox) aborts the flush.
	for _, werr := range []error{errs.New(errs.Internal, "list", "b", "permission denied"), errs.New(errs.SandboxUnavailable, "list", "", "gone"), errors.New("uncoded")} {
		bad := newSync(t, failingLister{sb, werr}, st, filesync.Options{})
		_, err = bad.Hydrate(ctx) // rewrites the files; the priming walk fails silently
		require.NoError(t, err)
		for _, p := range []string{"a", "b/c", "d"} {
			remove(t, sb, p)
		}
		_, err = bad.Flush(ctx)
		require.Error(t, err)
		assert.NotEmpty(t, errs.CodeOf(err), "a coded error")
		after, lerr := st.List(ctx, "files")
		require.NoError(t, lerr)
		assert.Equal(t, before, after, "a failed walk deletes nothing and writes nothing")
	}

	// Without Lister the walk is one `find`; where that fails, nothing is deleted either, and
	// where it works, the deletions are seen.
	p := newSync(t, plain{sb}, st, filesync.Options{})
	_, err = p.Hydrate(ctx)
	require.NoError(t, err)
	remove(t, sb, "d")
	rep, err := p.Flush(ctx)
	after, lerr := st.List(ctx, "files")
	require.NoError(t, lerr)
	if err != nil {
		t.Logf("find fallback unavailable here: %v", err)
		assert.Equal(t, before, after)
	} else {
		assert.Equal(t, []string{"d"}, rep.Deleted)
		assert.Len(t, after, 2)
		assert.Equal(t, rep.Listed, rep.Hashed, "no stat data: every file is hashed")
	}
}

func testNeverHydrated(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"a": "1"})
	s := newSync(t, sb, st, filesync.Options{})
	_, err := s.Hydrate(ctx)
	require.NoError(t, err)
	seed(t, st, "files", map[string]string{"late.txt": "added after hydrate"})
	_, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, "added after hydrate", read(t, st, "files", "late.txt"), "an entry the sandbox never saw is not deleted")

	// A sandbox that never hydrated deletes nothing at all.
	other := newSync(t, e.sandbox(t), st, filesync.Options{})
	rep, err := other.Flush(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Deleted)
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	assert.Len(t, l, 2)
}

func testConflicts(t *testing.T, e *env) {
	st := e.store(t)
	seed(t, st, "files", map[string]string{"f": "base", "g": "gee", "h": "aitch"})
	sbA, sbB := e.sandbox(t), e.sandbox(t)
	a := newSync(t, sbA, st, filesync.Options{})
	b := newSync(t, sbB, st, filesync.Options{})
	_, err := a.Hydrate(ctx)
	require.NoError(t, err)
	_, err = b.Hydrate(ctx)
	require.NoError(t, err)

	// Both change f: the second flush reports a conflict and does not overwrite.
	write(t, sbA, "f", "from A")
	write(t, sbB, "f", "from B")
	write(t, sbB, "h", "B's h") // a non-conflicting change in the same flush still applies
	_, err = a.Flush(ctx)
	require.NoError(t, err)
	rep, err := b.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict)
	require.Len(t, rep.Conflicts, 1)
	c := rep.Conflicts[0]
	assert.Equal(t, filesync.Conflict{Collection: "files", Path: "f", Kind: "modify",
		Base: filesync.Hash([]byte("base")), Ours: filesync.Hash([]byte("from B")), Theirs: filesync.Hash([]byte("from A"))}, c)
	assert.Equal(t, "from A", read(t, st, "files", "f"), "the first writer's content stays")
	assert.Equal(t, "B's h", read(t, st, "files", "h"))
	assert.Equal(t, []string{"h"}, rep.Updated)
	details := errs.As(err).Details
	require.NotNil(t, details)
	assert.Equal(t, rep.Conflicts, details["conflicts"])
	// The conflict persists until resolved.
	_, err = b.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict)

	// A adds a file and flushes: B never saw it and does not delete it.
	write(t, sbA, "only-a.txt", "A's")
	_, err = a.Flush(ctx)
	require.NoError(t, err)
	_, err = b.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict) // still f
	assert.Equal(t, "A's", read(t, st, "files", "only-a.txt"))

	// A modifies g, B deletes it: a delete conflict, the entry stays.
	write(t, sbA, "g", "A's g")
	_, err = a.Flush(ctx)
	require.NoError(t, err)
	remove(t, sbB, "g")
	rep, err = b.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict)
	kinds := map[string]string{}
	for _, c := range rep.Conflicts {
		kinds[c.Path] = c.Kind
	}
	assert.Equal(t, map[string]string{"f": "modify", "g": "delete"}, kinds)
	assert.Equal(t, "A's g", read(t, st, "files", "g"))

	// Both create the same new path with different content: an add conflict.
	write(t, sbA, "new", "A")
	write(t, sbB, "new", "B")
	_, err = a.Flush(ctx)
	require.NoError(t, err)
	rep, err = b.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict)
	for _, c := range rep.Conflicts {
		kinds[c.Path] = c.Kind
		if c.Path == "new" {
			assert.Equal(t, "", c.Base)
		}
	}
	assert.Equal(t, "add", kinds["new"])
	assert.Equal(t, "A", read(t, st, "files", "new"))
	// Same new content on both sides is agreement, not a conflict.
	write(t, sbA, "same", "S")
	write(t, sbB, "same", "S")
	_, err = a.Flush(ctx)
	require.NoError(t, err)
	rep, _ = b.Flush(ctx)
	for _, c := range rep.Conflicts {
		assert.NotEqual(t, "same", c.Path)
	}

	// Resolving in the store's favour: hydrate again, then B is clean.
	_, err = b.Hydrate(ctx)
	require.NoError(t, err)
	rep, err = b.Flush(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Conflicts)
	assert.Equal(t, "from A", sbRead(t, sbB, "f"))
}

func testExecHooks(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"doomed.txt": "bye"})
	var seen []string
	refuse := errs.New(errs.InvalidInput, "exec", "", "refused by hook")
	s := newSync(t, sb, st, filesync.Options{
		OnBeforeCommand: func(_ context.Context, c adapter.Command) (adapter.Command, error) {
			seen = append(seen, strings.Join(c.Args, " "))
			if c.Args[0] == "refuse-me" {
				return c, refuse
			}
			if c.Args[0] == "rewrite-me" {
				c.Args = []string{"sh", "-c", "echo rewritten > hook.txt"}
			}
			return c, nil
		},
		OnAfterCommand: func(_ context.Context, c adapter.Command, res adapter.Result, err error) (adapter.Result, error) {
			if res.ExitCode == 3 {
				res.ExitCode = 0
				res.Stdout = []byte("replaced")
			}
			return res, err
		},
	})
	_, err := s.Hydrate(ctx)
	require.NoError(t, err)

	res, rep, err := s.Exec(ctx, adapter.Command{Args: []string{"sh", "-c", "echo made > made.txt && rm doomed.txt"}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, []string{"made.txt"}, rep.Added, "a flush follows the command")
	assert.Equal(t, []string{"doomed.txt"}, rep.Deleted)
	assert.Equal(t, "made\n", read(t, st, "files", "made.txt"))

	_, rep, err = s.Exec(ctx, adapter.Command{Args: []string{"rewrite-me"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"hook.txt"}, rep.Added)
	assert.Equal(t, "rewritten\n", read(t, st, "files", "hook.txt"))

	_, _, err = s.Exec(ctx, adapter.Command{Args: []string{"refuse-me", "sh", "-c", "echo no > refused.txt"}})
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, rerr := sb.ReadFile(ctx, "refused.txt")
	assert.ErrorIs(t, rerr, errs.NotFound, "a refused command does not run")

	res, _, err = s.Exec(ctx, adapter.Command{Args: []string{"sh", "-c", "exit 3"}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "onAfterCommand replaced the result")
	assert.Equal(t, "replaced", string(res.Stdout))

	res, _, err = s.Exec(ctx, adapter.Command{Args: []string{"sh", "-c", "exit 5"}})
	require.NoError(t, err, "a non-zero exit is data")
	assert.Equal(t, 5, res.ExitCode)
	assert.Len(t, seen, 5)
}

func testWriteFile(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	s := newSync(t, sb, st, filesync.Options{})
	rep, err := s.WriteFile(ctx, "notes/todo.md", []byte("- [ ] sync"))
	require.NoError(t, err)
	assert.Equal(t, []string{"notes/todo.md"}, rep.Added)
	assert.Equal(t, "- [ ] sync", read(t, st, "files", "notes/todo.md"))
	_, err = s.WriteFile(ctx, "../escape", []byte("x"))
	assert.ErrorIs(t, err, errs.PathEscape)
}

func testStateFile(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"a": "1", "b": "2", "c": "3"})
	state := filepath.Join(t.TempDir(), "state", "sync.json")
	s1 := newSync(t, sb, st, filesync.Options{StateFile: state})
	_, err := s1.Hydrate(ctx)
	require.NoError(t, err)

	// A new process finds the sandbox again and resumes: deletions and conflicts still work.
	s2 := newSync(t, sb, st, filesync.Options{StateFile: state})
	remove(t, sb, "a")
	seed(t, st, "files", map[string]string{"b": "changed elsewhere"})
	write(t, sb, "b", "changed here")
	rep, err := s2.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict)
	assert.Equal(t, []string{"a"}, rep.Deleted)
	require.Len(t, rep.Conflicts, 1)
	assert.Equal(t, "b", rep.Conflicts[0].Path)
	absent(t, st, "files", "a")

	// Without the state, nothing the sandbox saw is known: nothing is deleted.
	s3 := newSync(t, sb, st, filesync.Options{})
	remove(t, sb, "c")
	rep, err = s3.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict) // b: the sandbox never saw the store's b
	assert.Empty(t, rep.Deleted)
	assert.Equal(t, "3", read(t, st, "files", "c"))
}

func testConcurrentFlushes(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	s := newSync(t, sb, st, filesync.Options{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				p := filepath.ToSlash(filepath.Join("w", string(rune('a'+i)), string(rune('0'+j))))
				_, err := s.WriteFile(ctx, p, []byte(p))
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	assert.Len(t, l, 20)
	for _, en := range l {
		assert.Equal(t, en.Path, read(t, st, "files", en.Path))
	}
}

func testHostilePaths(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	names := []string{"-rf", "--help", "a b/c d.txt", "ünï/çødé.txt", "x;rm -rf y", "$(echo hi)", "`id`", "quote'\"", ".hidden", "..dots", "tab\tname"}
	s := newSync(t, sb, st, filesync.Options{})
	for _, n := range names {
		write(t, sb, n, "content of "+n)
	}
	rep, err := s.Flush(ctx)
	require.NoError(t, err)
	assert.Len(t, rep.Added, len(names))
	for _, n := range names {
		assert.Equal(t, "content of "+n, read(t, st, "files", n))
	}
	sb2 := e.sandbox(t)
	rep, err = newSync(t, sb2, st, filesync.Options{}).Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, len(names), rep.Written)
	for _, n := range names {
		assert.Equal(t, "content of "+n, sbRead(t, sb2, n))
	}
}
