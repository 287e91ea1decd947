package docker

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/adapter/internal/cgstat"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// baseEnv is the minimal environment of every command (and of the container itself).
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + adapter.DefaultHome,
	"LANG=C.UTF-8",
	"TZ=UTC",
}

// killGrace bounds how long a killed command's stream may take to close before the connection is
// dropped.
const killGrace = 2 * time.Second

// rawExec is one exec in the container: argv, optional stdin, stdout and stderr writers.
type rawExec struct {
	args           []string
	env            []string
	stdin          io.Reader
	stdout, stderr io.Writer
	// wrap, when set, makes args a sandbox command: the agent runs it natively (see agent.Wrap),
	// a daemon exec runs it under execWrapper; either way its tree is killed when ctx ends first.
	wrap *agent.Wrap
}

// run executes e and returns its exit code. The error is a classified engine error, or ctx.Err()
// when ctx ended first (after onCancel ran). It goes through the sandbox's agent when the
// container has one, and is one daemon exec otherwise.
func (s *Sandbox) run(ctx context.Context, op string, e rawExec) (int, error) {
	if s.isStopped() {
		return 0, s.errStopped(op)
	}
	a, err := s.agentClient(ctx, op)
	if err != nil {
		return 0, err
	}
	if a != nil {
		return s.runAgent(ctx, op, a, e)
	}
	return s.runExec(ctx, op, e)
}

// runExec is run as one daemon exec.
func (s *Sandbox) runExec(ctx context.Context, op string, e rawExec) (int, error) {
	var onCancel func()
	if w := e.wrap; w != nil {
		e.args = append([]string{"/bin/sh", "-c", execWrapper, "sandboxer", w.ID, w.Nonce, w.Dir}, e.args...)
		e.env = append(e.env[:len(e.env):len(e.env)], "SANDBOXER_WRAPPER="+w.ID)
		onCancel = func() {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			s.kill(kctx, w.ID)
		}
	}
	cr, err := s.eng.ExecCreate(ctx, s.containerID, client.ExecCreateOptions{
		AttachStdin:  e.stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          e.env,
		WorkingDir:   adapter.DefaultWorkspace,
		Cmd:          e.args,
		User:         s.cfg.user(), // the container's is the agent's (see create)
	})
	if err != nil {
		return 0, s.unavailable(op, err)
	}
	att, err := s.eng.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, s.unavailable(op, err)
	}
	defer att.Close()

	if e.stdin != nil {
		go func() {
			io.Copy(att.Conn, e.stdin)
			att.CloseWrite()
		}()
	}
	stdout, stderr := e.stdout, e.stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		done <- err
	}()
	var ctxErr error
	select {
	case err = <-done:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		if onCancel != nil {
			onCancel()
		}
		select {
		case err = <-done:
		case <-time.After(killGrace):
			att.Close()
			err = <-done
		}
	}
	_ = err // a broken stream shows up in the inspection below
	ictx := ctx
	if ctxErr != nil {
		var cancel context.CancelFunc
		ictx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	code, ierr := s.exitCode(ictx, cr.ID)
	if ctxErr != nil {
		return code, ctxErr
	}
	if ierr != nil {
		return 0, s.unavailable(op, ierr)
	}
	return code, nil
}

// exitCode waits (briefly) for the exec to be reported finished and returns its exit code. An exec
// still running after its stream closed, or a container that stopped under it, is
// errs.SandboxUnavailable.
func (s *Sandbox) exitCode(ctx context.Context, execID string) (int, error) {
	for i := 0; ; i++ {
		ins, err := s.eng.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return 0, err
		}
		if !ins.Running {
			if ins.ExitCode >= 128 && s.diedWithin(ctx, 150*time.Millisecond) {
				return ins.ExitCode, errs.New(errs.SandboxUnavailable, "exec", "", "sandbox %s stopped during the command", s.id)
			}
			return ins.ExitCode, nil
		}
		if i > 100 {
			return 0, errs.New(errs.SandboxUnavailable, "exec", "", "command output closed but the process is still running")
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Duration(min(i+1, 20)) * time.Millisecond):
		}
	}
}

