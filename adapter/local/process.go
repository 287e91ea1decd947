package local

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/procs"
	"github.com/sandboxer/sandboxer/errs"
)

var _ adapter.Starter = (*Sandbox)(nil)

// Start starts cmd in the background, as ExecuteCommand would start it (its own process group,
// or through the isolation helper with the same layers, cgroup included), and returns at once.
// Its output goes to the process's rings; only cmd.Timeout ends it besides a signal, its own exit
// and Stop. When its main process exits, whatever it left behind is killed, as for
// ExecuteCommand. At most Config.MaxProcesses run at once (errs.LimitExceeded).
func (s *Sandbox) Start(ctx context.Context, c adapter.Command) (adapter.Process, error) {
	if c.Stdin != nil {
		return nil, errs.New(errs.InvalidInput, "start", "", "a started process's stdin is written with Process.Write, not Command.Stdin")
	}
	prog, dir, err := s.prepare("start", c)
	if err != nil {
		return nil, err
	}
	if c.Env, err = s.egressEnv(ctx, c); err != nil {
		return nil, err
	}
	p, err := s.procs.New(c.Args, [2]io.Writer{c.Stdout, c.Stderr})
	if err != nil {
		return nil, err
	}
	c.Stdin = p.Stdin()
	proc, pipes, iso, err := s.spawn(c, prog, dir)
	p.ReleaseStdin() // the command has its own copy
	if err != nil {
		s.procs.Abandon(p)
		return nil, err
	}
	s.procs.Publish(p, control{proc}, iso)
	go s.follow(p, proc, pipes, c.Timeout)
	return p, nil
}

// follow copies a started process's output into its rings until it has exited, then records
// its end.
func (s *Sandbox) follow(p *procs.Proc, proc process, pipes *outPipes, timeout time.Duration) {
	defer pipes.close()
	ex, cause, err := s.collect(context.Background(), proc, pipes, timeout, [2]io.Writer{p.Stdout(), p.Stderr()})
	if err != nil { // poll failed: end the command and say so
		proc.signal(syscall.SIGKILL)
		ex.code, _ = proc.wait()
		proc.finish()
		cause = err
	}
	if cause == nil {
		cause = ex.err
	}
	if cause != nil {
		fmt.Fprintf(p.Stderr(), "sandboxer: %v\n", cause)
	}
	limit := ""
	if s.iso != nil {
		limit = s.iso.limitHit(ex.code)
	}
	p.Finish(ex.code, limit)
}

// Processes: see adapter.Starter.
func (s *Sandbox) Processes(ctx context.Context) ([]adapter.ProcessState, error) {
	return s.procs.Processes(ctx)
}

// Process: see adapter.Starter.
func (s *Sandbox) Process(ctx context.Context, id string) (adapter.Process, error) {
	return s.procs.Process(ctx, id)
}

// control signals a started process's group (SIGKILL: its whole tree, cgroup included).
type control struct{ p process }

func (c control) Signal(sig syscall.Signal) error {
	c.p.signal(sig)
	return nil
}

// stopProcesses kills the started processes and waits (bounded by ctx) until each is collected,
// so that their cgroups are back in the pool before the isolation closes it.
func (s *Sandbox) stopProcesses(ctx context.Context) error {
	running := s.procs.Close()
	for _, p := range running {
		_ = p.Signal(ctx, "KILL")
	}
	ctx, cancel := context.WithTimeout(ctx, unresponsive+5*time.Second)
	defer cancel()
	return procs.WaitAll(ctx, running)
}
