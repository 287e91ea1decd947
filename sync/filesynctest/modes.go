package filesynctest

import (
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cases of issue 19 (executable bit, symbolic links) and of the size limit.

func sh(t *testing.T, sb adapter.Sandbox, script string) adapter.Result {
	t.Helper()
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", script}})
	require.NoError(t, err, script)
	require.Equal(t, 0, res.ExitCode, "%s: %s%s", script, res.Stdout, res.Stderr)
	return res
}

func caps(sb adapter.Sandbox) adapter.Capabilities {
	if c, ok := sb.(adapter.Capable); ok {
		return c.Capabilities()
	}
	return adapter.Capabilities{}
}

func stat(t *testing.T, sb adapter.Sandbox, p string) adapter.FileInfo {
	t.Helper()
	st, ok := sb.(adapter.Statter)
	if !ok {
		t.Skip("the adapter has no Statter")
	}
	fi, err := st.StatFile(ctx, p)
	require.NoError(t, err, p)
	return fi
}

func needModes(t *testing.T, sb adapter.Sandbox) {
	if _, ok := sb.(adapter.ModeWriter); !ok {
		t.Skip("the adapter has no adapter.ModeWriter")
	}
}

// testExecutable: chmod +x in one sandbox, the script runs after hydrate into a fresh one; chmod
// -x alone is flushed and seen by the first.
func testExecutable(t *testing.T, e *env) {
	st := e.store(t)
	a, b := e.sandbox(t), e.sandbox(t)
	needModes(t, a)
	sa := newSync(t, a, st, filesync.Options{})
	write(t, a, "bin/run.sh", "#!/bin/sh\necho ran\n")
	write(t, a, "plain.txt", "text")
	sh(t, a, "chmod +x bin/run.sh")
	rep, err := sa.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"bin/run.sh", "plain.txt"}, rep.Added)
	en := entry(t, st, "files", "bin/run.sh")
	assert.True(t, en.Exec)
	assert.Equal(t, filesync.KindFile, en.Kind)
	assert.False(t, entry(t, st, "files", "plain.txt").Exec)

	sb := newSync(t, b, st, filesync.Options{})
	_, err = sb.Hydrate(ctx)
	require.NoError(t, err)
	assert.True(t, stat(t, b, "bin/run.sh").Executable())
	assert.False(t, stat(t, b, "plain.txt").Executable())
	if caps(b).Exec != adapter.ExecInterpreted {
		res, err := b.ExecuteCommand(ctx, adapter.Command{Args: []string{"./bin/run.sh"}})
		require.NoError(t, err)
		assert.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "ran\n", string(res.Stdout))
	}

	// chmod -x alone is a change: the same content, now not executable.
	before := entry(t, st, "files", "bin/run.sh")
	sh(t, b, "chmod -x bin/run.sh")
	rep, err = sb.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"bin/run.sh"}, rep.Updated)
	after := entry(t, st, "files", "bin/run.sh")
	assert.False(t, after.Exec)
	assert.Equal(t, before.Hash, after.Hash)
	assert.Equal(t, "#!/bin/sh\necho ran\n", read(t, st, "files", "bin/run.sh"))
	// The other side sees it.
	_, err = sa.Hydrate(ctx)
	require.NoError(t, err)
	assert.False(t, stat(t, a, "bin/run.sh").Executable())
	rep, err = sa.Flush(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Updated, "nothing changed since the hydrate")
}

