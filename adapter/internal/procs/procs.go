// Package procs keeps the long-running processes (adapter.Starter) of the adapters whose
// processes live in the sandboxer process itself (local, memory): the table with its limit and
// ids, and a Proc per process that implements adapter.Process over an output ring
// (adapter/agent/ring), a stdin pipe, and the adapter's way to signal it (Control).
//
// An adapter's Start asks the table for a new Proc (which counts against the limit at once),
// starts the command with Proc.Stdin and the Proc's output writers, then either Publishes it (it
// is listed and found from then on) or Abandons it (the start failed). When the command has ended
// and its output is drained, the adapter calls Finish with its exit code.
package procs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent/ring"
	"github.com/sandboxer/sandboxer/errs"
)

// Control is the adapter's handle on a running process.
type Control interface {
	// Signal sends sig to the process's tree. An error wrapping errors.ErrUnsupported says the
	// adapter cannot deliver that signal.
	Signal(sig syscall.Signal) error
}

// Table is a sandbox's processes. The zero value is not usable: call NewTable.
type Table struct {
	mu      sync.Mutex
	max     int
	seq     int
	pending int     // Procs made by New, neither published nor abandoned
	procs   []*Proc // published, oldest first
	closed  bool
}

// NewTable returns a table that runs at most max processes at once (0: adapter.DefaultMaxProcesses)
// and keeps as many exited ones.
func NewTable(max int) *Table {
	if max <= 0 {
		max = adapter.DefaultMaxProcesses
	}
	return &Table{max: max}
}

// New makes the Proc of a process about to start: errs.LimitExceeded when the table already runs
// its maximum, errs.SandboxUnavailable once Close was called.
func (t *Table) New(args []string, live [2]io.Writer) (*Proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errs.New(errs.SandboxUnavailable, "start", "", "the sandbox is stopped")
	}
	running := t.pending
	for _, p := range t.procs {
		if !p.exited() {
			running++
		}
	}
	if running >= t.max {
		e := errs.New(errs.LimitExceeded, "start", "", "the sandbox already runs %d processes (the most it may)", t.max)
		e.Details = map[string]any{"limit": "processes", "max": t.max}
		return nil, e
	}
	pr, pw, err := stdinPipe()
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "start", "", err)
	}
	t.seq++
	t.pending++
	p := &Proc{
		t:       t,
		id:      "p" + strconv.Itoa(t.seq),
		args:    append([]string(nil), args...),
		started: time.Now(),
		out:     ring.New(adapter.ProcessRingBytes),
		stdinR:  pr,
		stdinW:  pw,
		done:    make(chan struct{}),
	}
	for i, st := range []ring.Stream{ring.Stdout, ring.Stderr} {
		p.w[i] = p.out.Writer(st)
		if live[i] != nil {
			p.w[i] = &tee{ring: p.w[i], live: live[i]}
		}
	}
	return p, nil
}

// Publish lists p, started under ctl with the isolation iso; from now on it is found by its ID.
func (t *Table) Publish(p *Proc, ctl Control, iso adapter.Isolation) {
	p.mu.Lock()
	p.ctl, p.iso = ctl, iso
	p.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	t.procs = append(t.procs, p)
	t.prune()
}

// Abandon releases a Proc whose process could not start.
func (t *Table) Abandon(p *Proc) {
	t.mu.Lock()
	t.pending--
	t.mu.Unlock()
	p.closeStdin()
	p.stdinR.Close()
	p.out.Close()
}

// prune forgets the oldest exited processes beyond max. t.mu is held.
func (t *Table) prune() {
	exited := 0
	for _, p := range t.procs {
		if p.exited() {
			exited++
		}
	}
	if exited <= t.max {
		return
	}
	keep := t.procs[:0]
	for _, p := range t.procs {
		if exited > t.max && p.exited() {
			exited--
			continue
		}
		keep = append(keep, p)
	}
	clear(t.procs[len(keep):])
	t.procs = keep
}

// Get finds a published process: errs.NotFound when there is none with that id.
func (t *Table) Get(id string) (*Proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.procs {
		if p.id == id {
			return p, nil
		}
	}
	return nil, errs.New(errs.NotFound, "process", id, "no process %q in this sandbox", id)
}

