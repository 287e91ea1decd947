package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/errs"
)

// readUntil reads p's output from since until stdout holds want (or 30 s pass).
func readUntil(t *testing.T, p adapter.Process, since int64, want string) int64 {
	t.Helper()
	var got strings.Builder
	require.Eventually(t, func() bool {
		o, err := p.Output(ctxT(t), since)
		require.NoError(t, err)
		got.Write(o.Stdout)
		since = o.Offset
		return strings.Contains(got.String(), want)
	}, 30*time.Second, 20*time.Millisecond, "output so far: %q", got.String())
	return since
}

// A background process of a persistent sandbox belongs to the container's agent: the handle that
// started it detaches, another handle (another process, as a later CLI call) finds it, writes to
// it, reads its output and kills it.
func TestBackgroundProcessOutlivesItsHandle(t *testing.T) {
	t.Parallel()
	needDocker(t)
	ctx := ctxT(t)
	sb, err := docker.New(ctx, docker.Config{Persist: true})
	require.NoError(t, err)
	id := sb.ID()
	t.Cleanup(func() {
		if other, err := docker.Attach(context.Background(), docker.Config{}, id); err == nil {
			other.Stop(context.Background())
		}
	})
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"sh", "-c", `echo ready; while read l; do echo "got $l"; done`}})
	require.NoError(t, err)
	readUntil(t, p, 0, "ready")
	require.NoError(t, sb.Detach())
	_, err = sb.Processes(ctx)
	assert.ErrorIs(t, err, errs.SandboxUnavailable, "a detached handle is done")

	other, err := docker.Attach(ctx, docker.Config{}, id)
	require.NoError(t, err)
	list, err := other.Processes(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, p.ID(), list[0].ID)
	assert.True(t, list[0].Running)

	q, err := other.Process(ctx, p.ID())
	require.NoError(t, err)
	require.NoError(t, q.Write(ctx, []byte("hello\n")))
	readUntil(t, q, 0, "got hello")
	require.NoError(t, q.Signal(ctx, "KILL"))
	st, err := q.Wait(ctx)
	require.NoError(t, err)
	assert.False(t, st.Running)
	assert.Equal(t, 128+9, st.ExitCode)

	_, err = other.Process(ctx, "p999")
	assert.ErrorIs(t, err, errs.NotFound)
	require.NoError(t, other.Stop(ctx))
}
