package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

// process is a background process of a server's sandbox.
type process struct {
	s  *Sandbox
	id string
	// live is closed when the live copy of the output (Command.Stdout, Stderr) has all of it:
	// Wait returns after it, as a local process's Wait returns after its pipes are drained.
	live chan struct{}
}

var (
	_ adapter.Process       = (*process)(nil)
	_ adapter.OutputLimiter = (*process)(nil)
)

// Start starts a background process on the server. With cmd.Stdout or cmd.Stderr set, its
// output is followed and copied to them until it exits or the sandbox is stopped.
func (s *Sandbox) Start(ctx context.Context, cmd adapter.Command) (adapter.Process, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(cmd.Args) == 0 {
		return nil, errs.New(errs.InvalidInput, "start", "", "empty argv")
	}
	if cmd.Stdin != nil {
		return nil, errs.New(errs.InvalidInput, "start", "", "a process's stdin is written with Process.Write")
	}
	if cmd.Timeout < 0 || cmd.MaxOutputBytes < 0 {
		return nil, errs.New(errs.InvalidInput, "start", "", "negative timeout or output limit")
	}
	req := api.ExecRequest{Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Env, TimeoutMs: cmd.Timeout.Milliseconds(), MaxOutputBytes: cmd.MaxOutputBytes}
	if cmd.Timeout > 0 && req.TimeoutMs == 0 {
		req.TimeoutMs = 1
	}
	var st adapter.ProcessState
	if err := s.c.call(ctx, http.MethodPost, s.path("/processes"), nil, req, &st); err != nil {
		return nil, err
	}
	p := &process{s: s, id: st.ID}
	if cmd.Stdout != nil || cmd.Stderr != nil {
		p.live = make(chan struct{})
		go func() {
			defer close(p.live)
			p.copyLive(cmd.Stdout, cmd.Stderr)
		}()
	}
	return p, nil
}

// copyLive follows the process's output into the live writers.
func (p *process) copyLive(stdout, stderr io.Writer) {
	ctx := p.s.ctx
	var since int64
	for ctx.Err() == nil {
		req, err := p.s.c.request(ctx, http.MethodGet, p.path("/output"), url.Values{"since": {strconv.FormatInt(since, 10)},
			"encoding": {api.EncodingBase64}, "follow": {"true"}}, nil)
		if err != nil {
			return
		}
		resp, _, err := p.s.c.do(req)
		if err != nil {
			return
		}
		done := false
		dec := newChunkReader(resp.Body)
		for {
			c, err := dec()
			if err != nil {
				break
			}
			out, _ := api.Decode(c.Stdout, c.Encoding)
			errb, _ := api.Decode(c.Stderr, c.Encoding)
			if stdout != nil && len(out) > 0 {
				stdout.Write(out)
			}
			if stderr != nil && len(errb) > 0 {
				stderr.Write(errb)
			}
			since = c.Offset
			if !c.State.Running || c.Error != nil {
				done = true
				break
			}
		}
		resp.Body.Close()
		if done {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Processes lists the sandbox's processes.
func (s *Sandbox) Processes(ctx context.Context) ([]adapter.ProcessState, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var list api.ProcessList
	if err := s.c.call(ctx, http.MethodGet, s.path("/processes"), nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Processes, nil
}

// Process finds a process by ID.
func (s *Sandbox) Process(ctx context.Context, id string) (adapter.Process, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	p := &process{s: s, id: id}
	if _, err := p.State(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) ID() string { return p.id }

func (p *process) path(suffix string) string {
	return p.s.path("/processes/" + url.PathEscape(p.id) + suffix)
}

func (p *process) Output(ctx context.Context, since int64) (adapter.ProcessOutput, error) {
	return p.OutputLimit(ctx, since, 0)
}

func (p *process) OutputLimit(ctx context.Context, since int64, limit int) (adapter.ProcessOutput, error) {
	if err := p.s.check(); err != nil {
		return adapter.ProcessOutput{}, err
	}
	if since < 0 || limit < 0 {
		return adapter.ProcessOutput{}, errs.New(errs.InvalidInput, "output", "", "negative offset or limit")
	}
	q := url.Values{"since": {strconv.FormatInt(since, 10)}, "encoding": {api.EncodingBase64}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var c api.ProcessChunk
	if err := p.s.c.call(ctx, http.MethodGet, p.path("/output"), q, nil, &c); err != nil {
		return adapter.ProcessOutput{}, err
	}
	return chunkOutput(c)
}

func chunkOutput(c api.ProcessChunk) (adapter.ProcessOutput, error) {
	stdout, err := api.Decode(c.Stdout, c.Encoding)
	if err != nil {
		return adapter.ProcessOutput{}, errs.Wrap(errs.Internal, "output", "", err)
	}
	stderr, err := api.Decode(c.Stderr, c.Encoding)
	if err != nil {
		return adapter.ProcessOutput{}, errs.Wrap(errs.Internal, "output", "", err)
	}
	return adapter.ProcessOutput{Stdout: stdout, Stderr: stderr, Offset: c.Offset, Dropped: c.Dropped, State: c.State}, nil
}

func (p *process) Write(ctx context.Context, data []byte) error {
	if err := p.s.check(); err != nil {
		return err
	}
	return p.s.c.call(ctx, http.MethodPost, p.path("/stdin"), nil, bytes.NewReader(data), nil)
}

func (p *process) CloseStdin(ctx context.Context) error {
	if err := p.s.check(); err != nil {
		return err
	}
	return p.s.c.call(ctx, http.MethodPost, p.path("/stdin"), url.Values{"close": {"true"}}, bytes.NewReader(nil), nil)
}

func (p *process) Signal(ctx context.Context, sig string) error {
	if err := p.s.check(); err != nil {
		return err
	}
	return p.s.c.call(ctx, http.MethodPost, p.path("/signal"), nil, api.SignalRequest{Signal: sig}, nil)
}

// Wait waits for the process to exit, in requests of at most a minute each (a proxy between
// client and server may end a request that stays silent longer).
func (p *process) Wait(ctx context.Context) (adapter.ProcessState, error) {
	for {
		if err := p.s.check(); err != nil {
			return adapter.ProcessState{}, err
		}
		var st adapter.ProcessState
		if err := p.s.c.call(ctx, http.MethodPost, p.path("/wait"), url.Values{"timeoutMs": {"60000"}}, nil, &st); err != nil {
			return st, err
		}
		if !st.Running {
			if p.live != nil {
				select {
				case <-p.live:
				case <-ctx.Done():
				}
			}
			return st, nil
		}
	}
}

func (p *process) State(ctx context.Context) (adapter.ProcessState, error) {
	if err := p.s.check(); err != nil {
		return adapter.ProcessState{}, err
	}
	var st adapter.ProcessState
	err := p.s.c.call(ctx, http.MethodGet, p.path(""), nil, nil, &st)
	return st, err
}

// newChunkReader reads the NDJSON chunks of a followed output one at a time.
func newChunkReader(r io.Reader) func() (api.ProcessChunk, error) {
	dec := json.NewDecoder(r)
	return func() (api.ProcessChunk, error) {
		var c api.ProcessChunk
		err := dec.Decode(&c)
		return c, err
	}
}
