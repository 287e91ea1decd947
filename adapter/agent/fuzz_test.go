package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// FuzzAgentFrames feeds arbitrary bytes to a client as its agent's answers, while a call (id 1)
// and a request (id 2) wait for theirs: the client never panics, never hangs once the bytes end,
// and every failure is the link's (ErrClosed, with ErrProtocol when a frame broke the protocol)
// or a result's error (*RequestError).
func FuzzAgentFrames(f *testing.F) {
	exit, _ := json.Marshal(agent.Exit{Code: 3})
	res, _ := json.Marshal(agent.Result{Processes: []agent.ProcState{{ID: "p1", Args: []string{"sleep", "1"}}}})
	cat := func(frames ...[]byte) []byte {
		var b []byte
		for _, fr := range frames {
			b = append(b, fr...)
		}
		return b
	}
	f.Add([]byte{})
	f.Add(cat(frameBytes(agent.FrameStdout, 1, []byte("out")), frameBytes(agent.FrameStderr, 1, []byte("err")),
		frameBytes(agent.FrameAck, 1, []byte{0, 0, 0, 3}), frameBytes(agent.FrameExit, 1, exit)))
	f.Add(cat(frameBytes(agent.FrameResultPart, 2, res[:5]), frameBytes(agent.FrameResult, 2, res[5:])))
	f.Add(frameBytes(agent.FrameResult, 2, []byte(`{"error":"no","code":"notfound"}`)))
	f.Add(frameBytes(agent.FrameAccept, 1<<31|1, []byte{0, 0, 0, 2}))
	f.Add(cat(frameBytes(agent.FrameData, 2, []byte("x")), frameBytes(agent.FrameFin, 2, nil),
		frameBytes(agent.FrameWindow, 2, []byte{0, 0, 0, 1}), frameBytes(agent.FrameClose, 2, nil)))
	f.Add([]byte{agent.FrameResult, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff})
	f.Add(frameBytes('Z', 1, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, w := io.Pipe()
		sent := make(chan struct{}, 4)
		sink := writerFunc(func(p []byte) (int, error) {
			select {
			case sent <- struct{}{}:
			default:
			}
			return len(p), nil
		})
		c := agent.NewClient(r, sink, closerFunc(func() error { return r.Close() }))
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errs := make(chan error, 2)
		go func() {
			_, err := c.Run(ctx, agent.Spec{Start: agent.Start{Args: []string{"x"}}, Stdout: io.Discard}, nil, time.Second)
			errs <- err
		}()
		<-sent
		go func() {
			_, err := c.Request(ctx, agent.Request{Op: "list"})
			errs <- err
		}()
		<-sent
		w.Write(data) // fails once the client closed the stream
		w.Close()
		for range 2 {
			select {
			case err := <-errs:
				var re *agent.RequestError
				switch {
				case err == nil, errors.As(err, &re):
				case errors.Is(err, agent.ErrClosed):
					if c.Violation() != nil && !errors.Is(err, agent.ErrProtocol) {
						t.Fatalf("the link broke the protocol (%v), the call saw %v", c.Violation(), err)
					}
				default:
					t.Fatalf("unexpected error %v", err)
				}
			case <-ctx.Done():
				t.Fatal("a call still waits after the agent's stream ended")
			}
		}
		<-c.Done()
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