// testSymlinks: a relative link inside the workspace is a link after the round trip; absolute and
// outside links are skipped with a reason, never followed.
func testSymlinks(t *testing.T, e *env) {
	st := e.store(t)
	a, b := e.sandbox(t), e.sandbox(t)
	needModes(t, a)
	if !caps(a).Symlinks {
		t.Skip("commands cannot make symbolic links")
	}
	sa := newSync(t, a, st, filesync.Options{})
	write(t, a, "lib/real.txt", "real")
	sh(t, a, "ln -s lib/real.txt link && ln -s real.txt lib/same && ln -s ../lib/real.txt lib/up && ln -s lib dir && "+
		"ln -s /etc/passwd abs && ln -s ../outside out && ln -s dir/../../x through && ln -s loop loop && ln -s nowhere dangling")
	rep, err := sa.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"dangling", "dir", "lib/real.txt", "lib/same", "lib/up", "link"}, rep.Added)
	assert.Equal(t, []string{"abs", "loop", "out", "through"}, rep.Skipped)
	for _, p := range rep.Skipped {
		assert.Contains(t, rep.Reasons[p], "outside", p)
		absent(t, st, "files", p)
	}
	en := entry(t, st, "files", "link")
	assert.Equal(t, filesync.KindSymlink, en.Kind)
	assert.Equal(t, "lib/real.txt", read(t, st, "files", "link"))

	sb := newSync(t, b, st, filesync.Options{})
	_, err = sb.Hydrate(ctx)
	require.NoError(t, err)
	for p, target := range map[string]string{"link": "lib/real.txt", "lib/same": "real.txt", "lib/up": "../lib/real.txt", "dir": "lib", "dangling": "nowhere"} {
		fi := stat(t, b, p)
		assert.True(t, fi.IsLink(), p)
		assert.Equal(t, target, fi.Link, p)
	}
	assert.Equal(t, "real", sbRead(t, b, "link"))
	assert.Equal(t, "real", sbRead(t, b, "dir/real.txt"))
	rep, err = sb.Flush(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Added)
	assert.Empty(t, rep.Updated)

	// A link retargeted, a file replaced by a link and a link by a file are changes.
	sh(t, b, "ln -sfn lib/same link && rm lib/real.txt && ln -s ../nothing lib/real.txt && rm dir && echo file > dir")
	rep, err = sb.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"dir", "lib/real.txt", "link"}, rep.Updated)
	assert.Equal(t, filesync.KindSymlink, entry(t, st, "files", "lib/real.txt").Kind)
	assert.Equal(t, filesync.KindFile, entry(t, st, "files", "dir").Kind)
	assert.Equal(t, "lib/same", read(t, st, "files", "link"))
}

// testHostileLinks: store entries whose links would leave the workspace are refused at hydrate
// with errs.PathEscape and nothing is planted; the rest is hydrated.
func testHostileLinks(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	needModes(t, sb)
	link := func(coll, p, target string) filesync.Change {
		return filesync.Change{Collection: coll, Path: p, Kind: filesync.KindSymlink, Content: []byte(target)}
	}
	_, err := st.Apply(ctx, []filesync.Change{
		link("files", "abs", "/etc"),
		link("files", "up", "../../../../etc/passwd"),
		link("files", "deep/up", "../.."),
		link("files", "d", "."),                   // fine by itself...
		link("artifacts", "d/x", "../etc"),        // ...but through it this leaves the workspace
		link("files", "w2", "w/../../etc/shadow"), // through the workspace's own link w -> .
		link("files", "loop", "loop2"),
		link("files", "loop2", "loop"),
		link("files", "ok", "good.txt"),
		{Collection: "files", Path: "good.txt", Content: []byte("good")},
	})
	require.NoError(t, err)
	if ms, ok := sb.(adapter.ModeWriter); ok {
		require.NoError(t, ms.Symlink(ctx, "w", "."))
	}
	s := newSync(t, sb, st, filesync.Options{})
	rep, err := s.Hydrate(ctx)
	require.ErrorIs(t, err, errs.PathEscape)
	escaped := []string{"abs", "d/x", "deep/up", "loop", "loop2", "up", "w2"}
	assert.Equal(t, escaped, rep.Skipped)
	for _, p := range escaped {
		assert.Contains(t, rep.Reasons[p], "outside", p)
		if stt, ok := sb.(adapter.Statter); ok {
			fi, err := stt.StatFile(ctx, p)
			if err == nil {
				assert.False(t, fi.IsLink(), "%s was planted", p)
			}
		}
	}
	assert.Equal(t, "good", sbRead(t, sb, "ok"))
	assert.True(t, stat(t, sb, "d").IsLink())
	// The refused entries are not the sandbox's: a flush neither deletes nor rewrites them.
	rep, err = s.Flush(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Deleted)
	assert.Equal(t, "/etc", read(t, st, "files", "abs"))
}

// testModeConflicts: a mode change racing a content change is a conflict, either way round.
func testModeConflicts(t *testing.T, e *env) {
	st := e.store(t)
	a, b := e.sandbox(t), e.sandbox(t)
	needModes(t, a)
	seed(t, st, "files", map[string]string{"x.sh": "one", "y.sh": "one"})
	sa, sb := newSync(t, a, st, filesync.Options{}), newSync(t, b, st, filesync.Options{})
	_, err := sa.Hydrate(ctx)
	require.NoError(t, err)
	_, err = sb.Hydrate(ctx)
	require.NoError(t, err)
	h1, h2 := filesync.Hash([]byte("one")), filesync.Hash([]byte("two"))

	sh(t, a, "chmod +x x.sh")
	write(t, a, "y.sh", "two")
	_, err = sa.Flush(ctx)
	require.NoError(t, err)
	write(t, b, "x.sh", "two")
	sh(t, b, "chmod +x y.sh")
	rep, err := sb.Flush(ctx)
	require.ErrorIs(t, err, errs.Conflict)
	require.Len(t, rep.Conflicts, 2)
	x, y := rep.Conflicts[0], rep.Conflicts[1]
	assert.Equal(t, filesync.Conflict{Collection: "files", Path: "x.sh", Kind: "modify", Base: h1, Ours: h2, Theirs: h1 + "+x"}, x)
	assert.Equal(t, filesync.Conflict{Collection: "files", Path: "y.sh", Kind: "modify", Base: h1, Ours: h1 + "+x", Theirs: h2}, y)
	// Nothing was overwritten.
	assert.True(t, entry(t, st, "files", "x.sh").Exec)
	assert.Equal(t, "one", read(t, st, "files", "x.sh"))
	assert.False(t, entry(t, st, "files", "y.sh").Exec)
	assert.Equal(t, "two", read(t, st, "files", "y.sh"))
}

