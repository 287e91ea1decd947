package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/hostileagent"
	"github.com/sandboxer/sandboxer/errs"
)

// What the adapters make of a hostile agent (hostileagent: a peer speaking the agent's wire
// format over two real pipes in place of the agent).

// runOver is what the adapters pass Execute: the spec run over the agent, a violation mapped.
func runOver(c *agent.Client) func(ctx context.Context, spec agent.Spec) (int, error) {
	return func(ctx context.Context, spec agent.Spec) (int, error) {
		ex, err := c.Run(ctx, spec, nil, time.Second)
		if errors.Is(err, agent.ErrProtocol) {
			return 0, Broken("exec", err)
		}
		return ex.Code, err
	}
}

// A command's output is the one thing an honest agent sends without bound (a command may print
// forever): it goes into the command's capped buffers and is truncated as documented, however
// much comes. Not parallel: the allocation count is the process's.
func TestOutputFloodIsTruncatedInBoundedMemory(t *testing.T) {
	c, p := hostileagent.New(t)
	cmd := adapter.Command{Args: []string{"yes"}, MaxOutputBytes: 1 << 20}
	type ret struct {
		res adapter.Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := Execute(context.Background(), "exec", cmd, ".", nil, adapter.Isolation{}, runOver(c))
		done <- ret{res, err}
	}()
	typ, id, _ := p.Read(t)
	require.Equal(t, agent.FrameStart, typ)
	exit, _ := json.Marshal(agent.Exit{Code: 0})
	var got ret
	var dropped int64
	alloc := hostileagent.Allocated(func() {
		sent, err := p.Flood(agent.FrameStdout, id, 2<<30) // 2 GiB of output (frames and all)
		require.NoError(t, err)
		require.NoError(t, p.Send(agent.FrameExit, id, exit))
		dropped = sent/(agent.MaxPayload+9)*agent.MaxPayload - 1<<20
		got = <-done
	})
	require.NoError(t, got.err)
	assert.Len(t, got.res.Stdout, 1<<20)
	assert.True(t, got.res.StdoutTruncated)
	assert.Equal(t, dropped, got.res.StdoutDropped)
	assert.Less(t, alloc, uint64(64<<20), "the output was held")
}

// A result past its bound ends the link: the call fails with SANDBOX_UNAVAILABLE, and so does
// every later one, without reaching the agent.
func TestResultFloodIsSandboxUnavailable(t *testing.T) {
	t.Parallel()
	c, p := hostileagent.New(t)
	s := &Starter{Client: func(context.Context, string) (*agent.Client, error) { return c, nil }}
	done := make(chan error, 1)
	go func() {
		_, err := s.Processes(context.Background())
		done <- err
	}()
	_, id, _ := p.Read(t)
	sent, _ := p.Flood(agent.FrameResultPart, id, 2<<30)
	assert.Less(t, sent, int64(2<<30))
	err := <-done
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
	assert.ErrorIs(t, err, agent.ErrProtocol)

	_, err = s.Processes(context.Background())
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
	_, err = Execute(context.Background(), "exec", adapter.Command{Args: []string{"true"}}, ".", nil, adapter.Isolation{}, runOver(c))
	assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
}