// Processes is adapter.Starter's Processes over the table.
func (t *Table) Processes(ctx context.Context) ([]adapter.ProcessState, error) { return t.List(), nil }

// Process is adapter.Starter's Process over the table.
func (t *Table) Process(ctx context.Context, id string) (adapter.Process, error) {
	p, err := t.Get(id)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return p, nil
}

// List returns the published processes' states, oldest first.
func (t *Table) List() []adapter.ProcessState {
	t.mu.Lock()
	procs := append([]*Proc(nil), t.procs...)
	t.mu.Unlock()
	out := make([]adapter.ProcessState, 0, len(procs))
	for _, p := range procs {
		out = append(out, p.state())
	}
	return out
}

// Close refuses new processes and returns the ones still running, for the adapter to kill.
func (t *Table) Close() []*Proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	var running []*Proc
	for _, p := range t.procs {
		if !p.exited() {
			running = append(running, p)
		}
	}
	return running
}

// WaitAll waits until every process in procs has finished, or ctx ends (its error).
func WaitAll(ctx context.Context, procs []*Proc) error {
	for _, p := range procs {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Proc is one process of a Table. It implements adapter.Process (and adapter.OutputLimiter).
type Proc struct {
	t       *Table
	id      string
	args    []string
	started time.Time
	out     *ring.Buffer
	w       [2]io.Writer

	stdinR  *os.File // the command's stdin, until Finish (or ReleaseStdin)
	stdinW  *os.File // Write's end
	writeMu sync.Mutex

	done chan struct{} // closed by Finish

	mu          sync.Mutex
	ctl         Control
	iso         adapter.Isolation
	ended       bool
	code        int
	limit       string
	stdinClosed bool
}

var (
	_ adapter.Process       = (*Proc)(nil)
	_ adapter.OutputLimiter = (*Proc)(nil)
)

// ID is the process's id in its table ("p1", "p2", ...).
func (p *Proc) ID() string { return p.id }

// Stdin is the read end of the process's stdin pipe, for the command. An adapter whose command
// holds its own copy (a child process) calls ReleaseStdin once it has started.
func (p *Proc) Stdin() *os.File { return p.stdinR }

// ReleaseStdin closes this process's copy of the stdin read end.
func (p *Proc) ReleaseStdin() { p.stdinR.Close() }

// Stdout and Stderr are where the adapter copies the command's output.
func (p *Proc) Stdout() io.Writer { return p.w[0] }
func (p *Proc) Stderr() io.Writer { return p.w[1] }

// Finish records the end of the process (exit code, 128+signo for a signal; limit names a
// resource limit that ended it, or is ""), once its output is all written; it wakes Wait and
// the readers. Only the first call counts.
func (p *Proc) Finish(code int, limit string) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended, p.code, p.limit = true, code, limit
	p.mu.Unlock()
	p.closeStdin()
	p.stdinR.Close()
	// The state is final before the ring closes: a reader that sees the ring closed sees it.
	p.out.Close()
	// Pruned before Wait wakes: a caller that saw the exit sees the table as it is after it.
	p.t.mu.Lock()
	p.t.prune()
	p.t.mu.Unlock()
	close(p.done)
}

func (p *Proc) exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended
}

func (p *Proc) state() adapter.ProcessState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return adapter.ProcessState{ID: p.id, Args: p.args, Started: p.started, Running: !p.ended,
		ExitCode: p.code, Limit: p.limit, Isolation: p.iso}
}

// Output: see adapter.Process.
func (p *Proc) Output(ctx context.Context, since int64) (adapter.ProcessOutput, error) {
	return p.OutputLimit(ctx, since, 0)
}

// OutputLimit: see adapter.OutputLimiter.
func (p *Proc) OutputLimit(ctx context.Context, since int64, limit int) (adapter.ProcessOutput, error) {
	if since < 0 || limit < 0 {
		return adapter.ProcessOutput{}, errs.New(errs.InvalidInput, "output", p.id, "since and limit must not be negative")
	}
	c := p.out.ReadLimit(since, limit)
	st := p.state()
	if !c.Closed {
		// The process may have ended since the read; its bytes so far were read while it ran.
		st.Running, st.ExitCode, st.Limit = true, 0, ""
	}
	return adapter.ProcessOutput{Stdout: c.Stdout, Stderr: c.Stderr, Offset: c.Offset, Dropped: c.Dropped, State: st}, nil
}

