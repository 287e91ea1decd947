//go:build linux && !sandboxer_portable

package local_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// BenchmarkRealWork is issue 35's real work (adaptertest.BenchmarkRealWork: go-gitdiff's tests,
// three files of Python's test suite, a make of SQLite's speedtest1) in isolated sandboxes of the
// default configuration but 4 GiB of memory (TMPDIR, half of it, holds a cold go test's work
// files), the caller's toolchain and caches as any sandbox gets them, against the same commands
// bare on the host. The caller's GOCACHE is a directory of the benchmark's, which the bare run
// warms: a new sandbox's first go test finds the project's packages built, as a user's finds
// what their own go test on the host left.
//
//	go test -run '^$' -bench RealWork -benchtime 2x ./adapter/local/
func BenchmarkRealWork(b *testing.B) {
	if !local.Probe().Available(local.LayerFSView) {
		b.Skip("no file system view here")
	}
	b.Setenv("GOCACHE", b.TempDir())
	adaptertest.BenchmarkRealWork(b, adaptertest.RealWorkSandbox{Name: "local", New: func(b *testing.B) adapter.Sandbox {
		sb, err := local.New(local.Config{Root: b.TempDir(), Memory: 4 << 30})
		if err != nil {
			b.Fatal(err)
		}
		return sb
	}})
}
