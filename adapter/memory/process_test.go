package memory_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func startSh(t *testing.T, sb *memory.Sandbox, script string) adapter.Process {
	t.Helper()
	p, err := sb.Start(context.Background(), adapter.Command{Args: []string{"sh", "-c", script}})
	require.NoError(t, err)
	return p
}

func waitDone(t *testing.T, p adapter.Process) adapter.ProcessState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := p.Wait(ctx)
	require.NoError(t, err)
	return st
}

// Background processes run under the limits of ExecuteCommand (but its time limit), and say
// which one ended them.
func TestProcessLimits(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, memory.Config{MaxCommands: 50, Timeout: 100 * time.Millisecond})
	p := startSh(t, sb, "while true; do :; done")
	st := waitDone(t, p)
	assert.Equal(t, "commands", st.Limit)
	assert.NotZero(t, st.ExitCode)
	out, err := p.Output(context.Background(), 0)
	require.NoError(t, err)
	assert.Contains(t, string(out.Stderr), string(errs.LimitExceeded), "the reason is on stderr")

	// Config.Timeout bounds ExecuteCommand, not a started process.
	p = startSh(t, sb, "sleep 0.5; echo slept")
	st = waitDone(t, p)
	assert.Equal(t, 0, st.ExitCode)

	_, err = memory.New(memory.Config{MaxProcesses: -1})
	assert.ErrorIs(t, err, errs.InvalidInput)
	small := newSandbox(t, memory.Config{MaxProcesses: 1})
	startSh(t, small, "sleep 60")
	_, err = small.Start(context.Background(), adapter.Command{Args: []string{"true"}})
	assert.ErrorIs(t, err, errs.LimitExceeded)
}

func TestProcessStopSignalUnsupported(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, memory.Config{})
	p := startSh(t, sb, "sleep 60")
	assert.ErrorIs(t, p.Signal(context.Background(), "STOP"), errs.InvalidInput)
	require.NoError(t, p.Signal(context.Background(), "sigint"))
	assert.Equal(t, 128+2, waitDone(t, p).ExitCode)
}

// Stop ends the background interpreters: no goroutine is left.
func TestProcessNoGoroutineLeaks(t *testing.T) {
	runtime.GC()
	before := runtime.NumGoroutine()
	sb, err := memory.New(memory.Config{})
	require.NoError(t, err)
	for range 5 {
		startSh(t, sb, "sleep 60 & cat")
		startSh(t, sb, "yes | head -c 1000000")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, sb.Stop(ctx))
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+2, "goroutines left behind")
}
