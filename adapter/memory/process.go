package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

var _ adapter.Starter = (*Sandbox)(nil)

// isolation is what every memory command has: nothing of the host exists for it.
func isolation() adapter.Isolation {
	return adapter.Isolation{Network: true, Filesystem: true, ProcessTree: true, Layers: []string{"memory"}}
}

// Start runs cmd in the background: an interpreter goroutine under the same limits as
// ExecuteCommand (commands, loop iterations, variable and tree bytes) except the time limit:
// only cmd.Timeout ends it. At most Config.MaxProcesses run at once (errs.LimitExceeded). A
// signal ends the script at once with 128+signo (the interpreter has no signal traps); STOP and
// CONT cannot be delivered (errs.InvalidInput). Stop ends every process.
func (s *Sandbox) Start(ctx context.Context, c adapter.Command) (adapter.Process, error) {
	if c.Stdin != nil {
		return nil, errs.New(errs.InvalidInput, "start", "", "a started process's stdin is written with Process.Write, not Command.Stdin")
	}
	dir, env, err := s.prepare("start", c)
	if err != nil {
		return nil, err
	}
	var nf notFound
	if err := s.findProgram(binName(c.Args[0]), dir, env); errors.As(err, &nf) {
		return nil, errs.New(errs.ProcessFailed, "start", nf.name, "%s", nf.why)
	}
	p, err := s.procs.New(c.Args, [2]io.Writer{c.Stdout, c.Stderr})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	ctl := &control{cancel: cancel}
	c.Stdin, c.Stdout, c.Stderr = p.Stdin(), p.Stdout(), p.Stderr()
	c.MaxOutputBytes = 1 // the ring keeps the output; the Result's copy is not read
	s.procs.Publish(p, ctl, isolation())
	go func() {
		defer cancel()
		res, err := s.execute(runCtx, c, true)
		code, limit := res.ExitCode, ""
		switch sig := ctl.sig.Load(); {
		case err == nil:
		case sig != 0:
			code = 128 + int(sig)
		case errs.CodeOf(err) == errs.SandboxUnavailable:
			code = 128 + int(syscall.SIGKILL)
		default:
			var e *errs.Error
			if errors.As(err, &e) && e.Code == errs.LimitExceeded {
				limit, _ = e.Details["limit"].(string)
			}
			fmt.Fprintf(p.Stderr(), "memory: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		p.Finish(code, limit)
	}()
	return p, nil
}

// Processes: see adapter.Starter.
func (s *Sandbox) Processes(ctx context.Context) ([]adapter.ProcessState, error) {
	return s.procs.Processes(ctx)
}

// Process: see adapter.Starter.
func (s *Sandbox) Process(ctx context.Context, id string) (adapter.Process, error) {
	return s.procs.Process(ctx, id)
}

// control signals a background interpreter: any signal ends it.
type control struct {
	cancel context.CancelFunc
	sig    atomic.Int32
}

func (c *control) Signal(sig syscall.Signal) error {
	if sig == syscall.SIGSTOP || sig == syscall.SIGCONT {
		return fmt.Errorf("the memory adapter's interpreter cannot be paused: %w", errors.ErrUnsupported)
	}
	c.sig.CompareAndSwap(0, int32(sig))
	c.cancel()
	return nil
}
