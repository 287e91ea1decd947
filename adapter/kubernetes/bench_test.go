package kubernetes_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
)

// The figures (README): create to first command finished without a pool (< 3 s), a warm
// pool's claim to first command (< 100 ms; the pool's own process, whose ready pods keep their
// agent stream open), and an exec round trip of `true` through the agent
// (<= 2x the docker adapter's, measured in the same run by BenchmarkExecTrueDocker).
//
//	go test -run '^$' -bench . -benchtime 20x ./adapter/kubernetes/

func BenchmarkColdCreate(b *testing.B) {
	needCluster(b)
	ctx := context.Background()
	for b.Loop() {
		sb, err := kubernetes.New(ctx, base)
		require.NoError(b, err)
		_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		require.NoError(b, err)
		b.StopTimer()
		require.NoError(b, sb.Stop(ctx))
		b.StartTimer()
	}
}

func BenchmarkPoolClaim(b *testing.B) {
	p := newPool(b, "bench", 2)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		require.Eventually(b, func() bool { return p.Warm() > 0 }, 3*time.Minute, 10*time.Millisecond)
		b.StartTimer()
		sb, err := p.Claim(ctx)
		require.NoError(b, err)
		_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		require.NoError(b, err)
		b.StopTimer()
		require.NoError(b, sb.Stop(ctx))
		b.StartTimer()
	}
}

func benchExecTrue(b *testing.B, sb adapter.Sandbox) {
	ctx := context.Background()
	cmd := adapter.Command{Args: []string{"true"}}
	_, err := sb.ExecuteCommand(ctx, cmd) // the agent stream is up
	require.NoError(b, err)
	for b.Loop() {
		if _, err := sb.ExecuteCommand(ctx, cmd); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecTrue(b *testing.B) { benchExecTrue(b, newSandbox(b, base)) }

func BenchmarkExecTrueDocker(b *testing.B) {
	ctx := context.Background()
	sb, err := docker.New(ctx, docker.Config{})
	if err != nil {
		b.Skip("docker:", err)
	}
	b.Cleanup(func() { sb.Stop(context.Background()) })
	benchExecTrue(b, sb)
}
