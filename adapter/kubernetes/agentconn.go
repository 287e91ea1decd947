package kubernetes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/errs"
)

// agentConn is one stream to an agent in the pod: an exec of the agent through the apiserver,
// which relays to the pod's PID 1 agent (its hub), so that every handle on the sandbox shares its
// background processes and listeners.
type agentConn struct {
	*agent.Client
	stderr *headBuffer // what the agent or the apiserver said, first KiB
	cancel context.CancelFunc
	ended  chan struct{} // closed when the exec has returned
	err    error         // the exec's error, once ended is closed

	closeOnce sync.Once
	inW       *io.PipeWriter
	outR      *io.PipeReader
}

// dialAgent starts an exec of the agent at bin in the pod, for commands run as user (see
// agent.Argv); the stream lives until Close or the pod goes.
func (k *kube) dialAgent(pod, bin, user string) *agentConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agentConn{stderr: &headBuffer{n: 1024}, cancel: cancel, ended: make(chan struct{}), inW: inW, outR: outR}
	a.Client = agent.NewClient(outR, inW, closerFunc(a.close))
	go func() {
		err := k.exec(ctx, pod, agent.ArgvAt(bin, user), inR, outW, a.stderr)
		if err == nil {
			err = io.EOF
		}
		a.err = err
		close(a.ended)
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	return a
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// close ends the stream: the agent sees its stdin end and kills what it ran in the foreground.
// Idempotent.
func (a *agentConn) close() error {
	a.closeOnce.Do(func() {
		a.inW.Close()
		select { // the agent sees the end of its input and exits, which ends the exec
		case <-a.ended:
		case <-time.After(time.Second):
		}
		a.cancel()
		a.outR.Close()
	})
	return nil
}

// why says what ended the stream, for messages.
func (a *agentConn) why() string {
	select {
	case <-a.ended:
	case <-time.After(500 * time.Millisecond):
	}
	msg := a.stderr.String()
	select {
	case <-a.ended:
		if a.err != nil && !errors.Is(a.err, io.EOF) {
			msg += " " + a.err.Error()
		}
	default:
	}
	return msg
}

// agentClient returns the handle's agent stream, starting one when it has none or its last one
// ended. An agent that broke the protocol is not replaced: the error is then
// SANDBOX_UNAVAILABLE, for this call and every later one (see agentproc.Slot).
func (s *Sandbox) agentClient(op string) (*agentConn, error) {
	return s.agent.Get(op, func() (*agentConn, error) {
		return s.k.dialAgent(s.pod, cmp.Or(s.agentBin, agent.Path), s.cfg.user()), nil
	})
}

// killGrace bounds how long a killed command may take to report its exit before the call gives up
// on it.
const killGrace = 2 * time.Second

// rawExec is one process in the pod: argv, optional stdin, stdout and stderr writers.
type rawExec struct {
	args           []string
	env            []string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run executes e through the agent and returns its exit code.
func (s *Sandbox) run(ctx context.Context, op string, e rawExec) (int, error) {
	return s.runSpec(ctx, op, agent.Spec{
		Start:  agent.Start{Args: e.args, Env: e.env, Dir: adapter.DefaultWorkspace},
		Stdin:  e.stdin,
		Stdout: e.stdout,
		Stderr: e.stderr,
	})
}

// runSpec sends spec to the agent. The error is errs.SandboxUnavailable when the sandbox, its pod
// or the stream is gone, or ctx.Err() when ctx ended first (the tree was killed).
func (s *Sandbox) runSpec(ctx context.Context, op string, spec agent.Spec) (int, error) {
	if s.isStopped() {
		return 0, s.errStopped(op)
	}
	a, err := s.agentClient(op)
	if err != nil {
		return 0, err
	}
	ex, err := a.Run(ctx, spec, nil, killGrace)
	switch {
	case err == nil:
		return ex.Code, nil
	case errors.Is(err, agent.ErrProtocol):
		return 0, agentproc.Broken(op, err)
	case errors.Is(err, agent.ErrClosed):
		if s.isStopped() {
			return 0, s.errStopped(op)
		}
		why := a.why()
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		// An eviction kills the containers before the pod's status says so: look again for a
		// few seconds before calling it a broken stream.
		p, gerr := s.k.getPod(gctx, s.pod)
		for i := 0; i < 15 && gerr == nil && !podEnding(p); i++ {
			time.Sleep(200 * time.Millisecond)
			p, gerr = s.k.getPod(gctx, s.pod)
		}
		switch {
		case gerr != nil:
			return 0, errs.New(errs.SandboxUnavailable, op, "", "sandbox %s: its pod is gone (%v)", s.id, s.k.classify(op, gerr))
		case podEnding(p):
			return 0, errs.New(errs.SandboxUnavailable, op, "", "sandbox %s: its pod is %s", s.id, podState(p))
		}
		return 0, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("the stream to the sandbox agent ended during the call (the next call starts another): %s", why))
	}
	return ex.Code, err // the context ended; the tree was killed
}

// headBuffer keeps the first n bytes written to it. Safe for concurrent use.
type headBuffer struct {
	n   int
	mu  sync.Mutex
	buf []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.n - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.buf)
}
