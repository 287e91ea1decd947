package agent_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// serve runs an agent on the host over two pipes and returns a client of it. Closing the
// client's stream ends the agent, which must then have killed what it ran.
// The returned channel is closed when the agent has ended.
func serve(t *testing.T) (*agent.Client, <-chan struct{}) {
	t.Helper()
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	served := make(chan struct{})
	go func() {
		err := agent.Serve(toAgent, fromAgent)
		assert.NoError(t, err)
		fromAgent.Close()
		close(served)
	}()
	// Closing the client closes both directions, as closing a hijacked connection does.
	c := agent.NewClient(toClient, fromClient, closerFunc(func() error {
		fromClient.Close()
		return toClient.Close()
	}))
	t.Cleanup(func() {
		c.Close()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Error("agent did not end after its input closed")
		}
	})
	return c, served
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func run(t *testing.T, c *agent.Client, args ...string) (agent.Exit, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e, err := c.Run(context.Background(), agent.Spec{Start: agent.Start{Args: args}, Stdout: &out, Stderr: &errb}, nil, time.Second)
	require.NoError(t, err)
	return e, out.String(), errb.String()
}

func TestRunStreamsAndExitCodes(t *testing.T) {
	c, _ := serve(t)
	e, out, errOut := run(t, c, "/bin/sh", "-c", "echo out; echo err >&2; exit 3")
	assert.Equal(t, 3, e.Code)
	assert.Equal(t, "out\n", out)
	assert.Equal(t, "err\n", errOut)

	e, _, _ = run(t, c, "/bin/sh", "-c", "kill -9 $$")
	assert.Equal(t, 137, e.Code, "a signal is reported as 128+N, as a daemon exec does")

	e, _, errOut = run(t, c, "/no/such/program")
	assert.Equal(t, 126, e.Code)
	assert.NotEmpty(t, e.Error)
	assert.Contains(t, errOut, "sandboxer-agent:")
}

func TestDirAndEnv(t *testing.T) {
	c, _ := serve(t)
	dir := t.TempDir()
	var out bytes.Buffer
	e, err := c.Run(context.Background(), agent.Spec{
		Start:  agent.Start{Args: []string{"/bin/sh", "-c", `pwd; echo "$A $B"`}, Dir: dir, Env: []string{"A=1", "B=2", "A=3"}},
		Stdout: &out,
	}, nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, e.Code)
	assert.Equal(t, dir+"\n3 2\n", out.String(), "later entries win")
}

func TestStdinIsFlowControlled(t *testing.T) {
	c, _ := serve(t)
	data := make([]byte, 5<<20+123) // five windows and a bit
	rand.Read(data)
	var out bytes.Buffer
	e, err := c.Run(context.Background(), agent.Spec{
		Start: agent.Start{Args: []string{"cat"}}, Stdin: bytes.NewReader(data), Stdout: &out,
	}, nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, e.Code)
	assert.True(t, bytes.Equal(data, out.Bytes()), "binary stdin round-trips byte for byte (%d of %d bytes)", out.Len(), len(data))

	// A process that never reads its stdin ends the call; the rest is dropped.
	e, err = c.Run(context.Background(), agent.Spec{
		Start: agent.Start{Args: []string{"true"}}, Stdin: bytes.NewReader(data),
	}, nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, e.Code)
}

func TestConcurrentCalls(t *testing.T) {
	c, _ := serve(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			var out bytes.Buffer
			e, err := c.Run(context.Background(), agent.Spec{
				Start: agent.Start{Args: []string{"/bin/sh", "-c", "sleep 0.05; echo $0", strconv.Itoa(i)}}, Stdout: &out,
			}, nil, time.Second)
			assert.NoError(t, err)
			assert.Equal(t, 0, e.Code)
			assert.Equal(t, strconv.Itoa(i)+"\n", out.String(), "each call gets its own output")
		})
	}
	wg.Wait()
}

func TestBackgroundChildDoesNotHoldTheCall(t *testing.T) {
	c, _ := serve(t)
	start := time.Now()
	e, out, _ := run(t, c, "/bin/sh", "-c", "sleep 30 & echo started")
	assert.Equal(t, 0, e.Code)
	assert.Equal(t, "started\n", out)
	assert.Less(t, time.Since(start), 5*time.Second)
	// The sleeper is in the call's process group; the test ends it with the group.
	run(t, c, "/bin/sh", "-c", "pkill -f 'sleep 30$' || true")
}

func TestCancelRunsOnCancelAndWaits(t *testing.T) {
	c, _ := serve(t)
	dir := t.TempDir()
	pidFile := dir + "/pid"
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cancelled := false
	e, err := c.Run(ctx, agent.Spec{Start: agent.Start{Args: []string{"/bin/sh", "-c", "echo $$ >" + pidFile + "; exec sleep 30"}}},
		func() {
			cancelled = true
			b, _ := os.ReadFile(pidFile)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NotZero(t, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}, 5*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, cancelled)
	assert.Equal(t, 137, e.Code, "the exit of the killed process is still reported")
}

func TestClosingTheStreamKillsTheTree(t *testing.T) {
	c, served := serve(t)
	dir := t.TempDir()
	pidFile := dir + "/pids"
	tree := "t" + strconv.Itoa(os.Getpid())
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), agent.Spec{Start: agent.Start{
			Args: []string{"/bin/sh", "-c", `setsid sleep 30 & echo $! >>` + pidFile + `; echo $$ >>` + pidFile + `; wait`},
			Env:  []string{"SANDBOXER_EXEC_ID=" + tree},
			Tree: tree,
		}}, nil, time.Second)
		done <- err
	}()
	var pids []int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(pidFile)
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			p, _ := strconv.Atoi(f)
			pids = append(pids, p)
		}
		return len(pids) == 2
	}, 5*time.Second, 10*time.Millisecond)
	c.Close()
	require.ErrorIs(t, <-done, agent.ErrClosed)
	<-served
	for _, p := range pids {
		assert.Eventually(t, func() bool { return !alive(p) }, 5*time.Second, 20*time.Millisecond,
			"process %d (one left its group with setsid) is killed when the client goes away", p)
	}
}

// alive reports whether pid runs (a zombie waiting for its parent counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestRunAfterTheAgentEnded(t *testing.T) {
	c, served := serve(t)
	c.Close()
	<-served
	<-c.Done()
	_, err := c.Run(context.Background(), agent.Spec{Start: agent.Start{Args: []string{"true"}}}, nil, time.Second)
	require.Error(t, err)
	assert.True(t, errors.Is(err, agent.ErrClosed), "got %v", err)
}

func BenchmarkRunTrue(b *testing.B) {
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	go agent.Serve(toAgent, fromAgent)
	c := agent.NewClient(toClient, fromClient, fromClient)
	defer c.Close()
	for b.Loop() {
		if e, err := c.Run(context.Background(), agent.Spec{Start: agent.Start{Args: []string{"/bin/true"}}}, nil, time.Second); err != nil || e.Code != 0 {
			b.Fatal(err, e)
		}
	}
}
