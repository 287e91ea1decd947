// Package filesynctest holds the conformance suites of FileSync: RunStore for filesync.Store
// implementations and Run for the sync engine over any adapter.Sandbox (each adapter's tests call
// it with a small harness; it runs every case over both stores).
package filesynctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OpenStore opens (creating when missing) a store kept in dir. Opening the same dir again must
// give the same store: the suite checks persistence that way.
type OpenStore func(t testing.TB, dir string) filesync.Store

// RunStore runs the store conformance suite.
func RunStore(t *testing.T, open OpenStore) {
	fresh := func(t *testing.T) filesync.Store {
		st := open(t, t.TempDir())
		t.Cleanup(func() { st.Close() })
		return st
	}
	t.Run("EmptyCollection", func(t *testing.T) {
		t.Parallel()
		st := fresh(t)
		ctx := context.Background()
		l, err := st.List(ctx, "files")
		require.NoError(t, err)
		assert.Empty(t, l)
		_, err = st.Get(ctx, "files", "a")
		assert.ErrorIs(t, err, errs.NotFound)
		_, err = st.Read(ctx, "files", "a")
		assert.ErrorIs(t, err, errs.NotFound)
		cs, err := st.Collections(ctx)
		require.NoError(t, err)
		assert.Empty(t, cs)
	})
	t.Run("PutGetReadListScan", func(t *testing.T) { t.Parallel(); testPutGet(t, fresh(t)) })
	t.Run("BinaryAndEmpty", func(t *testing.T) { t.Parallel(); testBinary(t, fresh(t)) })
	t.Run("NoContentEntries", func(t *testing.T) { t.Parallel(); testNoContent(t, fresh(t)) })
	t.Run("CompareAndSwap", func(t *testing.T) { t.Parallel(); testCAS(t, fresh(t)) })
	t.Run("Delete", func(t *testing.T) { t.Parallel(); testDelete(t, fresh(t)) })
	t.Run("InvalidInput", func(t *testing.T) { t.Parallel(); testStoreInvalid(t, fresh(t)) })
	t.Run("FileDirectoryClash", func(t *testing.T) { t.Parallel(); testClash(t, fresh(t)) })
	t.Run("CollectionsAreSeparate", func(t *testing.T) { t.Parallel(); testCollections(t, fresh(t)) })
	t.Run("ConcurrentWriters", func(t *testing.T) { t.Parallel(); testConcurrentApply(t, fresh(t)) })
	t.Run("KindsAndExecutableBit", func(t *testing.T) { t.Parallel(); testKinds(t, fresh(t)) })
	t.Run("ReadLimit", func(t *testing.T) { t.Parallel(); testReadLimit(t, fresh(t)) })
	t.Run("NamesAreBytes", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		testNamesAreBytes(t, func() filesync.Store { return open(t, dir) })
	})
	t.Run("Persistence", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ctx := context.Background()
		st := open(t, dir)
		_, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "a/b.txt", Content: []byte("kept")}})
		require.NoError(t, err)
		require.NoError(t, st.Close())
		require.NoError(t, st.Close(), "Close is idempotent")
		_, err = st.List(ctx, "files")
		assert.ErrorIs(t, err, errs.SandboxUnavailable, "a closed store")
		st2 := open(t, dir)
		t.Cleanup(func() { st2.Close() })
		got, err := st2.Read(ctx, "files", "a/b.txt")
		require.NoError(t, err)
		assert.Equal(t, "kept", string(got))
	})
}

func put(c, p, content string) filesync.Change {
	return filesync.Change{Collection: c, Path: p, Content: []byte(content)}
}

