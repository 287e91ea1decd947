package oci

import (
	"context"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/adapter/internal/cgstat"
	"github.com/sandboxer/sandboxer/egress"
)

// ExecuteCommand runs cmd in the container through the agent (see agentproc.Execute): the working
// directory resolved inside /workspace through its symlinks, the command in a session of its own
// with a marker in its environment, and its whole tree killed when it exits, times out or ctx
// ends. Errors as adapter.Sandbox documents.
func (s *Sandbox) ExecuteCommand(ctx context.Context, cmd adapter.Command) (adapter.Result, error) {
	const op = "exec"
	dir, err := agentproc.Validate(op, cmd)
	if err != nil {
		return adapter.Result{}, err
	}
	if err := s.Egress().Ensure(ctx, s); err != nil {
		return adapter.Result{}, err
	}
	if s.isStopped() {
		return adapter.Result{}, s.errStopped(op)
	}
	var meter *cgstat.Meter
	res, err := agentproc.Execute(ctx, op, cmd, dir, s.env(cmd), s.Isolation(), func(ctx context.Context, spec agent.Spec) (int, error) {
		// An attached sandbox's agent starts with its first command: the receipt measures the
		// command, not the agent's start.
		if !s.isStopped() {
			if _, err := s.agentClient(ctx, op); err != nil {
				return 0, err
			}
		}
		meter = cgstat.Begin(s.cgroup())
		return s.runSpec(ctx, op, spec)
	})
	meter.End(&res.Receipt)
	return res, err
}

// cgroup is the container's cgroup (its spec's cgroupsPath in each hierarchy), for receipts:
// found once, it lives as long as the container.
func (s *Sandbox) cgroup() cgstat.Group {
	s.cgOnce.Do(func() { s.cg = cgstat.ForPath(cgroupPath(s.rec.ID)) })
	return s.cg
}

// env is a command's environment: the base (with the environment of Config.Image, HOME aside),
// the proxy's, the sandbox's, the command's.
func (s *Sandbox) env(cmd adapter.Command) []string {
	proxyEnv := egress.EnvOf(s.Egress())
	base := adapter.ImageEnv(baseEnv, s.rec.ImageEnv)
	if s.rec.Home == "" { // made before commands had a HOME of their own
		base = adapter.WorkspaceHome(base)
	}
	env := make([]string, 0, len(base)+len(proxyEnv)+len(s.cfg.Env)+len(cmd.Env))
	return append(append(append(append(env, base...), proxyEnv...), s.cfg.Env...), cmd.Env...)
}

// Isolation is what each result reports: the layers checked in force when the sandbox was made
// or attached to (see observeLayers).
func (s *Sandbox) Isolation() adapter.Isolation {
	has := func(l string) bool {
		for _, x := range s.layers {
			if x == l {
				return true
			}
		}
		return false
	}
	return adapter.Isolation{
		Network:     has("network:none"),
		Filesystem:  true,
		ProcessTree: false,
		Layers:      s.layers,
	}
}
