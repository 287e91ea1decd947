package agentproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/errs"
)

// TermGrace is the time between SIGTERM and SIGKILL when a command's tree is killed.
const TermGrace = 200 * time.Millisecond

// NewID is a random id for a wrapped command, its nonce, or a sandbox.
func NewID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Execute is adapter.Sandbox.ExecuteCommand over an agent, for a command that Validate accepted
// (dir is what it returned) with its whole environment env: the command runs under the agent's
// wrapper (agent.Wrap: the working directory resolved inside the workspace through its symlinks, a
// session of its own with a marker in its environment, its whole tree killed when it exits, times
// out or ctx ends), its output captured up to cmd.Limit() per stream and copied live to
// cmd.Stdout and cmd.Stderr. run sends the spec to the sandbox's agent and returns the exit code,
// or the transport's error (already classified) or ctx's. iso is what the result reports.
func Execute(ctx context.Context, op string, cmd adapter.Command, dir string, env []string, iso adapter.Isolation,
	run func(ctx context.Context, spec agent.Spec) (int, error)) (adapter.Result, error) {
	runCtx := ctx
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cmd.Timeout)
		defer cancel()
	}
	nonce := NewID()
	var mu sync.Mutex
	outBuf, errBuf := adapter.NewCappedBuffer(cmd.Limit()), adapter.NewCappedBuffer(cmd.Limit())
	// The wrapper's own failure line is small; keep stderr's head visible to the check below
	// even when the caller's budget is tiny.
	errHead := &headBuffer{n: 128}
	start := time.Now()
	code, err := run(runCtx, agent.Spec{
		Start: agent.Start{Args: cmd.Args, Env: env, Dir: adapter.DefaultWorkspace,
			Wrap: &agent.Wrap{Root: adapter.DefaultWorkspace, Dir: dir, ID: NewID(), Nonce: nonce}},
		Stdin:     cmd.Stdin,
		Stdout:    teeCapped{buf: outBuf, live: cmd.Stdout, mu: &mu},
		Stderr:    io.MultiWriter(errHead, teeCapped{buf: errBuf, live: cmd.Stderr, mu: &mu}),
		KillGrace: TermGrace,
	})
	res := adapter.Result{ExitCode: code, Duration: time.Since(start), Isolation: iso}
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
			if err := Refusal(op, cmd, c); err != nil {
				return adapter.Result{}, err
			}
		}
	}
	return res, nil
}

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

// marker returns CODE when the buffer is exactly the wrapper's failure line for nonce.
func (h *headBuffer) marker(nonce string) (string, bool) {
	h.mu.Lock()
	b := string(h.buf)
	h.mu.Unlock()
	prefix := "sandboxer:" + nonce + ":"
	if len(b) < len(prefix)+2 || b[:len(prefix)] != prefix || b[len(b)-1] != '\n' {
		return "", false
	}
	return b[len(prefix) : len(b)-1], true
}