func testPutGet(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	conf, err := st.Apply(ctx, []filesync.Change{put("files", "b.txt", "bee"), put("files", "a/x.txt", "ex"), put("files", "a b/ü ñ.txt", "unicode")})
	require.NoError(t, err)
	assert.Empty(t, conf)
	e, err := st.Get(ctx, "files", "b.txt")
	require.NoError(t, err)
	assert.Equal(t, filesync.Hash([]byte("bee")), e.Hash)
	assert.Equal(t, int64(3), e.Size)
	assert.Equal(t, "files", e.Collection)
	assert.True(t, e.UpdatedAt.After(before), "updatedAt is set by the store")
	assert.True(t, e.HasContent())
	got, err := st.Read(ctx, "files", "a b/ü ñ.txt")
	require.NoError(t, err)
	assert.Equal(t, "unicode", string(got))
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	var paths []string
	for _, e := range l {
		paths = append(paths, e.Path)
	}
	assert.Equal(t, []string{"a b/ü ñ.txt", "a/x.txt", "b.txt"}, paths, "sorted by path")
	var scanned []string
	require.NoError(t, st.Scan(ctx, "files", func(e filesync.Entry, content []byte) error {
		scanned = append(scanned, e.Path+"="+string(content))
		assert.Equal(t, filesync.Hash(content), e.Hash)
		return nil
	}))
	assert.Equal(t, []string{"a b/ü ñ.txt=unicode", "a/x.txt=ex", "b.txt=bee"}, scanned)
	stop := errors.New("stop")
	n := 0
	err = st.Scan(ctx, "files", func(filesync.Entry, []byte) error { n++; return stop })
	assert.ErrorIs(t, err, stop, "an error from fn stops the scan")
	assert.Equal(t, 1, n)

	// Replace with a base: applies.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "b.txt", Content: []byte("bee2"), Base: e.Hash}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	got, err = st.Read(ctx, "files", "b.txt")
	require.NoError(t, err)
	assert.Equal(t, "bee2", string(got))
}

func testBinary(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	random := make([]byte, 1<<20+7)
	_, _ = rand.Read(random)
	_, err := st.Apply(ctx, []filesync.Change{
		{Collection: "files", Path: "bytes.bin", Content: all},
		{Collection: "files", Path: "random.bin", Content: random},
		{Collection: "files", Path: "empty", Content: nil},
		{Collection: "files", Path: "crlf.txt", Content: []byte("a\r\nb\r\n\xff\xfe")},
	})
	require.NoError(t, err)
	for p, want := range map[string][]byte{"bytes.bin": all, "random.bin": random, "empty": {}, "crlf.txt": []byte("a\r\nb\r\n\xff\xfe")} {
		got, err := st.Read(ctx, "files", p)
		require.NoError(t, err, p)
		assert.True(t, bytes.Equal(want, got), "%s round-trips byte for byte", p)
		assert.NotNil(t, got, "%s: content of an empty file is empty, not nil", p)
		e, err := st.Get(ctx, "files", p)
		require.NoError(t, err)
		assert.Equal(t, filesync.Hash(want), e.Hash)
		assert.True(t, e.HasContent())
	}
	require.NoError(t, st.Scan(ctx, "files", func(e filesync.Entry, content []byte) error {
		assert.NotNil(t, content, "%s has content", e.Path)
		assert.Equal(t, e.Hash, filesync.Hash(content))
		return nil
	}))
}

func testNoContent(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	_, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "meta", NoContent: true}, put("files", "real", "x")})
	require.NoError(t, err)
	e, err := st.Get(ctx, "files", "meta")
	require.NoError(t, err)
	assert.False(t, e.HasContent())
	_, err = st.Read(ctx, "files", "meta")
	assert.ErrorIs(t, err, errs.NotFound, "no content")
	var nilContent []string
	require.NoError(t, st.Scan(ctx, "files", func(e filesync.Entry, content []byte) error {
		if content == nil {
			nilContent = append(nilContent, e.Path)
		}
		return nil
	}))
	assert.Equal(t, []string{"meta"}, nilContent)
	// An entry without content satisfies Absent: content can be filled in.
	conf, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "meta", Content: []byte("now"), Base: filesync.Absent}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	got, err := st.Read(ctx, "files", "meta")
	require.NoError(t, err)
	assert.Equal(t, "now", string(got))
}

