package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/errs"
)

// LabelAgent marks a container whose image has the agent (value: the protocol version).
const LabelAgent = "org.sandboxer.agent"

// LabelAgentPath names where the container's agent is when it is not agent.Path: the host's agent
// mounted read-only (agent.BroughtPath) into an image that has none.
const LabelAgentPath = "org.sandboxer.agent-path"

// agentConn is one stream to an agent in the container: the container's own stdio (the agent is
// its main process) or an exec of the agent.
type agentConn struct {
	*agent.Client
	stderr *headBuffer // what the agent said on stderr (a crash report), first KiB
}

// newAgentConn starts a client over a hijacked attach: the stream is multiplexed (no TTY), the
// agent's frames on stdout and its diagnostics on stderr. Its port streams are direct when the
// sandbox has a directory for them.
func (s *Sandbox) newAgentConn(att client.HijackedResponse) *agentConn {
	a := newAgentConn(att)
	if s.streams != "" {
		a.SetDirect(s.streams, agent.DirectSandboxDir)
	}
	return a
}

func newAgentConn(att client.HijackedResponse) *agentConn {
	pr, pw := io.Pipe()
	stderr := &headBuffer{n: 1024}
	go func() {
		_, err := stdcopy.StdCopy(pw, stderr, att.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	return &agentConn{Client: agent.NewClient(pr, att.Conn, closerFunc(func() error { att.Close(); return nil })), stderr: stderr}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// agentClient returns the sandbox's agent stream, starting an exec of the agent when the sandbox
// has none (it was attached to, or its agent died), or nil when the container has no agent or it
// cannot be started: calls then fall back to one daemon exec each. An agent that broke the
// protocol is not replaced: the error is then SANDBOX_UNAVAILABLE, for this call and every later
// one (see agentproc.Slot).
func (s *Sandbox) agentClient(ctx context.Context, op string) (*agentConn, error) {
	if !s.hasAgent() {
		return nil, nil
	}
	return s.agent.Get(op, func() (*agentConn, error) {
		if time.Since(s.agentFailed) < agentRetry {
			return nil, nil
		}
		cr, err := s.eng.ExecCreate(ctx, s.containerID, client.ExecCreateOptions{
			AttachStdin: true, AttachStdout: true, AttachStderr: true,
			WorkingDir: adapter.DefaultWorkspace,
			Cmd:        agent.ArgvAt(s.agentPath(), s.cfg.user()), // as the container's user: the agent's (see create)
		})
		if err == nil {
			var att client.ExecAttachResult
			att, err = s.eng.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
			if err == nil {
				return s.newAgentConn(att.HijackedResponse), nil
			}
		}
		s.agentFailed = time.Now()
		return nil, nil
	})
}

// termGrace is the time between SIGTERM and SIGKILL when a command's tree is killed (the
// killScript's sleep, for daemon execs).
const termGrace = 200 * time.Millisecond

// agentRetry is how long a sandbox whose agent could not be started uses daemon execs before it
// tries again.
const agentRetry = 5 * time.Second

// runAgent is run over the agent: the same contract, one fork in the container instead of a
// daemon exec.
func (s *Sandbox) runAgent(ctx context.Context, op string, a *agentConn, e rawExec) (int, error) {
	spec := agent.Spec{
		Start:  agent.Start{Args: e.args, Env: e.env, Dir: adapter.DefaultWorkspace, Wrap: e.wrap},
		Stdin:  e.stdin,
		Stdout: e.stdout,
		Stderr: e.stderr,
	}
	if e.wrap != nil {
		spec.KillGrace = termGrace
	}
	ex, err := a.Run(ctx, spec, nil, killGrace)
	switch {
	case err == nil:
		return ex.Code, nil
	case errors.Is(err, agent.ErrProtocol):
		return 0, agentproc.Broken(op, err)
	case errors.Is(err, agent.ErrClosed):
		if !s.running(context.WithoutCancel(ctx)) {
			return 0, errs.New(errs.SandboxUnavailable, op, "", "sandbox %s stopped during the call", s.id)
		}
		msg := a.stderr.String()
		if msg == "" {
			msg = err.Error()
		}
		return 0, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("the sandbox agent exited during the call (the next call starts another): %s", msg))
	}
	return ex.Code, err // the context ended; the tree was killed
}

// agentPath is where the container's agent is.
func (s *Sandbox) agentPath() string {
	if s.agentBin != "" {
		return s.agentBin
	}
	return agent.Path
}

// bringAgent returns the host's agent executable to mount into a container whose image has none
// (compiled once, kept under the state directory): only with a daemon on this host, whose bind
// mounts see this file system.
func bringAgent(eng engine, cfg Config) (string, error) {
	if !strings.HasPrefix(eng.DaemonHost(), "unix://") {
		return "", errors.New("the daemon is not on this host")
	}
	return rootfs.AgentFile(filepath.Join(cfg.stateDir(), "docker", "agent"))
}
