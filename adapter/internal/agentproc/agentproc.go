// Package agentproc is what the adapters that run the sandbox agent (docker, oci, kubernetes)
// share on top of its client: a handle's agent stream (Slot), the validation of a command and the
// meaning of the wrapper's refusals, the sandbox's loopback (adapter.PortForwarder,
// adapter.PortListener) and background processes (adapter.Starter), all through the agent.
package agentproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/errs"
)

// Validate checks cmd as adapter.Sandbox.ExecuteCommand documents and returns its working
// directory relative to the workspace ("." for the root).
func Validate(op string, cmd adapter.Command) (string, error) {
	if len(cmd.Args) == 0 || cmd.Args[0] == "" {
		return "", errs.New(errs.InvalidInput, op, "", "empty command")
	}
	if cmd.MaxOutputBytes < 0 || cmd.Timeout < 0 {
		return "", errs.New(errs.InvalidInput, op, "", "negative limit")
	}
	for _, a := range cmd.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errs.New(errs.InvalidInput, op, "", "argument contains a NUL byte")
		}
	}
	for _, e := range cmd.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" || strings.IndexByte(e, 0) >= 0 {
			return "", errs.New(errs.InvalidInput, op, "", "Env entry %q is not KEY=VALUE", e)
		}
	}
	if cmd.Dir == "" {
		return ".", nil
	}
	return adapter.Rel(op, adapter.DefaultWorkspace, cmd.Dir)
}

// Refusal is the error for a command the agent's wrapper refused with code (see agent.Wrap), or
// nil for an unknown code.
func Refusal(op string, cmd adapter.Command, code string) error {
	switch code {
	case "escape":
		return errs.New(errs.PathEscape, op, cmd.Dir, "working directory leaves the workspace")
	case "notfound":
		return errs.New(errs.NotFound, op, cmd.Dir, "working directory does not exist")
	case "noexec":
		return errs.New(errs.ProcessFailed, op, "", "executable %q not found or not executable", cmd.Args[0])
	}
	return nil
}

// Client gives a sandbox's agent client: an errs.SandboxUnavailable error when the sandbox is
// stopped or has no agent.
type Client func(ctx context.Context, op string) (*agent.Client, error)

// Broken is the error of op on a sandbox whose agent broke the protocol (err wraps
// agent.ErrProtocol, see agent.Client.Violation): SANDBOX_UNAVAILABLE. The adapters start no other
// agent for that sandbox handle: every later call fails the same way, without reaching it.
func Broken(op string, err error) error {
	return errs.Wrap(errs.SandboxUnavailable, op, "",
		fmt.Errorf("the sandbox agent broke the protocol; its stream is closed and no other agent is started: %w", err))
}

// mapErr turns an agent request's failure into the errs code the adapter contract names.
func mapErr(op string, cmd *adapter.Command, err error) error {
	var re *agent.RequestError
	if !errors.As(err, &re) {
		if errors.Is(err, agent.ErrProtocol) {
			return Broken(op, err)
		}
		if errors.Is(err, agent.ErrClosed) {
			return errs.Wrap(errs.SandboxUnavailable, op, "", err)
		}
		return err // a context error, or already an errs error
	}
	if strings.HasPrefix(re.Code, "wrap:") && cmd != nil {
		if e := Refusal(op, *cmd, strings.TrimPrefix(re.Code, "wrap:")); e != nil {
			return e
		}
	}
	code := errs.Internal
	switch re.Code {
	case "invalid", "inuse":
		code = errs.InvalidInput
	case "notfound", "refused":
		code = errs.NotFound
	case "limit":
		code = errs.LimitExceeded
	case "failed":
		code = errs.ProcessFailed
	case "unavailable":
		code = errs.SandboxUnavailable
	}
	return errs.New(code, op, "", "%s", re.Msg)
}

func checkPort(op string, port int) error {
	if port < 1 || port > 65535 {
		return errs.New(errs.InvalidInput, op, "", "port %d is outside 1..65535", port)
	}
	return nil
}

// DialPort connects to 127.0.0.1:port in the sandbox through its agent.
func DialPort(ctx context.Context, client Client, port int) (net.Conn, error) {
	const op = "dial"
	if err := checkPort(op, port); err != nil {
		return nil, err
	}
	c, err := client(ctx, op)
	if err != nil {
		return nil, err
	}
	conn, err := c.Dial(ctx, port)
	if err != nil {
		return nil, mapErr(op, nil, err)
	}
	return conn, nil
}

// ListenPort listens on 127.0.0.1:port in the sandbox through its agent; the listener ends with
// the agent's stream (the sandbox's Stop).
func ListenPort(ctx context.Context, client Client, port int) (net.Listener, error) {
	const op = "listen"
	if err := checkPort(op, port); err != nil {
		return nil, err
	}
	c, err := client(ctx, op)
	if err != nil {
		return nil, err
	}
	ln, err := c.Listen(ctx, port)
	if err != nil {
		return nil, mapErr(op, nil, err)
	}
	return ln, nil
}

// Starter is adapter.Starter over the agent, which keeps the processes: another sandboxer process
// attached to the same sandbox finds them.
type Starter struct {
	Client Client
	// Start builds the agent's start of a validated command (environment and wrapper), as the
	// adapter's ExecuteCommand does.
	Start func(cmd adapter.Command, dir string) agent.Start
	// Isolation is what the adapter enforces for every command.
	Isolation func() adapter.Isolation
}

