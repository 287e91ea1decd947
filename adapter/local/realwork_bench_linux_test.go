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
// bare on the host:
//
//	go test -run '^$' -bench RealWork -benchtime 2x ./adapter/local/
func BenchmarkRealWork(b *testing.B) {
	if !local.Probe().Available(local.LayerFSView) {
		b.Skip("no file system view here")
	}
	adaptertest.BenchmarkRealWork(b, adaptertest.RealWorkSandbox{Name: "local", New: func(b *testing.B) adapter.Sandbox {
		sb, err := local.New(local.Config{Root: b.TempDir(), Memory: 4 << 30})
		if err != nil {
			b.Fatal(err)
		}
		return sb
	}})
}