func testCAS(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	h1 := filesync.Hash([]byte("one"))
	_, err := st.Apply(ctx, []filesync.Change{put("files", "f", "one")})
	require.NoError(t, err)

	// Wrong base: conflict, nothing written, the other changes of the batch apply.
	wrong := filesync.Hash([]byte("zero"))
	conf, err := st.Apply(ctx, []filesync.Change{
		{Collection: "files", Path: "f", Content: []byte("two"), Base: wrong},
		{Collection: "files", Path: "g", Content: []byte("gee"), Base: filesync.Absent},
	})
	require.NoError(t, err)
	require.Len(t, conf, 1)
	assert.Equal(t, "f", conf[0].Path)
	assert.Equal(t, "files", conf[0].Collection)
	assert.Equal(t, h1, conf[0].Theirs)
	assert.Equal(t, wrong, conf[0].Base)
	got, _ := st.Read(ctx, "files", "f")
	assert.Equal(t, "one", string(got))
	got, _ = st.Read(ctx, "files", "g")
	assert.Equal(t, "gee", string(got))

	// Absent on an existing entry: conflict.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "f", Content: []byte("two"), Base: filesync.Absent}})
	require.NoError(t, err)
	require.Len(t, conf, 1)

	// Same content as the store: settled, whatever the base.
	e0, _ := st.Get(ctx, "files", "f")
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "f", Content: []byte("one"), Base: wrong}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	e1, _ := st.Get(ctx, "files", "f")
	assert.Equal(t, e0.UpdatedAt, e1.UpdatedAt, "a settled change writes nothing")

	// Right base: applies.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "f", Content: []byte("two"), Base: h1}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	got, _ = st.Read(ctx, "files", "f")
	assert.Equal(t, "two", string(got))

	// A delete with a stale base conflicts; with Any it applies.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "f", Delete: true, Base: h1}})
	require.NoError(t, err)
	require.Len(t, conf, 1)
	_, err = st.Get(ctx, "files", "f")
	require.NoError(t, err, "not deleted")
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "f", Delete: true, Base: filesync.Any}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	_, err = st.Get(ctx, "files", "f")
	assert.ErrorIs(t, err, errs.NotFound)
	// A modification of a deleted entry conflicts with an empty Theirs.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "f", Content: []byte("three"), Base: h1}})
	require.NoError(t, err)
	require.Len(t, conf, 1)
	assert.Equal(t, "", conf[0].Theirs)
}

func testDelete(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	_, err := st.Apply(ctx, []filesync.Change{put("files", "d/e/f", "x"), put("files", "d/g", "y")})
	require.NoError(t, err)
	h := filesync.Hash([]byte("x"))
	conf, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "d/e/f", Delete: true, Base: h}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	_, err = st.Get(ctx, "files", "d/e/f")
	assert.ErrorIs(t, err, errs.NotFound)
	// Deleting what is gone is settled.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "d/e/f", Delete: true, Base: h}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	// The directory of a deleted entry can become a file, and a file can be replaced by a
	// directory in one batch.
	conf, err = st.Apply(ctx, []filesync.Change{put("files", "d/e", "now a file"),
		{Collection: "files", Path: "d/g", Delete: true}, put("files", "d/g/h", "below")})
	require.NoError(t, err)
	assert.Empty(t, conf)
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	require.Len(t, l, 2)
	assert.Equal(t, "d/e", l[0].Path)
	assert.Equal(t, "d/g/h", l[1].Path)
}

func testStoreInvalid(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", ".."} {
		_, err := st.Apply(ctx, []filesync.Change{put("files", p, "x")})
		assert.ErrorIs(t, err, errs.PathEscape, p)
		_, err = st.Read(ctx, "files", p)
		assert.ErrorIs(t, err, errs.PathEscape, p)
	}
	for _, p := range []string{"", ".", "a//b", "a/./b", "a/", "x\x00y", "a/b/.."} {
		_, err := st.Apply(ctx, []filesync.Change{put("files", p, "x")})
		assert.ErrorIs(t, err, errs.PathInvalid, "%q", p)
	}
	for _, c := range []string{"", ".hidden", "a/b", "..", "sp ace", "semi;colon", string(make([]byte, 129))} {
		_, err := st.Apply(ctx, []filesync.Change{put(c, "x", "x")})
		assert.ErrorIs(t, err, errs.InvalidInput, "%q", c)
		_, err = st.List(ctx, c)
		assert.ErrorIs(t, err, errs.InvalidInput, "%q", c)
	}
	_, err := st.Apply(ctx, []filesync.Change{put("files", "x", "1"), put("files", "x", "2")})
	assert.ErrorIs(t, err, errs.InvalidInput, "two changes to one entry")
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "x", Content: []byte("1"), Base: "not-a-hash"}})
	assert.ErrorIs(t, err, errs.InvalidInput, "bad base")
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	assert.Empty(t, l, "a rejected batch writes nothing")
	// Names that look hostile but are valid paths stay inside the store.
	odd := []string{"-rf", "--help", "a\nb", " lead", "trail ", "back\\slash", "manifest.json", ".format", ".journal", "files/x"}
	var changes []filesync.Change
	for _, p := range odd {
		changes = append(changes, put("files", p, p))
	}
	_, err = st.Apply(ctx, changes)
	require.NoError(t, err)
	for _, p := range odd {
		got, err := st.Read(ctx, "files", p)
		require.NoError(t, err, "%q", p)
		assert.Equal(t, p, string(got))
	}
}

