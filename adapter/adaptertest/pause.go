package adaptertest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
)

// CheckPause checks an adapter.Pauser from the outside: a background counter stops while sb is
// paused (its file, read through sb, does not move) and goes on from where it was after Resume;
// Pause of a paused sandbox and Resume of a running one are no-ops.
func CheckPause(t *testing.T, sb adapter.Sandbox) {
	t.Helper()
	p, ok := sb.(adapter.Pauser)
	require.True(t, ok, "the sandbox is an adapter.Pauser")
	starter, ok := sb.(adapter.Starter)
	require.True(t, ok, "the sandbox starts background processes")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	proc, err := starter.Start(ctx, adapter.Command{Args: []string{"sh", "-c",
		"i=0; while :; do i=$((i+1)); echo $i > n.tmp && mv n.tmp n; sleep 0.05; done"}})
	require.NoError(t, err)
	defer proc.Signal(context.WithoutCancel(ctx), "KILL")
	count := func() int {
		t.Helper()
		b, err := sb.ReadFile(ctx, "n")
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	require.Eventually(t, func() bool { return count() > 3 }, time.Minute, 50*time.Millisecond, "the counter runs")

	require.NoError(t, p.Pause(ctx))
	require.NoError(t, p.Pause(ctx), "pausing a paused sandbox is a no-op")
	frozen := count()
	time.Sleep(time.Second)
	assert.Equal(t, frozen, count(), "nothing runs while paused")

	require.NoError(t, p.Resume(ctx))
	require.NoError(t, p.Resume(ctx), "resuming a running sandbox is a no-op")
	require.Eventually(t, func() bool { return count() > frozen }, 30*time.Second, 50*time.Millisecond, "the counter goes on")
	assert.Less(t, count(), frozen+200, "from where it was, not from the start")
}
