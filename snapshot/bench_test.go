package snapshot_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/snapshot"
)

// Issue 38's figures, each next to its baseline in the same run (docs/snapshots.md):
//
//	go test -run '^$' -bench . -benchtime 5x ./snapshot/
//
// The workspace: 10,000 files, 100 MB (10,000 bytes each, incompressible, 100 directories),
// on the local adapter.
const (
	benchFiles    = 10000
	benchFileSize = 10000
)

// benchTree writes the workspace into a new temporary directory.
func benchTree(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, benchFileSize)
	for i := range benchFiles {
		for j := 0; j < len(buf); j += 8 {
			v := r.Uint64()
			for k := 0; k < 8 && j+k < len(buf); k++ {
				buf[j+k] = byte(v >> (8 * k))
			}
		}
		dir := filepath.Join(root, fmt.Sprintf("pkg%02d", i%100))
		if i < 100 {
			require.NoError(b, os.MkdirAll(dir, 0o755))
		}
		require.NoError(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.dat", i)), buf, 0o644))
	}
	ageTree(b, root)
	return root
}

func run(b *testing.B, name string, args ...string) {
	b.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(b, err, string(out))
}

// The first snapshot of the workspace against `tar -cf` of it.
func BenchmarkFirstSnapshot(b *testing.B) {
	root := benchTree(b)
	ctx := context.Background()
	sb := newLocal(b, root)
	b.Run("tar", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "ws.tar")
		for b.Loop() {
			run(b, "tar", "-cf", out, "-C", root, ".")
		}
	})
	for _, nosync := range []bool{false, true} {
		name := "snapshot"
		if nosync {
			name = "snapshot-nosync"
		}
		b.Run(name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				b.StopTimer()
				c, err := snapshot.Open(filepath.Join(b.TempDir(), strconv.Itoa(i)), snapshot.Options{NoSync: nosync})
				require.NoError(b, err)
				i++
				b.StartTimer()
				_, err = c.Take(ctx, sb, "first")
				require.NoError(b, err)
			}
		})
	}
}

// The next snapshot after 10 files changed.
func BenchmarkNextSnapshot(b *testing.B) {
	root := benchTree(b)
	ctx := context.Background()
	sb := newLocal(b, root)
	c, err := snapshot.Open(b.TempDir(), snapshot.Options{})
	require.NoError(b, err)
	_, err = c.Take(ctx, sb, "s0")
	require.NoError(b, err)
	i := 0
	for b.Loop() {
		b.StopTimer()
		for j := range 10 {
			p := fmt.Sprintf("pkg%02d/f%05d.dat", j, j*100+j)
			require.NoError(b, sb.WriteFile(ctx, p, []byte(fmt.Sprintf("change %d of %d", i, j))))
		}
		i++
		b.StartTimer()
		m, err := c.Take(ctx, sb, "s"+strconv.Itoa(i))
		require.NoError(b, err)
		b.StopTimer()
		// The first takes re-read files that were too recent to cache; later ones read 10.
		b.ReportMetric(float64(m.Read), "files-read")
		b.StartTimer()
	}
}

// A restore (written, then read back and verified) against `tar -xf`.
func BenchmarkRestore(b *testing.B) {
	root := benchTree(b)
	ctx := context.Background()
	src := newLocal(b, root)
	c, err := snapshot.Open(b.TempDir(), snapshot.Options{})
	require.NoError(b, err)
	_, err = c.Take(ctx, src, "s")
	require.NoError(b, err)
	archive := filepath.Join(b.TempDir(), "ws.tar")
	run(b, "tar", "-cf", archive, "-C", root, ".")
	b.Run("untar", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dst := b.TempDir()
			b.StartTimer()
			run(b, "tar", "-xf", archive, "-C", dst)
		}
	})
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dst := newLocal(b, "")
			b.StartTimer()
			require.NoError(b, c.Restore(ctx, "s", dst, snapshot.RestoreOptions{}))
		}
	})
}

// ForkN 8 ways against one restore.
func BenchmarkFork(b *testing.B) {
	root := benchTree(b)
	ctx := context.Background()
	src := newLocal(b, root)
	c, err := snapshot.Open(b.TempDir(), snapshot.Options{})
	require.NoError(b, err)
	_, err = c.Take(ctx, src, "s")
	require.NoError(b, err)
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				sbs := make([]adapter.Sandbox, n)
				for i := range sbs {
					sbs[i] = newLocal(b, "")
				}
				b.StartTimer()
				require.NoError(b, c.RestoreMany(ctx, "s", sbs, snapshot.RestoreOptions{}))
			}
		})
	}
}
