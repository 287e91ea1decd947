package docker

import (
	"context"
	"net"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/errs"
)

// The sandbox's loopback and its background processes go through the agent (see agentproc): a
// sandbox without one (NoAgent, or an image without it) has neither.

var _ interface {
	adapter.PortForwarder
	adapter.PortListener
	adapter.Starter
} = (*Sandbox)(nil)

// hasAgent says whether the sandbox uses an agent (else every call is a daemon exec).
func (s *Sandbox) hasAgent() bool { return s.agentVersion == agent.Version && !s.cfg.NoAgent }

// client is the agent's client for agentproc, or why there is none.
func (s *Sandbox) client(ctx context.Context, op string) (*agent.Client, error) {
	if s.isStopped() {
		return nil, s.errStopped(op)
	}
	a, err := s.agentClient(ctx, op)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, errs.New(errs.SandboxUnavailable, op, "", "sandbox %s has no agent (NoAgent, or an image without it): ports and background processes need it", s.id)
	}
	return a.Client, nil
}

func (s *Sandbox) starter() *agentproc.Starter {
	return &agentproc.Starter{
		Client: s.client,
		Start: func(cmd adapter.Command, dir string) agent.Start {
			return agent.Start{Args: cmd.Args, Env: s.env(cmd), Dir: adapter.DefaultWorkspace,
				Wrap: &agent.Wrap{Root: adapter.DefaultWorkspace, Dir: dir, ID: newID(), Nonce: newID()}}
		},
		Isolation: s.isolation,
	}
}

// DialPort connects to 127.0.0.1:port in the container, through the agent.
func (s *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	return agentproc.DialPort(ctx, s.client, port)
}

// ListenPort listens on 127.0.0.1:port in the container, through the agent.
func (s *Sandbox) ListenPort(ctx context.Context, port int) (net.Listener, error) {
	return agentproc.ListenPort(ctx, s.client, port)
}

// Start starts a background process, kept by the container's agent.
func (s *Sandbox) Start(ctx context.Context, cmd adapter.Command) (adapter.Process, error) {
	// The egress proxy, if any, listens before the process may use it.
	if err := s.Egress().Ensure(ctx, s); err != nil {
		return nil, err
	}
	return s.starter().StartProcess(ctx, cmd)
}

// Processes lists the container's background processes.
func (s *Sandbox) Processes(ctx context.Context) ([]adapter.ProcessState, error) {
	return s.starter().Processes(ctx)
}

// Process finds a background process by ID.
func (s *Sandbox) Process(ctx context.Context, id string) (adapter.Process, error) {
	return s.starter().Process(ctx, id)
}
