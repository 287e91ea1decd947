//go:build linux && !sandboxer_portable

package local_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// BenchmarkCacheGoTest: a new sandbox's first `go test -count=1` of a small package (fmt,
// strings, testing), with the caller's warm GOCACHE shown copy-on-write (caches=on) and without
// it (caches=off: the standard library is built again), next to the same go test on the host
// with the same warm cache (baseline), and a new sandbox's `true` (what the sandbox itself
// costs). Each iteration makes a new sandbox and stops it.
//
//	go test -run '^$' -bench CacheGoTest -benchtime 3x ./adapter/local/
func BenchmarkCacheGoTest(b *testing.B) {
	if !local.Probe().Available(local.LayerFSView) {
		b.Skip("no file system view here")
	}
	mod := b.TempDir()
	for name, data := range goModuleFiles {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	tmp := b.TempDir()
	b.Setenv("GOCACHE", filepath.Join(tmp, "gocache"))
	b.Setenv("GOMODCACHE", filepath.Join(tmp, "gomodcache"))
	if err := os.MkdirAll(os.Getenv("GOMODCACHE"), 0o755); err != nil {
		b.Fatal(err)
	}
	for range 2 { // warm
		if out, err := hostGo(mod, "test", "-count=1", "."); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	b.Run("baseline=host", func(b *testing.B) {
		for b.Loop() {
			if out, err := hostGo(mod, "test", "-count=1", "."); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
	// What a new sandbox costs around any command (made, its helper and view started, stopped).
	b.Run("sandbox/true", func(b *testing.B) {
		for b.Loop() {
			sb, err := local.New(local.Config{Root: mod})
			if err != nil {
				b.Fatal(err)
			}
			if res, err := sb.ExecuteCommand(b.Context(), adapter.Command{Args: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatalf("%v: %s", err, res.Stderr)
			}
			if err := sb.Stop(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, caches := range []bool{true, false} {
		name := map[bool]string{true: "caches=on", false: "caches=off"}[caches]
		b.Run("sandbox/"+name, func(b *testing.B) {
			for b.Loop() {
				sb, err := local.New(local.Config{Root: mod, NoCaches: !caches})
				if err != nil {
					b.Fatal(err)
				}
				res, err := sb.ExecuteCommand(b.Context(), adapter.Command{Args: []string{"go", "test", "-count=1", "."}, Timeout: 10 * 60e9})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v: %s", err, res.Stderr)
				}
				if err := sb.Stop(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