func testClash(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	_, err := st.Apply(ctx, []filesync.Change{put("files", "a/b", "x")})
	require.NoError(t, err)
	_, err = st.Apply(ctx, []filesync.Change{put("files", "a", "file over a directory")})
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = st.Apply(ctx, []filesync.Change{put("files", "a/b/c", "below a file")})
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = st.Apply(ctx, []filesync.Change{put("files", "n", "x"), put("files", "n/m", "y")})
	assert.ErrorIs(t, err, errs.InvalidInput, "a clash inside one batch")
	_, err = st.Apply(ctx, []filesync.Change{put("other", "a", "fine in another collection")})
	require.NoError(t, err)
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	require.Len(t, l, 1, "rejected batches wrote nothing")
}

func testCollections(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	_, err := st.Apply(ctx, []filesync.Change{put("files", "x", "1"), put("artifacts", "x", "2"), put("b-2", "y", "3")})
	require.NoError(t, err)
	a, _ := st.Read(ctx, "files", "x")
	b, _ := st.Read(ctx, "artifacts", "x")
	assert.Equal(t, "1", string(a))
	assert.Equal(t, "2", string(b))
	cs, err := st.Collections(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"artifacts", "b-2", "files"}, cs)
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "b-2", Path: "y", Delete: true}})
	require.NoError(t, err)
	cs, err = st.Collections(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"artifacts", "files"}, cs, "an emptied collection is gone")
}

// testConcurrentApply: writers racing on one entry with the same base; exactly one wins.
func testConcurrentApply(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	_, err := st.Apply(ctx, []filesync.Change{put("files", "shared", "base")})
	require.NoError(t, err)
	base := filesync.Hash([]byte("base"))
	const n = 8
	var wg sync.WaitGroup
	wins := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conf, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "shared", Content: []byte{byte('a' + i)}, Base: base}})
			assert.NoError(t, err)
			if err == nil && len(conf) == 0 {
				wins <- i
			}
		}()
	}
	wg.Wait()
	close(wins)
	var winners []int
	for w := range wins {
		winners = append(winners, w)
	}
	require.Len(t, winners, 1, "compare-and-swap lets exactly one writer win")
	got, err := st.Read(ctx, "files", "shared")
	require.NoError(t, err)
	assert.Equal(t, []byte{byte('a' + winners[0])}, got)
}

// testKinds: kinds and the executable bit are kept, compared and changed alone.
func testKinds(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	h := filesync.Hash([]byte("#!/bin/sh\n"))
	_, err := st.Apply(ctx, []filesync.Change{
		{Collection: "files", Path: "run.sh", Content: []byte("#!/bin/sh\n"), Exec: true},
		{Collection: "files", Path: "link", Kind: filesync.KindSymlink, Content: []byte("run.sh")},
		{Collection: "files", Path: "plain", Content: []byte("#!/bin/sh\n")},
	})
	require.NoError(t, err)
	l, err := st.List(ctx, "files")
	require.NoError(t, err)
	require.Len(t, l, 3)
	assert.Equal(t, []string{"link", "plain", "run.sh"}, []string{l[0].Path, l[1].Path, l[2].Path})
	assert.Equal(t, filesync.KindSymlink, l[0].Kind)
	assert.False(t, l[0].Exec)
	assert.Equal(t, filesync.KindFile, l[1].Kind)
	assert.False(t, l[1].Exec)
	assert.Equal(t, filesync.KindFile, l[2].Kind)
	assert.True(t, l[2].Exec)
	assert.Equal(t, h+"+x", l[2].Version())
	assert.Equal(t, h, l[1].Version())
	assert.Equal(t, filesync.Hash([]byte("run.sh"))+"+l", l[0].Version())
	var kinds []string
	require.NoError(t, st.Scan(ctx, "files", func(e filesync.Entry, content []byte) error {
		kinds = append(kinds, e.Kind+":"+string(content))
		return nil
	}))
	assert.Equal(t, []string{"symlink:run.sh", "file:#!/bin/sh\n", "file:#!/bin/sh\n"}, kinds)

	// The version is what compare-and-swap compares: the bare hash is not run.sh's base any more.
	conf, err := st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "run.sh", Content: []byte("new"), Base: h}})
	require.NoError(t, err)
	require.Len(t, conf, 1)
	assert.Equal(t, h+"+x", conf[0].Theirs)
	// The executable bit alone, without the content.
	before := entry(t, st, "files", "run.sh")
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "run.sh", Hash: h, KeepContent: true, Base: h + "+x"}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	after := entry(t, st, "files", "run.sh")
	assert.False(t, after.Exec)
	assert.Equal(t, before.Hash, after.Hash)
	assert.Equal(t, before.Size, after.Size)
	got, err := st.Read(ctx, "files", "run.sh")
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\n", string(got))
	// KeepContent against other content is a conflict, even with Any.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "run.sh", Hash: filesync.Hash([]byte("x")), KeepContent: true, Exec: true}})
	require.NoError(t, err)
	require.Len(t, conf, 1)
	// A file replaced by a link to the same text is a change.
	conf, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "plain", Kind: filesync.KindSymlink, Content: []byte("#!/bin/sh\n"), Base: h}})
	require.NoError(t, err)
	assert.Empty(t, conf)
	assert.Equal(t, filesync.KindSymlink, entry(t, st, "files", "plain").Kind)

	for _, c := range []filesync.Change{
		{Collection: "files", Path: "l", Kind: filesync.KindSymlink, Content: []byte("x"), Exec: true},
		{Collection: "files", Path: "l", Kind: filesync.KindSymlink, Content: nil},
		{Collection: "files", Path: "l", Kind: filesync.KindSymlink, Content: []byte("a\x00b")},
		{Collection: "files", Path: "l", Kind: "fifo", Content: []byte("x")},
		{Collection: "files", Path: "l", KeepContent: true},
		{Collection: "files", Path: "l", Content: []byte("x"), Base: h + "+q"},
	} {
		_, err := st.Apply(ctx, []filesync.Change{c})
		assert.ErrorIs(t, err, errs.InvalidInput, "%+v", c)
	}
}

