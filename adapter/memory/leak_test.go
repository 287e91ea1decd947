package memory_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoGoroutineLeaks: pipes, redirections read only in part, background jobs, timeouts and
// stdin that is never read all end with their call.
func TestNoGoroutineLeaks(t *testing.T) {
	sb := newSandbox(t, memory.Config{})
	ctx := context.Background()
	_, err := run(t, sb, "head -c 1000000 /dev/zero > big; seq 1 100000 > nums")
	require.NoError(t, err)
	runtime.GC()
	before := runtime.NumGoroutine()
	big := make([]byte, 1<<20)
	for range 3 {
		for _, script := range []string{
			"head -n 1 < nums", "read x < nums; echo $x", "head -c 10 < big", "yes | head -n 1", "cat < /dev/zero | head -c 10",
			"sleep 30 & echo bg", "(sleep 30; echo late > late) &", "x=$(<nums); echo ${#x}",
			"while read l; do break; done < nums", "cat /dev/stdin | head -c 1",
		} {
			_, err := run(t, sb, script)
			require.NoError(t, err, script)
		}
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "sleep 30"}, Timeout: 50 * time.Millisecond})
		require.Error(t, err)
		_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}, Stdin: &endless{big}})
		require.NoError(t, err)
		_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"head", "-c", "5"}, Stdin: &endless{big}})
		require.NoError(t, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("goroutines before %d after %d", before, runtime.NumGoroutine())
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+2, "goroutines left behind")
}

// endless is a stdin that never ends.
type endless struct{ b []byte }

func (e *endless) Read(p []byte) (int, error) { return copy(p, e.b), nil }