// Wait: see adapter.Process.
func (p *Proc) Wait(ctx context.Context) (adapter.ProcessState, error) {
	select {
	case <-p.done:
		return p.state(), nil
	case <-ctx.Done():
		return adapter.ProcessState{}, ctx.Err()
	}
}

// State: see adapter.Process.
func (p *Proc) State(ctx context.Context) (adapter.ProcessState, error) { return p.state(), nil }

// WaitOutput blocks until the process has output after since, or has ended, or ctx ends.
func (p *Proc) WaitOutput(ctx context.Context, since int64) error { return p.out.Wait(ctx, since) }

// Signal: see adapter.Process.
func (p *Proc) Signal(ctx context.Context, name string) error {
	sig, err := ParseSignal(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	ended, ctl := p.ended, p.ctl
	p.mu.Unlock()
	if ended || ctl == nil {
		return nil
	}
	if err := ctl.Signal(sig); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return &errs.Error{Code: errs.InvalidInput, Op: "signal", Path: p.id, Msg: "signal " + name + " cannot be delivered here", Err: err}
		}
		return errs.Wrap(errs.Internal, "signal", p.id, err)
	}
	return nil
}

// Write: see adapter.Process.
func (p *Proc) Write(ctx context.Context, data []byte) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.mu.Lock()
	closed := p.stdinClosed || p.ended
	p.mu.Unlock()
	if closed {
		return errs.New(errs.InvalidInput, "write", p.id, "the process's stdin is closed")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The write is cut when ctx ends (not at ctx's deadline, which may pass a moment before
	// ctx.Err says so).
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cut)
		_ = p.stdinW.SetWriteDeadline(time.Now())
	})
	_, err := p.stdinW.Write(data)
	if !stop() && ctx.Done() != nil {
		<-cut
	}
	_ = p.stdinW.SetWriteDeadline(time.Time{})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, os.ErrClosed), errors.Is(err, syscall.EPIPE):
		return errs.New(errs.InvalidInput, "write", p.id, "the process's stdin is closed")
	}
	return errs.Wrap(errs.Internal, "write", p.id, err)
}

// CloseStdin: see adapter.Process.
func (p *Proc) CloseStdin(ctx context.Context) error {
	p.closeStdin()
	return nil
}

func (p *Proc) closeStdin() {
	p.mu.Lock()
	p.stdinClosed = true
	p.mu.Unlock()
	p.stdinW.Close() // a blocked Write returns os.ErrClosed
}

// stdinPipe makes a process's stdin pipe: the read end blocking, as a command expects its stdin
// to be (os.Pipe makes both ends non-blocking, and a command reading an empty non-blocking pipe
// gets EAGAIN, which most take for an error), the write end non-blocking so that Write waits in
// the runtime's poller and can be cut.
func stdinPipe() (r, w *os.File, err error) {
	var fds [2]int
	syscall.ForkLock.RLock() // no child may inherit the pipe before it is close-on-exec
	err = syscall.Pipe(fds[:])
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.SetNonblock(fds[1], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// signals are the names Signal accepts.
var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
}

// ParseSignal maps a signal name ("TERM", also "SIGTERM" or "term") to its number:
// errs.InvalidInput for any other.
func ParseSignal(name string) (syscall.Signal, error) {
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "SIG")
	if sig, ok := signals[n]; ok {
		return sig, nil
	}
	return 0, errs.New(errs.InvalidInput, "signal", "", "unknown signal %q (one of TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT)", name)
}

// tee writes to the ring, then a live copy whose errors do not stop the ring.
type tee struct {
	ring io.Writer
	live io.Writer
}

func (t *tee) Write(b []byte) (int, error) {
	n, err := t.ring.Write(b)
	_, _ = t.live.Write(b)
	return n, err
}

// String is for logs.
func (p *Proc) String() string { return fmt.Sprintf("process %s %q", p.id, p.args) }
