package adaptertest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Long-running processes (adapter.Starter): started in one call, read, written, signalled and
// waited for in later ones, bounded in number and in kept output, and ended by Stop.

func (s *suite) testProcesses(t *testing.T) {
	sb := s.sandbox(t)
	if !caps(t, sb).Processes {
		t.Skip("the sandbox has no background processes (Capabilities.Processes)")
	}
	_, ok := sb.(adapter.Starter)
	require.True(t, ok, "Capabilities.Processes without adapter.Starter")
	t.Run("StartWaitOutput", s.testProcStartWait)
	t.Run("OffsetsLoseNothing", s.testProcOffsets)
	t.Run("FloodBoundedByRing", s.testProcFlood)
	t.Run("Stdin", s.testProcStdin)
	t.Run("Signal", s.testProcSignal)
	t.Run("ListAndFind", s.testProcList)
	t.Run("Limit", s.testProcLimit)
	t.Run("StartErrors", s.testProcStartErrors)
	t.Run("Timeout", s.testProcTimeout)
	t.Run("StopEndsThem", s.testProcStop)
}

func starter(t *testing.T, sb adapter.Sandbox) adapter.Starter {
	st, ok := sb.(adapter.Starter)
	require.True(t, ok)
	return st
}

func start(t *testing.T, sb adapter.Sandbox, script string) adapter.Process {
	t.Helper()
	p, err := starter(t, sb).Start(ctxT(t), adapter.Command{Args: []string{"sh", "-c", script}})
	require.NoError(t, err, "start sh -c %q", script)
	require.NotEmpty(t, p.ID())
	return p
}

// waitExit waits (generously: the machine may be loaded) for p to exit.
func waitExit(t *testing.T, p adapter.Process) adapter.ProcessState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := p.Wait(ctx)
	require.NoError(t, err, "process %s did not exit", p.ID())
	require.False(t, st.Running)
	return st
}

