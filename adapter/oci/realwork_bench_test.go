package oci_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/oci"
)

// BenchmarkRealWork is issue 35's real work (adaptertest.BenchmarkRealWork) in sandboxes of the
// Debian toolchain image (from the local docker daemon, unpacked once) under each runtime, against
// the same commands bare on the host, each sandbox with no CPU limit, 4 GiB of memory and a 1 GiB
// /tmp (a cold go test compiles the standard library there: the default 64 MiB is too small):
// `go test -run '^$' -bench RealWork -benchtime 2x ./adapter/oci/`.
func BenchmarkRealWork(b *testing.B) {
	img := debianImage(b)
	var kinds []adaptertest.RealWorkSandbox
	for _, rt := range oci.Runtimes {
		kinds = append(kinds, adaptertest.RealWorkSandbox{Name: rt, New: func(b *testing.B) adapter.Sandbox {
			return newSandbox(b, rt, oci.Config{Image: img, MemoryBytes: 4 << 30, TmpBytes: 1 << 30, MilliCPUs: -1})
		}})
	}
	adaptertest.BenchmarkRealWork(b, kinds...)
}