// testReadLimit: content over adapter.ReadLimit is never loaded.
func testReadLimit(t *testing.T, st filesync.Store) {
	ctx := context.Background()
	_, err := st.Apply(ctx, []filesync.Change{put("files", "big", "0123456789"), put("files", "small", "01")})
	require.NoError(t, err)
	lctx := adapter.WithReadLimit(ctx, 5)
	_, err = st.Read(lctx, "files", "big")
	assert.ErrorIs(t, err, errs.FileTooLarge)
	got, err := st.Read(lctx, "files", "small")
	require.NoError(t, err)
	assert.Equal(t, "01", string(got))
	seen := map[string]string{}
	require.NoError(t, st.Scan(lctx, "files", func(e filesync.Entry, content []byte) error {
		if content == nil {
			seen[e.Path] = fmt.Sprintf("nil %d", e.Size)
		} else {
			seen[e.Path] = string(content)
		}
		return nil
	}))
	assert.Equal(t, map[string]string{"big": "nil 10", "small": "01"}, seen)
}

func entry(t *testing.T, st filesync.Store, coll, p string) filesync.Entry {
	t.Helper()
	e, err := st.Get(context.Background(), coll, p)
	require.NoError(t, err, "%s/%s", coll, p)
	return e
}

// byteNames are paths that differ only in bytes that are not UTF-8 (or in the replacement
// character those bytes become when a name is converted to a Unicode string).
var byteNames = []string{"a\xff", "a\xfe", "a\ufffd", "d\xff/x", "d\xfe/x", "\xc3", "\xc3\xa9", "e\u0301", "\xe9"}

// testNamesAreBytes: a store keeps paths as bytes. Two names never collide, whatever their
// encoding, also after the store is reopened, and deleting one leaves the others.
func testNamesAreBytes(t *testing.T, open func() filesync.Store) {
	ctx := context.Background()
	st := open()
	var changes []filesync.Change
	for i, p := range byteNames {
		changes = append(changes, filesync.Change{Collection: "files", Path: p, Content: []byte(fmt.Sprint(i))})
	}
	_, err := st.Apply(ctx, changes)
	require.NoError(t, err)
	check := func(st filesync.Store, names []string) {
		t.Helper()
		l, err := st.List(ctx, "files")
		require.NoError(t, err)
		var got []string
		for _, e := range l {
			got = append(got, e.Path)
		}
		assert.ElementsMatch(t, names, got, "every name is its own entry, byte for byte")
		for _, p := range names {
			i := slices.Index(byteNames, p)
			b, err := st.Read(ctx, "files", p)
			require.NoError(t, err, "%q", p)
			assert.Equal(t, fmt.Sprint(i), string(b), "%q", p)
		}
	}
	check(st, byteNames)
	require.NoError(t, st.Close())
	st = open()
	t.Cleanup(func() { st.Close() })
	check(st, byteNames)
	_, err = st.Apply(ctx, []filesync.Change{{Collection: "files", Path: "a\xff", Delete: true}, {Collection: "files", Path: "d\xfe/x", Delete: true}})
	require.NoError(t, err)
	rest := slices.DeleteFunc(slices.Clone(byteNames), func(p string) bool { return p == "a\xff" || p == "d\xfe/x" })
	check(st, rest)
}
