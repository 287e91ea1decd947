package oci

import (
	"context"
	"errors"
	"fmt"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/errs"
)

// agentConn is one stream to an agent in the container over three pipes: the container's own
// stdio (the agent is its PID 1) or those of a runtime exec of the agent.
type agentConn struct {
	*agent.Client
	p      *pipes
	cmd    *exec.Cmd   // the runtime's exec, for an exec'd agent
	stderr *headBuffer // what the agent (or the runtime) said on stderr, first KiB

	closeOnce sync.Once
}

func newAgentConn(p *pipes, cmd *exec.Cmd) *agentConn {
	a := &agentConn{p: p, cmd: cmd, stderr: newHeadBuffer(1024)}
	go a.stderr.readFrom(p.errR)
	a.Client = agent.NewClient(p.outR, p.inW, closerFunc(a.close))
	if cmd != nil {
		go cmd.Wait() // ends when the agent does: its stream closed, or the container died
	}
	return a
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// close ends the stream: the agent sees its stdin end, kills what it runs and exits (or, as a
// persistent sandbox's PID 1, stays idle). Idempotent.
func (a *agentConn) close() error {
	a.closeOnce.Do(func() {
		a.p.inW.Close()
		a.p.outR.Close()
	})
	return nil
}

// agentClient returns the sandbox's agent stream, starting a runtime exec of the agent when the
// sandbox has none (it was attached to, or its exec'd agent died). An agent that broke the
// protocol is not replaced: the error is then SANDBOX_UNAVAILABLE, for this call and every later
// one (see agentproc.Slot).
func (s *Sandbox) agentClient(ctx context.Context, op string) (*agentConn, error) {
	return s.agent.Get(op, func() (*agentConn, error) {
		if time.Since(s.agentFailed) < agentRetry {
			return nil, s.agentErr
		}
		if st, err := s.rt.state(ctx, containerID(s.rec.ID)); err != nil || st.Status != specs.StateRunning {
			if err == nil && st.Status == statePaused {
				return nil, s.unavailable(op, "it is paused (sandboxer sandbox resume "+s.rec.ID+", or Resume)")
			}
			return nil, s.unavailable(op, "its container is not running")
		}
		a, err := s.rt.exec(ctx, containerID(s.rec.ID), filepath.Join(s.lay.sandbox(s.rec.ID), "bundle", execFile))
		if err != nil {
			s.agentFailed, s.agentErr = time.Now(), err
			return nil, err
		}
		a.SetDirect(s.lay.streams(s.rec.ID), agent.DirectSandboxDir)
		return a, nil
	})
}

func (s *Sandbox) unavailable(op, why string) error {
	return errs.New(errs.SandboxUnavailable, op, "", "sandbox %s: %s", s.rec.ID, why)
}

// killGrace bounds how long a killed command may take to report its exit before the call gives up
// on it.
const killGrace = 2 * time.Second

// agentRetry is how long a sandbox whose agent exec failed reports that failure before it tries
// again.
const agentRetry = time.Second

// rawExec is one process in the container: argv, optional stdin, stdout and stderr writers.
type rawExec struct {
	args           []string
	env            []string
	stdin          io.Reader
	stdout, stderr io.Writer
	wrap           *agent.Wrap
}

// run executes e through the agent and returns its exit code.
func (s *Sandbox) run(ctx context.Context, op string, e rawExec) (int, error) {
	spec := agent.Spec{
		Start:  agent.Start{Args: e.args, Env: e.env, Dir: adapter.DefaultWorkspace, Wrap: e.wrap},
		Stdin:  e.stdin,
		Stdout: e.stdout,
		Stderr: e.stderr,
	}
	if e.wrap != nil {
		spec.KillGrace = agentproc.TermGrace
	}
	return s.runSpec(ctx, op, spec)
}

// runSpec sends spec to the agent. The error is errs.SandboxUnavailable when the sandbox or its
// agent is gone, or ctx.Err() when ctx ended first (the tree was killed).
func (s *Sandbox) runSpec(ctx context.Context, op string, spec agent.Spec) (int, error) {
	if s.isStopped() {
		return 0, s.errStopped(op)
	}
	a, err := s.agentClient(ctx, op)
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
		if !s.rt.running(context.WithoutCancel(ctx), containerID(s.rec.ID)) {
			why := "its container stopped during the call"
			if msg := a.stderr.waitString(100 * time.Millisecond); msg != "" {
				why += " (its agent said: " + msg + ")"
			}
			return 0, s.unavailable(op, why)
		}
		msg := a.stderr.String()
		if msg == "" {
			msg = err.Error()
		}
		return 0, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("the sandbox agent exited during the call (the next call starts another): %s", msg))
	}
	return ex.Code, err // the context ended; the tree was killed
}

// headBuffer keeps the first n bytes written to it. Safe for concurrent use.
type headBuffer struct {
	n    int
	mu   sync.Mutex
	buf  []byte
	done chan struct{} // closed when readFrom has reached the end
}

func newHeadBuffer(n int) *headBuffer { return &headBuffer{n: n, done: make(chan struct{})} }

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.n - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// readFrom copies r into the buffer until r ends, then closes r.
func (h *headBuffer) readFrom(r *os.File) {
	io.Copy(h, r)
	r.Close()
	close(h.done)
}

// waitString waits up to d for the end of the stream, then returns what was kept.
func (h *headBuffer) waitString(d time.Duration) string {
	select {
	case <-h.done:
	case <-time.After(d):
	}
	return h.String()
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.buf)
}

// DirectStreams reports whether this handle's port streams are direct (false until its first
// DialPort or ListenPort; always false under runsc, whose gVisor refuses host sockets), and why
// not when the direct path could not be set up.
func (s *Sandbox) DirectStreams() (bool, error) {
	a := s.agent.Current()
	if a == nil {
		return false, nil
	}
	return a.DirectStreams()
}
