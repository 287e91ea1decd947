package adaptertest

import (
	"sync"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testKindsAndModes: Lister, Statter and TreeReader report the kind (file, symlink with its
// target text) and the executable bit.
func (s *suite) testKindsAndModes(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	c := caps(t, sb)
	require.NoError(t, sb.WriteFile(ctx, "run.sh", []byte("#!/bin/sh\necho ran\n")))
	require.NoError(t, sb.WriteFile(ctx, "d/plain.txt", []byte("plain")))
	shOK(t, sb, "chmod +x run.sh")
	links := map[string]string{}
	if c.Symlinks {
		shOK(t, sb, "ln -s run.sh l && ln -s /etc/passwd out && ln -s ../d d/self")
		links = map[string]string{"l": "run.sh", "out": "/etc/passwd", "d/self": "../d"}
	}
	if l, ok := sb.(adapter.Lister); ok {
		files, err := l.ListFiles(ctx, "")
		require.NoError(t, err)
		got := map[string]string{}
		for _, f := range files {
			switch {
			case f.IsLink():
				got[f.Path] = "link " + f.Link
				assert.False(t, f.Executable(), f.Path)
			case f.Executable():
				got[f.Path] = "exec"
			case f.Mode.IsRegular():
				got[f.Path] = "file"
			default:
				got[f.Path] = f.Mode.String()
			}
		}
		want := map[string]string{"run.sh": "exec", "d/plain.txt": "file"}
		for p, target := range links {
			want[p] = "link " + target
		}
		assert.Equal(t, want, got, "regular files with the executable bit, links with their text, never followed")
	}
	st, hasStat := sb.(adapter.Statter)
	if hasStat {
		fi, err := st.StatFile(ctx, "run.sh")
		require.NoError(t, err)
		assert.True(t, fi.Executable())
		fi, err = st.StatFile(ctx, "d/plain.txt")
		require.NoError(t, err)
		assert.False(t, fi.Executable())
		if c.Symlinks {
			fi, err = st.StatFile(ctx, "l")
			require.NoError(t, err)
			assert.True(t, fi.IsLink())
			assert.Equal(t, "run.sh", fi.Link)
			_, err = st.StatFile(ctx, "out")
			assert.ErrorIs(t, err, errs.PathEscape, "a link leading outside is refused like any path through it")
		}
	}
	if tr, ok := sb.(adapter.TreeReader); ok {
		var mu sync.Mutex
		got := map[string]string{}
		require.NoError(t, tr.ReadTree(ctx, "", 2, nil, func(fi adapter.FileInfo, data []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if fi.IsLink() {
				assert.Nil(t, data, fi.Path)
				got[fi.Path] = "link " + fi.Link
			} else {
				got[fi.Path] = string(data)
			}
			return nil
		}))
		want := map[string]string{"run.sh": "#!/bin/sh\necho ran\n", "d/plain.txt": "plain"}
		for p, target := range links {
			want[p] = "link " + target
		}
		assert.Equal(t, want, got)
	}

}

// testModeWriter: ModeWriter sets the executable bit and makes links, in the jail, replacing what
// is there.
func (s *suite) testModeWriter(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	c := caps(t, sb)
	mw, ok := sb.(adapter.ModeWriter)
	if !ok {
		t.Skip("adapter.ModeWriter not implemented")
	}
	st, hasStat := sb.(adapter.Statter)
	require.NoError(t, sb.WriteFile(ctx, "run.sh", []byte("#!/bin/sh\necho ran\n")))
	require.NoError(t, sb.WriteFile(ctx, "d/plain.txt", []byte("plain")))
	require.NoError(t, mw.SetExecutable(ctx, "run.sh", true))
	require.NoError(t, mw.SetExecutable(ctx, "run.sh", false))
	require.NoError(t, mw.SetExecutable(ctx, "d/plain.txt", true))
	if hasStat {
		fi, err := st.StatFile(ctx, "run.sh")
		require.NoError(t, err)
		assert.Equal(t, "-rw-r--r--", fi.Mode.String())
		fi, err = st.StatFile(ctx, "d/plain.txt")
		require.NoError(t, err)
		assert.Equal(t, "-rwxr-xr-x", fi.Mode.String())
	}
	if c.Exec != adapter.ExecInterpreted {
		res := sh(t, sb, "./run.sh")
		assert.Equal(t, 126, res.ExitCode, "run.sh is not executable any more")
		require.NoError(t, mw.SetExecutable(ctx, "run.sh", true))
		res = shOK(t, sb, "./run.sh")
		assert.Equal(t, "ran\n", string(res.Stdout))
	}
	assert.ErrorIs(t, mw.SetExecutable(ctx, "missing", true), errs.NotFound)
	assert.ErrorIs(t, mw.SetExecutable(ctx, "../x", true), errs.PathEscape)
	assert.ErrorIs(t, mw.SetExecutable(ctx, "d", true), errs.NotFound, "a directory")

	// Symlink: made in the jail, replacing what is there, its text stored as given.
	require.NoError(t, mw.Symlink(ctx, "m/n/link", "../../run.sh"))
	got, err := sb.ReadFile(ctx, "m/n/link")
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\necho ran\n", string(got))
	require.NoError(t, mw.Symlink(ctx, "d/plain.txt", "../run.sh"), "replaces a file")
	require.NoError(t, mw.Symlink(ctx, "m/n/link", "elsewhere"), "replaces a link")
	if hasStat {
		fi, err := st.StatFile(ctx, "d/plain.txt")
		require.NoError(t, err)
		assert.True(t, fi.IsLink())
		assert.Equal(t, "../run.sh", fi.Link)
		fi, err = st.StatFile(ctx, "m/n/link")
		require.NoError(t, err)
		assert.Equal(t, "elsewhere", fi.Link)
	}
	assert.ErrorIs(t, mw.SetExecutable(ctx, "d/plain.txt", true), errs.NotFound, "a link is not followed")
	assert.ErrorIs(t, mw.Symlink(ctx, "../out", "x"), errs.PathEscape)
	assert.ErrorIs(t, mw.Symlink(ctx, "e", ""), errs.InvalidInput)
	assert.ErrorIs(t, mw.Symlink(ctx, "m", "x"), errs.InvalidInput, "a directory is in the way")
	if c.Symlinks {
		// A parent that leads outside is refused; nothing is made there.
		shOK(t, sb, "ln -s /tmp outdir")
		assert.ErrorIs(t, mw.Symlink(ctx, "outdir/planted", "x"), errs.PathEscape)
	}
}