// readAll reads p's output from since until it has exited and nothing more comes, and returns
// what came, the number of calls and the dropped bytes.
func readAll(t *testing.T, p adapter.Process, since int64) (stdout, stderr []byte, calls int, dropped int64) {
	t.Helper()
	ctx := ctxT(t)
	for {
		out, err := p.Output(ctx, since)
		require.NoError(t, err)
		calls++
		require.GreaterOrEqual(t, out.Offset, since, "offsets never go back")
		stdout, stderr = append(stdout, out.Stdout...), append(stderr, out.Stderr...)
		dropped += out.Dropped
		since = out.Offset
		if !out.State.Running {
			// Running false and read up to Offset: nothing more may come.
			again, err := p.Output(ctx, since)
			require.NoError(t, err)
			assert.Empty(t, again.Stdout)
			assert.Empty(t, again.Stderr)
			assert.Equal(t, since, again.Offset)
			return stdout, stderr, calls, dropped
		}
		if len(out.Stdout)+len(out.Stderr) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (s *suite) testProcStartWait(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	// The read in the middle orders the two streams: bytes of two pipes that arrive together
	// have no order of their own.
	const script = "echo out; read x; echo err >&2; exit 3"
	p := start(t, sb, script)
	waitOutput(t, p, "out\n")
	require.NoError(t, p.Write(ctxT(t), []byte("go\n")))
	st := waitExit(t, p)
	assert.Equal(t, 3, st.ExitCode)
	assert.Equal(t, p.ID(), st.ID)
	assert.Equal(t, []string{"sh", "-c", script}, st.Args)
	assert.False(t, st.Started.IsZero())

	out, err := p.Output(ctxT(t), 0)
	require.NoError(t, err)
	assert.Equal(t, "out\n", string(out.Stdout))
	assert.Equal(t, "err\n", string(out.Stderr))
	assert.Equal(t, int64(8), out.Offset, "one offset counts both streams")
	assert.Zero(t, out.Dropped)
	assert.False(t, out.State.Running)
	assert.Equal(t, 3, out.State.ExitCode)

	// Offsets order the streams: from 4 on, only stderr's line is left.
	out, err = p.Output(ctxT(t), 4)
	require.NoError(t, err)
	assert.Empty(t, out.Stdout)
	assert.Equal(t, "err\n", string(out.Stderr))
	// Beyond the end: nothing, and the end.
	out, err = p.Output(ctxT(t), 1000)
	require.NoError(t, err)
	assert.Empty(t, out.Stdout)
	assert.Empty(t, out.Stderr)
	assert.Equal(t, int64(8), out.Offset)

	state, err := p.State(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, st, state)

	// A live copy goes to Command.Stdout while the process runs.
	var live syncBuffer
	p2, err := starter(t, sb).Start(ctxT(t), adapter.Command{Args: []string{"echo", "copy"}, Stdout: &live})
	require.NoError(t, err)
	assert.Equal(t, 0, waitExit(t, p2).ExitCode)
	assert.Equal(t, "copy\n", live.String())
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader on two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// 1,000 reads of a process that prints on both streams between them: every line comes exactly
// once, in order.
func (s *suite) testProcOffsets(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	const rounds = 1000
	p := start(t, sb, `while read n; do for i in 0 1 2 3; do echo "o$n.$i"; echo "e$n.$i" >&2; done; done`)
	ctx := ctxT(t)
	var stdout, stderr []byte
	var since int64
	for n := range rounds {
		require.NoError(t, p.Write(ctx, []byte(fmt.Sprintf("%d\n", n))))
		out, err := p.Output(ctx, since)
		require.NoError(t, err)
		require.GreaterOrEqual(t, out.Offset, since)
		require.Zero(t, out.Dropped)
		stdout, stderr = append(stdout, out.Stdout...), append(stderr, out.Stderr...)
		since = out.Offset
	}
	require.NoError(t, p.CloseStdin(ctx))
	o, e, _, dropped := readAll(t, p, since)
	stdout, stderr = append(stdout, o...), append(stderr, e...)
	assert.Zero(t, dropped)
	var wantOut, wantErr strings.Builder
	for n := range rounds {
		for i := range 4 {
			fmt.Fprintf(&wantOut, "o%d.%d\n", n, i)
			fmt.Fprintf(&wantErr, "e%d.%d\n", n, i)
		}
	}
	assert.True(t, wantOut.String() == string(stdout), "stdout: %d bytes, want %d", len(stdout), wantOut.Len())
	assert.True(t, wantErr.String() == string(stderr), "stderr: %d bytes, want %d", len(stderr), wantErr.Len())
	assert.Equal(t, 0, waitExit(t, p).ExitCode)
}

// A flood keeps the last adapter.ProcessRingBytes of the stream, and says how much went.
func (s *suite) testProcFlood(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	const produced = 5 << 20
	p := start(t, sb, fmt.Sprintf("yes 0123456789abcdef | head -c %d; echo tail >&2", produced))
	assert.Equal(t, 0, waitExit(t, p).ExitCode)
	out, err := p.Output(ctxT(t), 0)
	require.NoError(t, err)
	assert.Len(t, out.Stdout, adapter.ProcessRingBytes)
	assert.Equal(t, "tail\n", string(out.Stderr), "a flood on stdout does not push stderr out")
	assert.Equal(t, int64(produced+5), out.Offset)
	assert.Equal(t, int64(produced-adapter.ProcessRingBytes), out.Dropped)
	line := "0123456789abcdef\n"
	skip := (produced - adapter.ProcessRingBytes) % len(line)
	want := strings.Repeat(line, adapter.ProcessRingBytes/len(line)+2)[skip:][:adapter.ProcessRingBytes]
	assert.True(t, want == string(out.Stdout), "the ring holds the newest bytes, in order")

	if ol, ok := p.(adapter.OutputLimiter); ok {
		got, err := ol.OutputLimit(ctxT(t), 0, 1000)
		require.NoError(t, err)
		assert.Len(t, got.Stdout, 1000, "a limited read starts at the oldest byte held")
		assert.Equal(t, out.Stdout[:1000], got.Stdout)
		assert.Equal(t, out.Dropped+1000, got.Offset)
		assert.Equal(t, out.Dropped, got.Dropped)
		assert.True(t, got.State.Running == false)
	}
}

func (s *suite) testProcStdin(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	p := start(t, sb, "cat; echo done")
	ctx := ctxT(t)
	require.NoError(t, p.Write(ctx, []byte("hello\n")))
	waitOutput(t, p, "hello\n")
	require.NoError(t, p.Write(ctx, []byte("world\n")))
	require.NoError(t, p.CloseStdin(ctx))
	assert.ErrorIs(t, p.Write(ctx, []byte("late\n")), errs.InvalidInput, "stdin is closed")
	assert.Equal(t, 0, waitExit(t, p).ExitCode)
	out, err := p.Output(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, "hello\nworld\ndone\n", string(out.Stdout))
	assert.ErrorIs(t, p.Write(ctx, []byte("x")), errs.InvalidInput, "the process has exited")
	assert.NoError(t, p.CloseStdin(ctx), "closing twice is fine")

	// A Write to a process that does not read is bounded by its context.
	p2 := start(t, sb, "sleep 60")
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	big := bytes.Repeat([]byte("x"), 4<<20)
	assert.ErrorIs(t, p2.Write(wctx, big), context.DeadlineExceeded)
	require.NoError(t, p2.Signal(ctx, "KILL"))
	waitExit(t, p2)
}

// waitOutput polls p's stdout until it is want (generous deadline).
func waitOutput(t *testing.T, p adapter.Process, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := p.Output(ctxT(t), 0)
		require.NoError(t, err)
		if string(out.Stdout) == want {
			return
		}
		require.True(t, time.Now().Before(deadline), "stdout is %q, waiting for %q", out.Stdout, want)
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *suite) testProcSignal(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	p := start(t, sb, "echo up; sleep 60")
	waitOutput(t, p, "up\n")
	assert.ErrorIs(t, p.Signal(ctx, "BOGUS"), errs.InvalidInput)
	require.NoError(t, p.Signal(ctx, "TERM"))
	st := waitExit(t, p)
	if caps(t, sb).Signals {
		assert.Equal(t, 128+15, st.ExitCode, "killed by SIGTERM")
	} else {
		assert.NotZero(t, st.ExitCode)
	}
	assert.NoError(t, p.Signal(ctx, "KILL"), "signalling an exited process is not an error")

	p = start(t, sb, "sleep 60")
	require.NoError(t, p.Signal(ctx, "KILL"))
	st = waitExit(t, p)
	if caps(t, sb).Signals {
		assert.Equal(t, 128+9, st.ExitCode)
	}
}

func (s *suite) testProcList(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	st := starter(t, sb)
	ctx := ctxT(t)
	done := start(t, sb, "exit 0")
	waitExit(t, done)
	running := start(t, sb, "sleep 60")
	list, err := st.Processes(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, done.ID(), list[0].ID, "oldest first")
	assert.False(t, list[0].Running)
	assert.Equal(t, running.ID(), list[1].ID)
	assert.True(t, list[1].Running)
	assert.NotEqual(t, done.ID(), running.ID())

	found, err := st.Process(ctx, running.ID())
	require.NoError(t, err)
	assert.Equal(t, running.ID(), found.ID())
	require.NoError(t, found.Signal(ctx, "KILL"))
	waitExit(t, running)

	_, err = st.Process(ctx, "no-such-process")
	assert.ErrorIs(t, err, errs.NotFound)
}

func (s *suite) testProcLimit(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	st := starter(t, sb)
	ctx := ctxT(t)
	var procs []adapter.Process
	for range adapter.DefaultMaxProcesses {
		procs = append(procs, start(t, sb, "sleep 60"))
	}
	_, err := st.Start(ctx, adapter.Command{Args: []string{"sleep", "60"}})
	require.ErrorIs(t, err, errs.LimitExceeded)
	require.NoError(t, procs[0].Signal(ctx, "KILL"))
	waitExit(t, procs[0])
	procs = append(procs, start(t, sb, "sleep 60")) // a slot is free again
	// One at a time: once more than DefaultMaxProcesses have exited, the oldest is forgotten,
	// and a handle of the agent's adapters then finds nothing to wait for (errs.NotFound).
	for _, p := range procs {
		require.NoError(t, p.Signal(ctx, "KILL"))
		waitExit(t, p)
	}
	// Exited processes are kept for their output, at most DefaultMaxProcesses of them.
	list, err := st.Processes(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(list), adapter.DefaultMaxProcesses)
	assert.Equal(t, procs[len(procs)-1].ID(), list[len(list)-1].ID)
}

func (s *suite) testProcStartErrors(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	st := starter(t, sb)
	ctx := ctxT(t)
	_, err := st.Start(ctx, adapter.Command{})
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = st.Start(ctx, adapter.Command{Args: []string{"cat"}, Stdin: strings.NewReader("x")})
	assert.ErrorIs(t, err, errs.InvalidInput, "stdin is written with Process.Write")
	_, err = st.Start(ctx, adapter.Command{Args: []string{"no-such-program-sandboxer"}})
	assert.ErrorIs(t, err, errs.ProcessFailed)
	_, err = st.Start(ctx, adapter.Command{Args: []string{"true"}, Dir: "../.."})
	assert.ErrorIs(t, err, errs.PathEscape)
	list, err := st.Processes(ctx)
	require.NoError(t, err)
	assert.Empty(t, list, "failed starts are not listed")
}

func (s *suite) testProcTimeout(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	p, err := starter(t, sb).Start(ctxT(t), adapter.Command{Args: []string{"sh", "-c", "sleep 60"}, Timeout: time.Second})
	require.NoError(t, err)
	st := waitExit(t, p)
	assert.NotZero(t, st.ExitCode, "Command.Timeout ends a started process")
}

func (s *suite) testProcStop(t *testing.T) {
	t.Parallel()
	sb := s.h.New(t)
	st := starter(t, sb)
	ctx := ctxT(t)
	p := start(t, sb, "echo up; sleep 60 & sleep 60")
	waitOutput(t, p, "up\n")
	require.NoError(t, sb.Stop(ctx))
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if st2, err := p.Wait(wctx); err == nil {
		assert.False(t, st2.Running)
		assert.NotZero(t, st2.ExitCode)
	} else {
		assert.ErrorIs(t, err, errs.SandboxUnavailable, "after Stop, a handle says the process exited, or that the sandbox is gone")
	}
	_, err := st.Start(ctx, adapter.Command{Args: []string{"true"}})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}
