package snapshot_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/snapshot"
)

// Issue 38's figures, each next to its baseline in the same run (docs/snapshots.md):
//
//	go test -run '^$' -bench . -benchtime 5x ./snapshot/
//
// Each reports its baseline's and its own milliseconds per operation and their ratio.
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

// benchTaken writes the workspace and snapshots it as "s" in a new catalog.
func benchTaken(b *testing.B) (string, adapter.Sandbox, *snapshot.Catalog) {
	root := benchTree(b)
	sb := newLocal(b, root)
	c, err := snapshot.Open(b.TempDir(), snapshot.Options{})
	require.NoError(b, err)
	_, err = c.Take(context.Background(), sb, "s")
	require.NoError(b, err)
	return root, sb, c
}

func run(b *testing.B, name string, args ...string) {
	b.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(b, err, string(out))
}

// pair times a baseline and the operation measured against it, alternately in each iteration
// (the machine is shared: alternating keeps both under the same load), and reports each one's
// milliseconds per operation and their ratio.
type pair struct {
	names []string
	sums  []time.Duration
}

func (p *pair) time(i int, fn func()) {
	start := time.Now()
	fn()
	p.sums[i] += time.Since(start)
}

func (p *pair) report(b *testing.B) {
	n := float64(b.N)
	for i, name := range p.names {
		b.ReportMetric(float64(p.sums[i].Milliseconds())/n, name+"-ms")
		if i > 0 {
			b.ReportMetric(float64(p.sums[i])/float64(p.sums[0]), name+"/"+p.names[0])
		}
	}
}

func newPair(names ...string) *pair {
	return &pair{names: names, sums: make([]time.Duration, len(names))}
}

// The first snapshot of the workspace against `tar -cf` of it (written to the same disk).
func BenchmarkFirstSnapshot(b *testing.B) {
	root := benchTree(b)
	ctx := context.Background()
	sb := newLocal(b, root)
	out := filepath.Join(b.TempDir(), "ws.tar")
	p := newPair("tar", "snapshot", "snapshot-nosync")
	i := 0
	b.ResetTimer()
	for b.Loop() {
		p.time(0, func() { run(b, "tar", "-cf", out, "-C", root, ".") })
		for k, nosync := range []bool{false, true} {
			c, err := snapshot.Open(filepath.Join(b.TempDir(), strconv.Itoa(i)), snapshot.Options{NoSync: nosync})
			require.NoError(b, err)
			i++
			p.time(1+k, func() {
				_, err = c.Take(ctx, sb, "first")
			})
			require.NoError(b, err)
		}
	}
	p.report(b)
}

// The next snapshot after 10 files changed.
func BenchmarkNextSnapshot(b *testing.B) {
	_, sb, c := benchTaken(b)
	ctx := context.Background()
	var err error
	i := 0
	p := newPair("next")
	for b.Loop() {
		for j := range 10 {
			p := fmt.Sprintf("pkg%02d/f%05d.dat", j, j*100+j)
			require.NoError(b, sb.WriteFile(ctx, p, []byte(fmt.Sprintf("change %d of %d", i, j))))
		}
		i++
		var m snapshot.Manifest
		p.time(0, func() { m, err = c.Take(ctx, sb, "s"+strconv.Itoa(i)) })
		require.NoError(b, err)
		require.Equal(b, 10, m.Read)
	}
	p.report(b)
}

// A restore (written, then read back and verified) against `tar -xf`.
func BenchmarkRestore(b *testing.B) {
	root, _, c := benchTaken(b)
	ctx := context.Background()
	var err error
	archive := filepath.Join(b.TempDir(), "ws.tar")
	run(b, "tar", "-cf", archive, "-C", root, ".")
	// The adapter's own floor: the same files written by its WriteFiles (atomic per file: a
	// temporary file renamed into place), 256 a call, on 4 goroutines, nothing read back.
	var batches [][]adapter.File
	var cur []adapter.File
	for i := range benchFiles {
		p := fmt.Sprintf("pkg%02d/f%05d.dat", i%100, i)
		data, err := os.ReadFile(filepath.Join(root, p))
		require.NoError(b, err)
		cur = append(cur, adapter.File{Path: p, Data: data})
		if len(cur) == 256 {
			batches, cur = append(batches, cur), nil
		}
	}
	batches = append(batches, cur)
	p := newPair("untar", "restore", "adapter-write")
	for b.Loop() {
		dir := b.TempDir()
		p.time(0, func() { run(b, "tar", "-xf", archive, "-C", dir) })
		dst := newLocal(b, "")
		p.time(1, func() { err = c.Restore(ctx, "s", dst, snapshot.RestoreOptions{}) })
		require.NoError(b, err)
		raw := newLocal(b, "")
		p.time(2, func() {
			var wg sync.WaitGroup
			next := make(chan []adapter.File)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for batch := range next {
						if err := raw.WriteFiles(ctx, batch); err != nil {
							panic(err)
						}
					}
				}()
			}
			for _, batch := range batches {
				next <- batch
			}
			close(next)
			wg.Wait()
		})
	}
	p.report(b)
}

// ForkN 8 ways against one restore.
func BenchmarkFork(b *testing.B) {
	_, _, c := benchTaken(b)
	ctx := context.Background()
	var err error
	p := newPair("restore", "fork8")
	for b.Loop() {
		one := newLocal(b, "")
		p.time(0, func() { err = c.Restore(ctx, "s", one, snapshot.RestoreOptions{}) })
		require.NoError(b, err)
		var sbs []adapter.Sandbox
		p.time(1, func() {
			sbs, err = c.ForkN(ctx, "s", 8, func(context.Context, int) (adapter.Sandbox, error) {
				return local.New(localConfig(b.TempDir()))
			})
		})
		require.NoError(b, err)
		for _, sb := range sbs {
			sb.Stop(ctx)
		}
	}
	p.report(b)
}