// StartProcess is adapter.Starter.Start.
func (s *Starter) StartProcess(ctx context.Context, cmd adapter.Command) (adapter.Process, error) {
	const op = "start"
	dir, err := Validate(op, cmd)
	if err != nil {
		return nil, err
	}
	if cmd.Stdin != nil {
		return nil, errs.New(errs.InvalidInput, op, "", "a background process takes its input from Process.Write, not Command.Stdin")
	}
	c, err := s.Client(ctx, op)
	if err != nil {
		return nil, err
	}
	st := s.Start(cmd, dir)
	st.TimeoutMs = cmd.Timeout.Milliseconds()
	res, err := c.Request(ctx, agent.Request{Op: "start", Start: &st})
	if err != nil {
		return nil, mapErr(op, &cmd, err)
	}
	p := &process{s: s, id: res.Process.ID}
	if cmd.Stdout != nil || cmd.Stderr != nil {
		p.followed = make(chan struct{})
		go p.follow(cmd.Stdout, cmd.Stderr)
	}
	return p, nil
}

// Processes is adapter.Starter.Processes.
func (s *Starter) Processes(ctx context.Context) ([]adapter.ProcessState, error) {
	res, err := s.request(ctx, "ps", agent.Request{Op: "list"})
	if err != nil {
		return nil, err
	}
	out := make([]adapter.ProcessState, 0, len(res.Processes))
	for _, p := range res.Processes {
		out = append(out, s.state(p))
	}
	return out, nil
}

// Process is adapter.Starter.Process.
func (s *Starter) Process(ctx context.Context, id string) (adapter.Process, error) {
	if _, err := s.request(ctx, "process", agent.Request{Op: "output", Process: id, Since: 1 << 62}); err != nil {
		return nil, err
	}
	return &process{s: s, id: id}, nil
}

func (s *Starter) request(ctx context.Context, op string, req agent.Request) (agent.Result, error) {
	c, err := s.Client(ctx, op)
	if err != nil {
		return agent.Result{}, err
	}
	res, err := c.Request(ctx, req)
	if err != nil {
		return res, mapErr(op, nil, err)
	}
	return res, nil
}

func (s *Starter) state(p agent.ProcState) adapter.ProcessState {
	return adapter.ProcessState{ID: p.ID, Args: p.Args, Started: time.Unix(0, p.Started), Running: p.Running,
		ExitCode: p.ExitCode, Isolation: s.Isolation()}
}

type process struct {
	s  *Starter
	id string
	// followed, when this handle copies the output to live writers, is closed once the copy
	// has ended: Wait returns after it, so a caller that saw the exit has the whole copy.
	followed chan struct{}
}

var _ adapter.OutputLimiter = (*process)(nil)

func (p *process) ID() string { return p.id }

func (p *process) Output(ctx context.Context, since int64) (adapter.ProcessOutput, error) {
	return p.output(ctx, "output", since, 0, 0)
}

// OutputLimit is adapter.OutputLimiter's.
func (p *process) OutputLimit(ctx context.Context, since int64, limit int) (adapter.ProcessOutput, error) {
	if limit < 0 {
		limit = 0
	}
	return p.output(ctx, "output", since, limit, 0)
}

func (p *process) output(ctx context.Context, op string, since int64, limit int, wait time.Duration) (adapter.ProcessOutput, error) {
	res, err := p.s.request(ctx, op, agent.Request{Op: "output", Process: p.id, Since: since, Limit: limit, WaitMs: int(wait.Milliseconds())})
	if err != nil {
		return adapter.ProcessOutput{}, err
	}
	o := res.Output
	return adapter.ProcessOutput{Stdout: o.Stdout, Stderr: o.Stderr, Offset: o.Offset, Dropped: o.Dropped, State: p.s.state(o.State)}, nil
}

func (p *process) Write(ctx context.Context, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), agent.MaxPayload/2) // a request's JSON carries it in base64
		if _, err := p.s.request(ctx, "input", agent.Request{Op: "input", Process: p.id, Data: data[:n]}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (p *process) CloseStdin(ctx context.Context) error {
	_, err := p.s.request(ctx, "input", agent.Request{Op: "input", Process: p.id, EOF: true})
	return err
}

func (p *process) Signal(ctx context.Context, sig string) error {
	_, err := p.s.request(ctx, "signal", agent.Request{Op: "signal", Process: p.id, Signal: sig})
	return err
}

// waitSlice is one wait request's length: Wait repeats them until ctx ends.
const waitSlice = time.Minute

func (p *process) Wait(ctx context.Context) (adapter.ProcessState, error) {
	for {
		res, err := p.s.request(ctx, "wait", agent.Request{Op: "wait", Process: p.id, WaitMs: int(waitSlice.Milliseconds())})
		if err != nil {
			return adapter.ProcessState{}, err
		}
		if res.Process.Running {
			continue
		}
		if p.followed != nil {
			select {
			case <-p.followed:
			case <-ctx.Done():
				return adapter.ProcessState{}, ctx.Err()
			}
		}
		return p.s.state(*res.Process), nil
	}
}

func (p *process) State(ctx context.Context) (adapter.ProcessState, error) {
	res, err := p.s.request(ctx, "state", agent.Request{Op: "output", Process: p.id, Since: 1 << 62})
	if err != nil {
		return adapter.ProcessState{}, err
	}
	return p.s.state(*res.Process), nil
}

// follow copies the process's output to the live writers until it exits or the sandbox goes.
func (p *process) follow(stdout, stderr io.Writer) {
	defer close(p.followed)
	var since int64
	for {
		o, err := p.output(context.Background(), "output", since, 0, 10*time.Second)
		if err != nil {
			return
		}
		if stdout != nil && len(o.Stdout) > 0 {
			stdout.Write(o.Stdout)
		}
		if stderr != nil && len(o.Stderr) > 0 {
			stderr.Write(o.Stderr)
		}
		since = o.Offset
		if !o.State.Running && len(o.Stdout)+len(o.Stderr) == 0 {
			return
		}
	}
}
