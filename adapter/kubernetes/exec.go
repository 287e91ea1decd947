package kubernetes

import (
	"context"
	"errors"
	"net"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/egress"
)

var _ interface {
	adapter.PortForwarder
	adapter.PortListener
	adapter.Starter
	egress.Egressed
} = (*Sandbox)(nil)

// ExecuteCommand runs cmd in the pod through the agent (see agentproc.Execute). Errors as
// adapter.Sandbox documents.
func (s *Sandbox) ExecuteCommand(ctx context.Context, cmd adapter.Command) (adapter.Result, error) {
	const op = "exec"
	dir, err := agentproc.Validate(op, cmd)
	if err != nil {
		return adapter.Result{}, err
	}
	if s.isStopped() {
		return adapter.Result{}, s.errStopped(op)
	}
	if err := s.Egress().Ensure(ctx, s); err != nil {
		return adapter.Result{}, err
	}
	return agentproc.Execute(ctx, op, cmd, dir, s.env(cmd), s.Isolation(), func(ctx context.Context, spec agent.Spec) (int, error) {
		return s.runSpec(ctx, op, spec)
	})
}

// env is a command's environment: the base, the egress proxy's, the sandbox's, the command's.
func (s *Sandbox) env(cmd adapter.Command) []string {
	proxyEnv := egress.EnvOf(s.Egress())
	base := commandEnv(s.agentBin != "")
	if s.workspaceHome {
		base = adapter.WorkspaceHome(base)
	}
	env := make([]string, 0, len(base)+len(proxyEnv)+len(s.cfg.Env)+len(cmd.Env))
	return append(append(append(append(env, base...), proxyEnv...), s.cfg.Env...), cmd.Env...)
}

// Isolation is what each result reports. The network is reported cut only when the probe at
// creation found the deny-all policy enforced; "network:unenforced" says it was not,
// "network:unverified" that nothing could tell.
func (s *Sandbox) Isolation() adapter.Isolation {
	layers := []string{"pod", "non-root", "capabilities:none", "no-new-privileges", "seccomp:runtime-default", "rootfs:read-only", "pgroup"}
	if s.cfg.RuntimeClassName != "" {
		layers = append(layers, "runtime-class:"+s.cfg.RuntimeClassName)
	}
	if orDefault(s.cfg.MemoryBytes, DefaultMemoryBytes) > 0 {
		layers = append(layers, "limits")
	}
	network := false
	switch s.network {
	case netEnforced, netProxied:
		network = true
		layers = append(layers, "network-policy:deny-all")
		if s.network == netProxied {
			layers = append(layers, "egress:proxy")
		}
	case netUnenforced, netUnverified:
		layers = append(layers, "network:"+s.network)
	}
	return adapter.Isolation{Network: network, Filesystem: true, Limits: orDefault(s.cfg.MemoryBytes, DefaultMemoryBytes) > 0, Layers: layers}
}

// Egress returns the sandbox's egress proxy, made at first use; nil without Config.AllowHosts.
func (s *Sandbox) Egress() *egress.Proxy { return s.egress.Get(s.cfg.AllowHosts, s.cfg.Egress) }

// TrustCA implements egress.TrustStore through the agent (`-fs trust`): the bundle of the image's
// trusted certificates and pem in HOME (shellfs.FS.TrustCA).
func (s *Sandbox) TrustCA(ctx context.Context, pem []byte) (string, error) {
	if s.workspaceHome {
		return "", errors.New("the pod's HOME is its workspace (a pod made before commands had a HOME of their own): the bundle would be in the workspace")
	}
	return s.fs().TrustCA(ctx, adapter.DefaultHome, pem)
}

// client is the agent's client for agentproc.
func (s *Sandbox) client(ctx context.Context, op string) (*agent.Client, error) {
	if s.isStopped() {
		return nil, s.errStopped(op)
	}
	a, err := s.agentClient(op)
	if err != nil {
		return nil, err
	}
	return a.Client, nil
}

func (s *Sandbox) starter() *agentproc.Starter {
	return &agentproc.Starter{
		Client: s.client,
		Start: func(cmd adapter.Command, dir string) agent.Start {
			return agent.Start{Args: cmd.Args, Env: s.env(cmd), Dir: adapter.DefaultWorkspace,
				Wrap: &agent.Wrap{Root: adapter.DefaultWorkspace, Dir: dir, ID: agentproc.NewID(), Nonce: agentproc.NewID()}}
		},
		Isolation: s.Isolation,
	}
}

// DialPort connects to 127.0.0.1:port in the pod, through the agent.
func (s *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	return agentproc.DialPort(ctx, s.client, port)
}

// ListenPort listens on 127.0.0.1:port in the pod, through the agent.
func (s *Sandbox) ListenPort(ctx context.Context, port int) (net.Listener, error) {
	return agentproc.ListenPort(ctx, s.client, port)
}

// Start starts a background process, kept by the pod's agent: another process attached to the
// sandbox finds it.
func (s *Sandbox) Start(ctx context.Context, cmd adapter.Command) (adapter.Process, error) {
	if s.isStopped() {
		return nil, s.errStopped("start")
	}
	if err := s.Egress().Ensure(ctx, s); err != nil {
		return nil, err
	}
	return s.starter().StartProcess(ctx, cmd)
}

// Processes lists the pod's background processes.
func (s *Sandbox) Processes(ctx context.Context) ([]adapter.ProcessState, error) {
	return s.starter().Processes(ctx)
}

// Process finds a background process by ID.
func (s *Sandbox) Process(ctx context.Context, id string) (adapter.Process, error) {
	return s.starter().Process(ctx, id)
}
