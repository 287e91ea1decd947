package filesync_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
)

// The figures of docs/filesync.md. Each benchmark family measures its baseline in the same run:
//
//	go test ./sync/filesync/ -run '^$' -bench . -benchtime 20x
//
// The workspace is 10,000 files in 100 directories, 100 MiB in all, generated once per run.

const (
	benchFiles = 10000
	benchBytes = 100 << 20
)

var (
	benchOnce sync.Once
	benchDir  string // generated workspace, removed by TestMain
	benchData []benchFile
)

type benchFile struct {
	path string
	data []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func benchPath(i int) string { return fmt.Sprintf("d%02d/s%d/f%05d.dat", i%10, (i/10)%10, i) }

// benchWorkspace returns the generated workspace (read-only to callers) and its files.
func benchWorkspace(b *testing.B) (string, []benchFile) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "filesync-bench-")
		if err != nil {
			b.Fatal(err)
		}
		per := benchBytes / benchFiles
		rng := rand.NewChaCha8([32]byte{1})
		for i := range benchFiles {
			size := per - 1000 + i%2000 // sizes vary around the mean, total ~100 MiB
			if i%2 == 1 {
				size = per + 1000 - i%2000
			}
			data := make([]byte, size)
			rng.Read(data)
			p := filepath.Join(dir, benchPath(i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
			benchData = append(benchData, benchFile{benchPath(i), data})
		}
		benchDir = dir
	})
	if benchDir == "" {
		b.Fatal("workspace generation failed")
	}
	return benchDir, benchData
}

func totalBytes(files []benchFile) int64 {
	var n int64
	for _, f := range files {
		n += int64(len(f.data))
	}
	return n
}

// walkLstat is the baseline walk: filepath.WalkDir and an Lstat of every entry.
func walkLstat(b *testing.B, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := d.Info(); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// syncedWorkspace returns a Sync of the bench workspace whose store already holds everything and
// whose stat cache is warm.
func syncedWorkspace(b *testing.B, store string, mode filesync.Mode) (*filesync.Sync, filesync.Store) {
	dir, _ := benchWorkspace(b)
	st := filesynctest.Stores[store](b, b.TempDir())
	b.Cleanup(func() { st.Close() })
	sb, err := local.New(local.Config{Root: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sb.Stop(context.Background()) })
	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}, Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	for range 2 { // upload, then a second flush so nothing is racy any more
		if _, err := s.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	return s, st
}

func BenchmarkFlushNoChange(b *testing.B) {
	dir, _ := benchWorkspace(b)
	b.Run("baseline=WalkDir+Lstat", func(b *testing.B) {
		for b.Loop() {
			if n := walkLstat(b, dir); n != benchFiles {
				b.Fatalf("walked %d files", n)
			}
		}
	})
	for _, store := range []string{"sqlitestore", "dirstore"} {
		b.Run("flush/"+store, func(b *testing.B) {
			s, _ := syncedWorkspace(b, store, filesync.ModeDiff)
			for b.Loop() {
				rep, err := s.Flush(context.Background())
				if err != nil || rep.Hashed != 0 || rep.Listed != benchFiles {
					b.Fatalf("flush: %v %+v", err, rep)
				}
			}
		})
	}
}

func BenchmarkFlush10Changed(b *testing.B) {
	dir, files := benchWorkspace(b)
	changed := make([]string, 10)
	for i := range changed {
		changed[i] = files[i*997].path
	}
	// Restore the generated content afterwards: the workspace is shared by the benchmarks.
	b.Cleanup(func() {
		for i := range changed {
			os.WriteFile(filepath.Join(dir, changed[i]), files[i*997].data, 0o644)
		}
	})
	for _, store := range []string{"sqlitestore", "dirstore"} {
		b.Run("baseline=flush-nochange+hash10/"+store, func(b *testing.B) {
			s, _ := syncedWorkspace(b, store, filesync.ModeDiff)
			for b.Loop() {
				if _, err := s.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
				for _, p := range changed {
					data, err := os.ReadFile(filepath.Join(dir, p))
					if err != nil {
						b.Fatal(err)
					}
					sha256.Sum256(data)
				}
			}
		})
		b.Run("flush/"+store, func(b *testing.B) {
			s, _ := syncedWorkspace(b, store, filesync.ModeDiff)
			round := 0
			for b.Loop() {
				b.StopTimer()
				round++
				for i, p := range changed {
					data := files[i*997].data
					data[0] = byte(round) // same size, new content
					if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				rep, err := s.Flush(context.Background())
				if err != nil || len(rep.Updated) != 10 {
					b.Fatalf("flush: %v %+v", err, rep)
				}
			}
		})
	}
}

func BenchmarkFullFlush(b *testing.B) {
	_, files := benchWorkspace(b)
	total := totalBytes(files)
	b.Run("baseline=sha256-1core", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			for _, f := range files {
				sha256.Sum256(f.data)
			}
		}
	})
	for _, store := range []string{"sqlitestore", "dirstore"} {
		b.Run("flush/"+store, func(b *testing.B) {
			s, _ := syncedWorkspace(b, store, filesync.ModeFull)
			b.SetBytes(total)
			for b.Loop() {
				rep, err := s.Flush(context.Background())
				if err != nil || rep.Hashed != benchFiles {
					b.Fatalf("flush: %v %+v", err, rep)
				}
			}
		})
	}
}

func BenchmarkHydrate(b *testing.B) {
	_, files := benchWorkspace(b)
	total := totalBytes(files)
	b.Run("baseline=os.WriteFile", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			b.StopTimer()
			dst := b.TempDir()
			b.StartTimer()
			made := map[string]bool{}
			for _, f := range files {
				p := filepath.Join(dst, f.path)
				if d := filepath.Dir(p); !made[d] {
					if err := os.MkdirAll(d, 0o755); err != nil {
						b.Fatal(err)
					}
					made[d] = true
				}
				if err := os.WriteFile(p, f.data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, store := range []string{"sqlitestore", "dirstore"} {
		b.Run("hydrate/"+store, func(b *testing.B) {
			_, st := syncedWorkspace(b, store, filesync.ModeDiff)
			b.SetBytes(total)
			for b.Loop() {
				b.StopTimer()
				sb, err := local.New(local.Config{Root: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				h, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				rep, err := h.Hydrate(context.Background())
				if err != nil || rep.Written != benchFiles {
					b.Fatalf("hydrate: %v %+v", err, rep)
				}
				b.StopTimer()
				_ = sb.Stop(context.Background())
				b.StartTimer()
			}
		})
	}
}
