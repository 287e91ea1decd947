package oci

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// teeCapped writes to a capped buffer (under mu) and to a caller's live writer.
type teeCapped struct {
	buf  *adapter.CappedBuffer
	live io.Writer
	mu   *sync.Mutex
}

func (t teeCapped) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf.Write(p)
	t.mu.Unlock()
	if t.live != nil {
		t.live.Write(p) // a failing live copy never stops the capture
	}
	return len(p), nil
}

// ExecuteCommand runs cmd in the container through the agent (see agent.Wrap): the working
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
	env := s.env(cmd)
	if s.isStopped() {
		return adapter.Result{}, s.errStopped(op)
	}

	runCtx := ctx
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cmd.Timeout)
		defer cancel()
	}
	id, nonce := newID(), newID()
	var mu sync.Mutex
	outBuf, errBuf := adapter.NewCappedBuffer(cmd.Limit()), adapter.NewCappedBuffer(cmd.Limit())
	// The agent's own failure line is small; keep stderr's head visible to the check below even
	// when the caller's budget is tiny.
	errHead := newHeadBuffer(128)
	start := time.Now()
	code, err := s.run(runCtx, op, rawExec{
		args:   cmd.Args,
		env:    env,
		wrap:   &agent.Wrap{Root: adapter.DefaultWorkspace, Dir: dir, ID: id, Nonce: nonce},
		stdin:  cmd.Stdin,
		stdout: teeCapped{buf: outBuf, live: cmd.Stdout, mu: &mu},
		stderr: io.MultiWriter(errHead, teeCapped{buf: errBuf, live: cmd.Stderr, mu: &mu}),
	})
	res := adapter.Result{ExitCode: code, Duration: time.Since(start), Isolation: s.Isolation()}
	mu.Lock()
	adapter.Capture(&res, outBuf, errBuf)
	mu.Unlock()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			e := errs.New(errs.ProcessTimeout, op, "", "command timed out after %s; its process tree was killed", res.Duration.Round(time.Millisecond))
			e.Err = err
			e.Details = map[string]any{"stdout": string(res.Stdout), "stderr": string(res.Stderr), "exitCode": res.ExitCode}
			return res, e
		}
		return res, err
	}
	if code == 199 {
		if c, ok := errHead.marker(nonce); ok {
			if err := agentproc.Refusal(op, cmd, c); err != nil {
				return adapter.Result{}, err
			}
		}
	}
	return res, nil
}

// env is a command's environment: the base, the sandbox's, the command's.
func (s *Sandbox) env(cmd adapter.Command) []string {
	proxyEnv := egress.EnvOf(s.Egress())
	env := make([]string, 0, len(baseEnv)+len(proxyEnv)+len(s.cfg.Env)+len(cmd.Env))
	return append(append(append(append(env, baseEnv...), proxyEnv...), s.cfg.Env...), cmd.Env...)
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
