package kubernetes_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/errs"
)

// waitReady waits until the pool has n ready pods.
func waitReady(t testing.TB, p *kubernetes.Pool, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, err := p.Ready(context.Background())
		return err == nil && got >= n
	}, 3*time.Minute, 100*time.Millisecond, "the pool never had %d ready pods", n)
}

func newPool(t testing.TB, name string, size int) *kubernetes.Pool {
	t.Helper()
	needCluster(t)
	p, err := kubernetes.NewPool(ctxT(t), base, name, size)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, p.Close(ctx))
	})
	return p
}

// 20 concurrent claims on a pool of 5 ready pods: 5 win, each a different pod, the others find
// the pool empty; a claimed pod works and is no longer in the pool.
func TestPoolConcurrentClaims(t *testing.T) {
	const size, claimers = 5, 20
	p := newPool(t, "claims-"+time.Now().Format("150405"), size)
	waitReady(t, p, size)
	name := p.Name()

	var mu sync.Mutex
	var got []*kubernetes.Sandbox
	empty := 0
	var wg sync.WaitGroup
	for range claimers {
		wg.Go(func() {
			sb, err := kubernetes.Claim(ctxT(t), base, name)
			mu.Lock()
			defer mu.Unlock()
			if errs.CodeOf(err) == errs.NotFound {
				empty++
				return
			}
			if assert.NoError(t, err) {
				got = append(got, sb)
			}
		})
	}
	wg.Wait()
	// The pool refills in the background only on its own claims: these were the package's.
	ids := map[string]bool{}
	for _, sb := range got {
		t.Cleanup(func() { sb.Stop(context.Background()) })
		assert.False(t, ids[sb.ID()], "pod %s claimed twice", sb.ID())
		ids[sb.ID()] = true
	}
	assert.Len(t, got, size)
	assert.Equal(t, claimers-size, empty)
	res, err := got[0].ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", "echo claimed"}})
	require.NoError(t, err)
	assert.Equal(t, "claimed\n", string(res.Stdout))
	infos, err := kubernetes.List(ctxT(t), base)
	require.NoError(t, err)
	for _, i := range infos {
		if ids[i.ID] {
			assert.Empty(t, i.Pool, "a claimed pod leaves the pool")
		}
	}
}

// Pool.Claim takes a ready pod, falls back to a new one when the pool is empty, and refills.
func TestPoolClaimAndRefill(t *testing.T) {
	p := newPool(t, "refill-"+time.Now().Format("150405"), 1)
	waitReady(t, p, 1)
	ctx := ctxT(t)
	a, err := p.Claim(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { a.Stop(context.Background()) })
	b, err := p.Claim(ctx) // the pool is being refilled: this one may be cold
	require.NoError(t, err)
	t.Cleanup(func() { b.Stop(context.Background()) })
	assert.NotEqual(t, a.ID(), b.ID())
	waitReady(t, p, 1)
	for _, sb := range []*kubernetes.Sandbox{a, b} {
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		require.NoError(t, err)
		assert.Equal(t, 0, res.ExitCode)
	}
}
