package agent_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/hostileagent"
)

// The host's side of the agent protocol against a hostile agent: a peer that speaks the wire
// format over two real pipes and sends what no honest agent does.

type peer = hostileagent.Peer

var (
	hostile    = hostileagent.New
	frameBytes = hostileagent.Frame
	allocated  = hostileagent.Allocated
)

// requireBroken checks that err is a protocol violation's and that the client now fails at once.
func requireBroken(t *testing.T, c *agent.Client, err error) {
	t.Helper()
	require.ErrorIs(t, err, agent.ErrProtocol)
	require.ErrorIs(t, err, agent.ErrClosed)
	require.ErrorIs(t, c.Violation(), agent.ErrProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = c.Request(ctx, agent.Request{Op: "list"})
	require.ErrorIs(t, err, agent.ErrProtocol)
	_, err = c.Run(ctx, agent.Spec{Start: agent.Start{Args: []string{"true"}}}, nil, time.Second)
	require.ErrorIs(t, err, agent.ErrProtocol)
}

// requireStopped checks that the client closed the agent's stream: the peer's writes fail with
// EPIPE (a client that only stopped reading would make them block, until the deadline).
func requireStopped(t *testing.T, p *peer) {
	t.Helper()
	p.Out.SetWriteDeadline(time.Now().Add(5 * time.Second))
	f := frameBytes(agent.FrameStdout, 1, make([]byte, agent.MaxPayload))
	var err error
	for err == nil {
		_, err = p.Out.Write(f)
	}
	require.ErrorIs(t, err, syscall.EPIPE)
}

// Not parallel: the allocation counts are the process's.
func TestHostileResultFloodIsRefusedInBoundedMemory(t *testing.T) {
	c, p := hostile(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, agent.Request{Op: "list"})
		res <- err
	}()
	typ, id, _ := p.Read(t)
	require.Equal(t, agent.FrameRequest, typ)
	var sent int64
	alloc := allocated(func() {
		sent, _ = p.Flood(agent.FrameResultPart, id, 2<<30)
		<-res
	})
	<-c.Done()
	t.Logf("sent %d bytes before the client closed the stream; %d bytes allocated", sent, alloc)
	assert.Less(t, sent, int64(2<<30), "the client took the whole 2 GiB")
	assert.Less(t, alloc, uint64(64<<20), "the client held the flood")
	_, err := c.Request(context.Background(), agent.Request{Op: "list"})
	requireBroken(t, c, err)
	requireStopped(t, p)
}

func TestHostileOversizedFrameIsRefusedOnItsHeader(t *testing.T) {
	c, p := hostile(t)
	res := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), agent.Request{Op: "list"})
		res <- err
	}()
	_, id, _ := p.Read(t)
	var err error
	alloc := allocated(func() {
		var h [9]byte
		h[0] = agent.FrameResult
		binary.BigEndian.PutUint32(h[1:5], id)
		binary.BigEndian.PutUint32(h[5:], 0xFFFFFFFF) // 4 GiB announced, never sent
		_, werr := p.Out.Write(h[:])
		require.NoError(t, werr)
		err = <-res
	})
	assert.Less(t, alloc, uint64(1<<20), "the client allocated for the announced frame")
	requireBroken(t, c, err)
	requireStopped(t, p)
}

func TestHostileConcurrentResultsAreBoundedTogether(t *testing.T) {
	c, p := hostile(t)
	n := agent.MaxResultsHeld/(agent.MaxResult-agent.MaxPayload) + 1
	errc := make(chan error, n)
	ids := make([]uint32, n)
	for i := range n {
		go func() {
			_, err := c.Request(context.Background(), agent.Request{Op: "list"})
			errc <- err
		}()
		_, ids[i], _ = p.Read(t)
	}
	// Every result stays under MaxResult; together they pass MaxResultsHeld.
	part := make([]byte, agent.MaxPayload)
	for range agent.MaxResult/agent.MaxPayload - 1 {
		for _, id := range ids {
			if p.Send(agent.FrameResultPart, id, part) != nil {
				break
			}
		}
	}
	for range n {
		err := <-errc
		require.ErrorIs(t, err, agent.ErrProtocol)
	}
	requireBroken(t, c, c.Violation())
}