// diedWithin reports whether the container is seen not running within d. A command killed by a
// signal (exit >= 128) may mean the whole container was killed; the daemon records the container's
// death a moment after the exec's, so it is polled briefly.
func (s *Sandbox) diedWithin(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !s.running(ctx) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(15 * time.Millisecond)
	}
}

// running reports whether the container is still running.
func (s *Sandbox) running(ctx context.Context) bool {
	ins, err := s.eng.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{})
	return err == nil && ins.Container.State != nil && ins.Container.State.Running
}

// unavailable classifies an engine error; a container that is gone or not running says so.
func (s *Sandbox) unavailable(op string, err error) error {
	err = classify(op, err)
	if errs.CodeOf(err) == errs.Internal && !s.running(context.Background()) {
		return errs.Wrap(errs.SandboxUnavailable, op, "", err)
	}
	return err
}

// ExecuteCommand runs cmd in the container under the process-group wrapper (see package doc and
// agentproc.Execute). Errors as adapter.Sandbox documents; on a timeout or a cancelled context the
// command's tree is killed (by the agent, or by a second exec) and the partial output is returned
// with the error.
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
	res, err := agentproc.Execute(ctx, op, cmd, dir, s.env(cmd), s.isolation(), func(ctx context.Context, spec agent.Spec) (int, error) {
		// The agent starts with a sandbox's first command: the receipt measures the command,
		// not the agent's start.
		if _, err := s.agentClient(ctx, op); err != nil {
			return 0, err
		}
		meter = s.meter(ctx)
		return s.run(ctx, op, rawExec{args: spec.Start.Args, env: spec.Start.Env, wrap: spec.Start.Wrap,
			stdin: spec.Stdin, stdout: spec.Stdout, stderr: spec.Stderr})
	})
	meter.End(&res.Receipt)
	return res, err
}

// env is a command's environment: the container's (commandEnv), the proxy's, the sandbox's, the
// command's; a later entry wins.
func (s *Sandbox) env(cmd adapter.Command) []string {
	proxyEnv := egress.EnvOf(s.Egress())
	base := commandEnv(s.imageEnv)
	if s.workspaceHome {
		base = adapter.WorkspaceHome(base)
	}
	env := make([]string, 0, len(base)+len(proxyEnv)+len(s.cfg.Env)+len(cmd.Env))
	return append(append(append(append(env, base...), proxyEnv...), s.cfg.Env...), cmd.Env...)
}

// commandEnv is the environment of the container and its commands: baseEnv, then what the image
// sets, HOME aside (adapter.ImageEnv).
func commandEnv(imageEnv []string) []string { return adapter.ImageEnv(baseEnv, imageEnv) }

func (s *Sandbox) isolation() adapter.Isolation {
	layers := []string{"container", "pgroup"}
	if !s.cfg.AllowNetwork {
		layers = append(layers, "network:none")
	}
	if l := s.diskInForce(); l != "" {
		layers = append(layers, l)
	}
	return adapter.Isolation{Network: !s.cfg.AllowNetwork, Filesystem: true, ProcessTree: false, Layers: layers}
}

// kill ends the process tree of the command with wrapper id. When the container has no room for
// another process (pids limit reached, e.g. by a fork bomb), the limit is raised for the kill and
// put back.
func (s *Sandbox) kill(ctx context.Context, id string) {
	code, err := s.run(ctx, "kill", rawExec{args: []string{"/bin/sh", "-c", killScript, "sandboxer-kill", id}})
	if err == nil && code == 0 {
		return
	}
	limit := orDefault(s.cfg.Pids, DefaultPids)
	if limit <= 0 {
		return
	}
	more := limit + 32
	if _, uerr := s.eng.ContainerUpdate(ctx, s.containerID, client.ContainerUpdateOptions{Resources: &container.Resources{PidsLimit: &more}}); uerr != nil {
		return
	}
	s.run(ctx, "kill", rawExec{args: []string{"/bin/sh", "-c", killScript, "sandboxer-kill", id}})
	s.eng.ContainerUpdate(ctx, s.containerID, client.ContainerUpdateOptions{Resources: &container.Resources{PidsLimit: &limit}})
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
