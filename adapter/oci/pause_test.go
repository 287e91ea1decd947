package oci_test

import (
	"context"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/oci"
)

// TestPause: a background counter stops while the sandbox is paused and goes on after resume,
// under each runtime (runc's and crun's cgroup freezer, gVisor's own).
func TestPause(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		adaptertest.CheckPause(t, newSandbox(t, rt, oci.Config{}))
	})
}

// BenchmarkPauseResume: one Pause and one Resume of a running container under each runtime
// (issue 38's figure: each ≤ 50 ms). go test -run '^$' -bench PauseResume ./adapter/oci/
func BenchmarkPauseResume(b *testing.B) {
	for _, rt := range []string{oci.Runc, oci.Crun, oci.Runsc} {
		b.Run(rt, func(b *testing.B) {
			sb := newSandbox(b, rt, oci.Config{})
			ctx := context.Background()
			for b.Loop() {
				if err := sb.Pause(ctx); err != nil {
					b.Fatal(err)
				}
				if err := sb.Resume(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