// TestHostileFramesEndTheLink sends one frame no honest agent sends, after a call of each kind.
func TestHostileFramesEndTheLink(t *testing.T) {
	t.Parallel()
	bigData := func(p *peer, id uint32) {
		// Past the stream's window: the client never acknowledged any of it.
		p.Flood(agent.FrameData, id, 64<<20)
	}
	for name, tc := range map[string]struct {
		call string // "run", "request", or "dial"
		act  func(p *peer, id uint32)
	}{
		"unknown type":         {"run", func(p *peer, id uint32) { p.Send('Z', id, nil) }},
		"a client's frame":     {"run", func(p *peer, id uint32) { p.Send(agent.FrameStart, id, []byte("{}")) }},
		"exit not JSON":        {"run", func(p *peer, id uint32) { p.Send(agent.FrameExit, id, []byte("{")) }},
		"exit of another call": {"run", func(p *peer, id uint32) { p.Send(agent.FrameExit, id+7, []byte("nope")) }},
		"short ack":            {"run", func(p *peer, id uint32) { p.Send(agent.FrameAck, id, []byte{0, 1, 2}) }},
		"result not JSON":      {"request", func(p *peer, id uint32) { p.Send(agent.FrameResult, id, []byte("nope")) }},
		"result too large":     {"request", func(p *peer, id uint32) { p.Flood(agent.FrameResultPart, id, agent.MaxResult+agent.MaxPayload) }},
		"accept with a host id": {"request", func(p *peer, id uint32) {
			p.Send(agent.FrameAccept, id, binary.BigEndian.AppendUint32(nil, id))
		}},
		"short accept":       {"request", func(p *peer, id uint32) { p.Send(agent.FrameAccept, 1<<31|1, []byte{1}) }},
		"long window":        {"dial", func(p *peer, id uint32) { p.Send(agent.FrameWindow, id, make([]byte, 8)) }},
		"data past window":   {"dial", bigData},
		"data after its end": {"dial", func(p *peer, id uint32) { p.Send(agent.FrameFin, id, nil); p.Send(agent.FrameData, id, []byte("x")) }},
		"two ends":           {"dial", func(p *peer, id uint32) { p.Send(agent.FrameFin, id, nil); p.Send(agent.FrameFin, id, nil) }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, p := hostile(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res := make(chan error, 1)
			switch tc.call {
			case "run":
				go func() {
					_, err := c.Run(ctx, agent.Spec{Start: agent.Start{Args: []string{"x"}}}, nil, time.Second)
					res <- err
				}()
			case "request":
				go func() {
					_, err := c.Request(ctx, agent.Request{Op: "list"})
					res <- err
				}()
			case "dial":
				conn := make(chan error, 1)
				go func() {
					cn, err := c.Dial(ctx, 80)
					if err == nil {
						defer cn.Close()
						// Wait for the link's end with the connection open.
						select {
						case <-c.Done():
						case <-ctx.Done():
						}
						_, err = c.Request(ctx, agent.Request{Op: "list"})
					}
					conn <- err
				}()
				typ, id, _ := p.Read(t)
				require.Equal(t, agent.FrameRequest, typ)
				require.NoError(t, p.Send(agent.FrameResult, id, []byte("{}")))
				tc.act(p, id)
				requireBroken(t, c, <-conn)
				requireStopped(t, p)
				return
			}
			_, id, _ := p.Read(t)
			tc.act(p, id)
			requireBroken(t, c, <-res)
			requireStopped(t, p)
		})
	}
}

// TestHonestLargestResultsPass sends the largest results an honest agent does, under the bounds:
// an output read of both whole rings, and a list of every process kept, each with the longest
// arguments a request can carry.
func TestHonestLargestResultsPass(t *testing.T) {
	t.Parallel()
	c, p := hostile(t)
	// The longest argument a "start" request carries: its JSON fills a frame, each '<' taking
	// six bytes of it (\u003c).
	empty, err := json.Marshal(agent.Request{Op: "start", Start: &agent.Start{Args: []string{""}}})
	require.NoError(t, err)
	arg := strings.Repeat("<", (agent.MaxPayload-len(empty))/6)
	req, err := json.Marshal(agent.Request{Op: "start", Start: &agent.Start{Args: []string{arg}}})
	require.NoError(t, err)
	require.Greater(t, len(req), agent.MaxPayload-6)
	st := agent.ProcState{ID: "p16", Args: []string{arg}, Started: time.Now().UnixNano(), ExitCode: -1}
	ring := make([]byte, 1<<20)
	var procs []agent.ProcState
	for range 2 * agent.MaxProcesses {
		procs = append(procs, st)
	}
	for _, res := range []agent.Result{
		{Process: &st, Output: &agent.ProcOutput{Stdout: ring, Stderr: ring, Offset: 1 << 40, Dropped: 1 << 40, State: st}},
		{Processes: procs},
	} {
		b, err := json.Marshal(res)
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), agent.MaxResult)
		got := make(chan error, 1)
		go func() {
			_, err := c.Request(context.Background(), agent.Request{Op: "list"})
			got <- err
		}()
		_, id, _ := p.Read(t)
		for len(b) > agent.MaxPayload {
			require.NoError(t, p.Send(agent.FrameResultPart, id, b[:agent.MaxPayload]))
			b = b[agent.MaxPayload:]
		}
		require.NoError(t, p.Send(agent.FrameResult, id, b))
		require.NoError(t, <-got)
	}
	require.NoError(t, c.Violation())
}

// TestGivenUpResultsAreDropped: parts for a request the client gave up on (its ctx ended) are
// dropped as they come, not held, and not a violation.
func TestGivenUpResultsAreDropped(t *testing.T) {
	t.Parallel()
	c, p := hostile(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := c.Request(ctx, agent.Request{Op: "list"})
		assert.ErrorIs(t, err, context.Canceled)
	})
	_, id, _ := p.Read(t)
	require.NoError(t, p.Send(agent.FrameResultPart, id, make([]byte, agent.MaxPayload)))
	cancel()
	wg.Wait()
	// Far more than MaxResultsHeld for the forgotten id, then a result of a live request.
	p.Flood(agent.FrameResultPart, id, 2*agent.MaxResultsHeld)
	got := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), agent.Request{Op: "list"})
		got <- err
	}()
	_, id2, _ := p.Read(t)
	require.NoError(t, p.Send(agent.FrameResult, id2, []byte("{}")))
	require.NoError(t, <-got)
	require.NoError(t, c.Violation())
}
