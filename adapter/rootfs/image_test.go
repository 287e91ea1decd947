package rootfs_test

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/rootfs"
)

// layerOf is a layer of the given entries (a regular file's body is its Linkname field's text
// when Typeflag is TypeReg).
func layerOf(t *testing.T, hs ...tar.Header) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body, h.Linkname = h.Linkname, ""
			h.Size = int64(len(body))
		}
		require.NoError(t, tw.WriteHeader(&h))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}

// An image's layers flattened by go-containerregistry land as the upper layer says (whiteouts,
// opaque directories), without set-user-ID bits or devices, hard links to a lower layer's file
// made, mount points added where missing, directories read-only but /tmp.
func TestUnpackImage(t *testing.T) {
	lower := layerOf(t,
		tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		tar.Header{Name: "etc/gone", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "lower"},
		tar.Header{Name: "etc/kept", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "kept"},
		tar.Header{Name: "opaque/old", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "old"},
		tar.Header{Name: "bin/su", Typeflag: tar.TypeReg, Mode: 0o4755, Linkname: "setuid"},
		tar.Header{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
	)
	upper := layerOf(t,
		tar.Header{Name: "etc/.wh.gone", Typeflag: tar.TypeReg, Mode: 0o644},
		tar.Header{Name: "opaque/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o644},
		tar.Header{Name: "opaque/new", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "new"},
		tar.Header{Name: "etc/hard", Typeflag: tar.TypeLink, Linkname: "etc/kept"},
		tar.Header{Name: "lib", Typeflag: tar.TypeSymlink, Linkname: "usr/lib"},
		tar.Header{Name: "usr/lib/x", Typeflag: tar.TypeReg, Mode: 0o755, Linkname: "x"},
	)
	var layers []v1.Layer
	for _, r := range []io.Reader{lower, upper} {
		data, err := io.ReadAll(r)
		require.NoError(t, err)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		require.NoError(t, err)
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "tree")
	t.Cleanup(func() { rootfs.RemoveTree(dir) })
	rc := mutate.Extract(img)
	defer rc.Close()
	require.NoError(t, rootfs.UnpackImage(rc, dir, rootfs.MountPoints{Dirs: []string{"proc", "tmp", "etc"}, Files: []string{".agent", "etc/hosts", "lib"}}))

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	assert.Equal(t, "kept", read("etc/kept"))
	assert.Equal(t, "kept", read("etc/hard"), "a hard link to a lower layer's file")
	assert.Equal(t, "new", read("opaque/new"))
	assert.Equal(t, "x", read("lib/x"), "through the link")
	for _, gone := range []string{"etc/gone", "etc/.wh.gone", "opaque/old", "opaque/.wh..wh..opq", "dev/null"} {
		_, err := os.Lstat(filepath.Join(dir, gone))
		assert.ErrorIs(t, err, fs.ErrNotExist, gone)
	}
	mode := func(name string) fs.FileMode {
		fi, err := os.Lstat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		return fi.Mode()
	}
	assert.Equal(t, fs.FileMode(0o755), mode("bin/su"), "no set-user-ID bit")
	assert.Equal(t, fs.ModeDir|0o555, mode("etc"))
	assert.Equal(t, fs.ModeDir|0o555, mode("."))
	assert.Equal(t, fs.ModeDir|0o555, mode("proc"), "a mount point made")
	assert.Equal(t, fs.ModeDir|fs.ModeSticky|0o777, mode("tmp"))
	assert.Equal(t, fs.FileMode(0o644), mode(".agent"))
	assert.Equal(t, fs.FileMode(0o644), mode("etc/hosts"))
	assert.Equal(t, fs.ModeSymlink, mode("lib")&fs.ModeType, "a path the image has is left as it is")
}

// A tree unpacked when the mount points were fewer (before HOME) gets those it lacks added,
// read-only as the unpack makes them; what it had is left as it was.
func TestAddMountPoints(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writing in a read-only tree needs root")
	}
	dir := filepath.Join(t.TempDir(), "tree")
	t.Cleanup(func() { rootfs.RemoveTree(dir) })
	old := rootfs.MountPoints{Dirs: []string{"proc", "tmp", "workspace"}, Files: []string{"etc/hosts"}}
	require.NoError(t, rootfs.UnpackImage(layerOf(t, tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}), dir, old))
	now := rootfs.MountPoints{Dirs: append(old.Dirs, "home", "home/sandbox"), Files: old.Files}
	assert.True(t, rootfs.HasMountPoints(dir, old))
	assert.False(t, rootfs.HasMountPoints(dir, now))

	require.NoError(t, rootfs.AddMountPoints(dir, now))
	assert.True(t, rootfs.HasMountPoints(dir, now))
	for _, d := range []string{".", "home", "home/sandbox", "workspace"} {
		fi, err := os.Stat(filepath.Join(dir, d))
		require.NoError(t, err)
		assert.Equal(t, fs.ModeDir|0o555, fi.Mode(), d)
	}
	fi, err := os.Stat(filepath.Join(dir, "tmp"))
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|fs.ModeSticky|0o777, fi.Mode(), "tmp as it was")
	require.NoError(t, rootfs.AddMountPoints(dir, now), "nothing more to add")
}
