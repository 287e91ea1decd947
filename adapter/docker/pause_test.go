package docker_test

import (
	"context"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/docker"
)

// TestPause: a background counter stops while the container is paused and goes on after resume.
func TestPause(t *testing.T) {
	t.Parallel()
	adaptertest.CheckPause(t, newSandbox(t, docker.Config{}))
}

// BenchmarkPauseResume: one Pause and one Resume of a running container (issue 38's figure:
// each ≤ 50 ms). go test -run '^$' -bench PauseResume ./adapter/docker/
func BenchmarkPauseResume(b *testing.B) {
	sb := newSandbox(b, docker.Config{})
	ctx := context.Background()
	for b.Loop() {
		if err := sb.Pause(ctx); err != nil {
			b.Fatal(err)
		}
		if err := sb.Resume(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