// testReplacesWhatIsThere: hydrate replaces a link where the store has a file (not writing
// through it) and a file where the store has a link.
func testReplacesWhatIsThere(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	needModes(t, sb)
	ms := sb.(adapter.ModeWriter)
	write(t, sb, "target.txt", "untouched")
	require.NoError(t, ms.Symlink(ctx, "f", "target.txt"))
	write(t, sb, "g", "a file")
	_, err := st.Apply(ctx, []filesync.Change{
		{Collection: "files", Path: "f", Content: []byte("from the store")},
		{Collection: "files", Path: "g", Kind: filesync.KindSymlink, Content: []byte("target.txt")},
	})
	require.NoError(t, err)
	s := newSync(t, sb, st, filesync.Options{})
	_, err = s.Hydrate(ctx)
	require.NoError(t, err)
	assert.False(t, stat(t, sb, "f").IsLink())
	assert.Equal(t, "from the store", sbRead(t, sb, "f"))
	assert.Equal(t, "untouched", sbRead(t, sb, "target.txt"))
	assert.Equal(t, "target.txt", stat(t, sb, "g").Link)
}

// testSizeLimit: files over MaxFileBytes are neither read nor stored, store entries over it are
// not hydrated; both are reported with the reason. A sparse 4 TiB file, and a link to it, are
// flushed without allocating it (adapters whose commands can make one).
func testSizeLimit(t *testing.T, e *env) {
	st, sb := e.store(t), e.sandbox(t)
	seed(t, st, "files", map[string]string{"big-in-store": strings.Repeat("s", 100), "small": "s"})
	s := newSync(t, sb, st, filesync.Options{MaxFileBytes: 50})
	rep, err := s.Hydrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"big-in-store"}, rep.Skipped)
	assert.Contains(t, rep.Reasons["big-in-store"], "limit")
	_, err = sb.ReadFile(ctx, "big-in-store")
	assert.ErrorIs(t, err, errs.NotFound)

	write(t, sb, "big", strings.Repeat("b", 51))
	write(t, sb, "fits", strings.Repeat("f", 50))
	for _, mode := range []filesync.Mode{filesync.ModeDiff, filesync.ModeFull} {
		s := newSync(t, sb, st, filesync.Options{MaxFileBytes: 50, Mode: mode})
		rep, err = s.Flush(ctx) // a fresh Sync: no bases, the same content is no conflict
		require.NoError(t, err, mode)
		assert.Equal(t, []string{"big"}, rep.Skipped, mode)
		assert.Contains(t, rep.Reasons["big"], "limit", mode)
		absent(t, st, "files", "big")
		assert.Equal(t, strings.Repeat("f", 50), read(t, st, "files", "fits"))
	}
	rep, err = s.Flush(ctx) // the Sync that hydrated: a known base, nothing deleted
	require.NoError(t, err)
	assert.Empty(t, rep.Deleted)

	c := caps(sb)
	if c.Exec == adapter.ExecInterpreted || c.FSIsolation == adapter.FSVirtual {
		return // no sparse files in an in-memory tree
	}
	sh(t, sb, "truncate -s 4398046511104 huge && ln -s huge hugelink")
	for _, mode := range []filesync.Mode{filesync.ModeDiff, filesync.ModeFull} {
		s2 := newSync(t, sb, st, filesync.Options{Mode: mode}) // the default limit
		rep, err = s2.Flush(ctx)
		require.NoError(t, err, mode)
		assert.Contains(t, rep.Skipped, "huge", mode)
		assert.Contains(t, rep.Reasons["huge"], "limit", mode)
		absent(t, st, "files", "huge")
		assert.Equal(t, "huge", read(t, st, "files", "hugelink"), "the link is stored as a link, never read through")
	}
}
