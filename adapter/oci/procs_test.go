package oci_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
)

// A background process of a persistent sandbox belongs to its PID 1 agent: the handle that started
// it detaches, another handle (through an exec'd agent that relays to PID 1) finds it, writes to
// it, reads its output and kills it.
func TestBackgroundProcessOutlivesItsHandle(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		sb := newSandbox(t, rt, oci.Config{Persist: true})
		p, err := sb.Start(ctx, adapter.Command{Args: []string{"sh", "-c", `echo ready; while read l; do echo "got $l"; done`}})
		require.NoError(t, err)
		readUntil(t, p, "ready")

		other, err := oci.Attach(ctx, oci.Config{StateDir: stateDir}, sb.ID())
		require.NoError(t, err)
		defer other.Detach()
		list, err := other.Processes(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, p.ID(), list[0].ID)
		assert.True(t, list[0].Running)
		q, err := other.Process(ctx, p.ID())
		require.NoError(t, err)
		require.NoError(t, q.Write(ctx, []byte("hello\n")))
		readUntil(t, q, "got hello")
		require.NoError(t, other.Detach())

		// The first handle sees the same process, and kills it.
		require.NoError(t, p.Signal(ctx, "TERM"))
		st, err := p.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, 128+15, st.ExitCode)
		_, err = sb.Process(ctx, "p999")
		assert.ErrorIs(t, err, errs.NotFound)
	})
}

func readUntil(t *testing.T, p adapter.Process, want string) {
	t.Helper()
	var got strings.Builder
	var since int64
	require.Eventually(t, func() bool {
		o, err := p.Output(ctxT(t), since)
		require.NoError(t, err)
		got.Write(o.Stdout)
		since = o.Offset
		return strings.Contains(got.String(), want)
	}, 30*time.Second, 20*time.Millisecond, "output so far: %q", got.String())
}
