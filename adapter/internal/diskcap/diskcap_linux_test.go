package diskcap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
)

func needCap(t *testing.T) {
	t.Helper()
	if err := diskcap.Check(); err != nil {
		t.Skip("workspaces cannot be capped here:", err)
	}
}

// A write past the cap fails with ENOSPC, the host loses at most about the cap, and Release
// leaves no mount, loop device or file; a second Release is a no-op.
func TestMountCapsAndReleases(t *testing.T) {
	needCap(t)
	base := t.TempDir()
	image, dir := filepath.Join(base, diskcap.ImageName), filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(dir, 0o755))
	const size = 32 << 20
	require.NoError(t, diskcap.Mount(context.Background(), image, dir, size, 1000, 1000))
	t.Cleanup(func() { diskcap.Release(image, dir) })
	assert.True(t, diskcap.Mounted(image, dir))
	assert.Len(t, diskcap.Loops(image), 1)
	assert.InDelta(t, size, diskcap.Capacity(dir), size/10)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.EqualValues(t, 1000, fi.Sys().(*syscall.Stat_t).Uid, "the root is the sandbox user's")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "no lost+found")

	f, err := os.Create(filepath.Join(dir, "fill"))
	require.NoError(t, err)
	chunk := make([]byte, 1<<20)
	var werr error
	for i := 0; i < 2*size>>20 && werr == nil; i++ {
		_, werr = f.Write(chunk)
	}
	if werr == nil {
		werr = f.Sync()
	}
	f.Close()
	require.Error(t, werr)
	assert.True(t, errors.Is(werr, syscall.ENOSPC), "%v", werr)
	syscall.Sync()
	// What the host lost is the image's allocation: measured on the image itself, since the
	// host's free space also moves with whatever else writes to that file system meanwhile
	// (CI's race stage runs the oci tests beside this package).
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(image, &st))
	assert.Less(t, st.Blocks*512, int64(size+size/4), "the host lost at most about the cap")

	require.NoError(t, diskcap.Release(image, dir))
	assert.False(t, diskcap.MountedAt(dir))
	assert.Empty(t, diskcap.Loops(image))
	assert.NoFileExists(t, image)
	require.NoError(t, diskcap.Release(image, dir))
}

// Release leaves alone a mount at dir that is not image's.
func TestReleaseOnlyItsOwn(t *testing.T) {
	needCap(t)
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	require.NoError(t, diskcap.Release(filepath.Join(base, diskcap.ImageName), dir))
	assert.True(t, diskcap.MountedAt(dir))
}

func TestLayer(t *testing.T) {
	assert.Equal(t, "disk:10GiB", diskcap.Layer(10<<30))
	assert.Equal(t, "disk:64MiB", diskcap.Layer(64<<20))
	assert.Equal(t, "disk:5000000", diskcap.Layer(5_000_000))
}

// BenchmarkMount: making a 10 GiB workspace file system (sparse file, mkfs.ext4, loop device,
// mount) and releasing it, the part of a sandbox's creation and Stop the cap adds.
func BenchmarkMount(b *testing.B) {
	if err := diskcap.Check(); err != nil {
		b.Skip(err)
	}
	base := b.TempDir()
	image, dir := filepath.Join(base, diskcap.ImageName), filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var release time.Duration
	for b.Loop() {
		if err := diskcap.Mount(context.Background(), image, dir, 10<<30, 1000, 1000); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		start := time.Now()
		if err := diskcap.Release(image, dir); err != nil {
			b.Fatal(err)
		}
		release += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(release.Nanoseconds())/float64(b.N), "release-ns")
}
