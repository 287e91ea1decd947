package adaptertest

import (
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/hostileagent"
	"github.com/sandboxer/sandboxer/errs"
)

// AgentHook makes c the agent stream of sb's handle in place of its own (an adapter's test hook,
// e.g. docker.UseAgent) and returns the function that closes the replaced one.
type AgentHook func(sb adapter.Sandbox, c *agent.Client) (restore func())

// CheckProtocolBreaker checks what an agent-backed adapter makes of an agent that breaks the
// protocol (issue 34: the agent is on the sandbox's side of the trust boundary), each scenario on
// a fresh sandbox of newSandbox whose agent use replaces with a hostile peer
// (adapter/internal/hostileagent):
//
//   - BadFrame: the peer answers a command with a malformed exit frame;
//   - ResultFlood: the peer answers Processes with a result far past agent.MaxResult, which the
//     host stops reading at its bound.
//
// Either way the call fails with SANDBOX_UNAVAILABLE (wrapping agent.ErrProtocol), and so does
// every later call that needs the agent, without reaching it: the peer gets no other frame and its
// stream is closed, no other agent is started and nothing falls back to another way in (the
// sandbox would answer those in the agent's place). The memory the host spends on a flood is
// measured where it is alone (adapter/agent's TestHostileResultFloodIsRefusedInBoundedMemory);
// here the bound shows as the bytes the peer got through.
func CheckProtocolBreaker(t *testing.T, newSandbox func(t *testing.T) adapter.Sandbox, use AgentHook) {
	t.Run("BadFrame", func(t *testing.T) {
		t.Parallel()
		sb, p, ctx := hostileSandbox(t, newSandbox, use)
		done := make(chan error, 1)
		go func() {
			_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
			done <- err
		}()
		typ, id, _ := p.Read(t)
		require.Equal(t, agent.FrameStart, typ, "the command went to the agent")
		require.NoError(t, p.Send(agent.FrameExit, id, []byte("{")))
		err := <-done
		assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
		assert.ErrorIs(t, err, agent.ErrProtocol)
		checkAgentBroken(t, ctx, sb, p, id)
	})
	t.Run("ResultFlood", func(t *testing.T) {
		t.Parallel()
		sb, p, ctx := hostileSandbox(t, newSandbox, use)
		st, ok := sb.(adapter.Starter)
		require.True(t, ok, "an agent-backed sandbox keeps background processes")
		done := make(chan error, 1)
		go func() {
			_, err := st.Processes(ctx)
			done <- err
		}()
		typ, id, _ := p.Read(t)
		require.Equal(t, agent.FrameRequest, typ, "the listing went to the agent")
		const total = 2 << 30
		sent, _ := p.Flood(agent.FrameResultPart, id, total)
		assert.Less(t, sent, int64(agent.MaxResult+1<<20), "the host stopped reading at the result's bound")
		err := <-done
		assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%v", err)
		assert.ErrorIs(t, err, agent.ErrProtocol)
		checkAgentBroken(t, ctx, sb, p, id)
	})
}

// hostileSandbox returns a fresh sandbox whose agent (once it answered a command) is replaced
// by the returned peer, and the context of the test's calls.
func hostileSandbox(t *testing.T, newSandbox func(t *testing.T) adapter.Sandbox, use AgentHook) (adapter.Sandbox, *hostileagent.Peer, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	sb := newSandbox(t)
	require.NoError(t, sb.WriteFile(ctx, "kept", []byte("kept\n")))
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "kept"}})
	require.NoError(t, err)
	require.Equal(t, "kept\n", string(res.Stdout), "the sandbox's own agent answers")
	c, p := hostileagent.New(t)
	t.Cleanup(use(sb, c))
	// A call that did not reach the peer fails the test instead of hanging it.
	require.NoError(t, p.In.SetReadDeadline(time.Now().Add(time.Minute)))
	return sb, p, ctx
}

// checkAgentBroken checks that every call that needs sb's agent fails with SANDBOX_UNAVAILABLE
// once its agent (the peer p) broke the protocol answering call id, that none reached p (p got
// no frame of another call), and that p's stream is closed. A file read may work when the adapter reads the workspace on the host (oci): then it
// returns the file, not an agent's answer.
func checkAgentBroken(t *testing.T, ctx context.Context, sb adapter.Sandbox, p *hostileagent.Peer, id uint32) {
	t.Helper()
	unavailable := func(what string, err error) {
		t.Helper()
		assert.Equal(t, errs.SandboxUnavailable, errs.CodeOf(err), "%s: %v", what, err)
		assert.ErrorIs(t, err, agent.ErrProtocol, what)
	}
	for range 2 {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		unavailable("exec", err)
	}
	if st, ok := sb.(adapter.Starter); ok {
		_, err := st.Start(ctx, adapter.Command{Args: []string{"sleep", "1"}})
		unavailable("start", err)
		_, err = st.Processes(ctx)
		unavailable("processes", err)
	}
	if pf, ok := sb.(adapter.PortForwarder); ok {
		_, err := pf.DialPort(ctx, 80)
		unavailable("dial", err)
	}
	if data, err := sb.ReadFile(ctx, "kept"); err != nil {
		unavailable("read", err)
	} else {
		assert.Equal(t, "kept\n", string(data), "read on the host")
	}
	rest, err := io.ReadAll(p.In)
	assert.NoError(t, err, "the broken agent's stream is closed")
	for len(rest) >= 9 {
		assert.Equal(t, id, binary.BigEndian.Uint32(rest[1:5]), "a frame of another call (type %q) reached the broken agent", rest[0])
		rest = rest[min(len(rest), 9+int(binary.BigEndian.Uint32(rest[5:9]))):]
	}
	assert.Empty(t, rest, "whole frames")
}
