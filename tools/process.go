package tools

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Long-running processes (issue 17): bash with opts.background starts a process and returns its
// id; process_output, process_input, process_kill and process_list work on it in later calls. The
// sandbox must implement adapter.Starter (every adapter of this module does, or will: an adapter
// without it answers errs.InvalidInput wrapping errors.ErrUnsupported).
//
// A started process lives until it exits, is killed, or its sandbox stops: for local and memory
// that is the sandboxer process that owns the sandbox (the MCP server), for docker and oci the
// sandbox itself. The tool context's timeout does not apply to it.

// BashMaxWaitMs bounds opts.waitMs of a background bash.
const BashMaxWaitMs = 600000

// BashStarted is the result of a background bash: the process's id and what it printed in the
// first opts.waitMs milliseconds.
type BashStarted struct {
	Process string `json:"process"`
	// Output is Stdout followed by Stderr.
	Output string `json:"output"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// Offset is where process_output goes on from (its since).
	Offset  int64 `json:"offset"`
	Running bool  `json:"running"`
	// ExitCode is set once the process has exited (within waitMs).
	ExitCode      *int              `json:"exitCode,omitempty"`
	Enforced      bool              `json:"enforced"`
	Isolation     adapter.Isolation `json:"isolation"`
	NetworkPolicy string            `json:"networkPolicy"`
}

// startBash is bash with opts.background: the command is checked as a foreground one is
// (limits, network policy), then started.
func startBash(ctx context.Context, cmd adapter.Command, waitMs int, networkPolicy string, tc *Context) (BashStarted, error) {
	st, err := starterOf(tc, "bash")
	if err != nil {
		return BashStarted{}, err
	}
	p, err := st.Start(ctx, cmd)
	if err != nil {
		return BashStarted{}, err
	}
	if waitMs > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Duration(waitMs)*time.Millisecond)
		_, werr := p.Wait(wctx)
		cancel()
		if werr != nil && ctx.Err() != nil {
			// The call itself was cancelled: the process started and keeps running; say which.
			e := errs.As(ctx.Err())
			e.Details = map[string]any{"process": p.ID()}
			return BashStarted{}, e
		}
	}
	out, err := readOutput(ctx, p, 0, tc.MaxOutputBytes)
	if err != nil {
		return BashStarted{}, err
	}
	res := BashStarted{
		Process:       p.ID(),
		Output:        string(out.Stdout) + string(out.Stderr),
		Stdout:        string(out.Stdout),
		Stderr:        string(out.Stderr),
		Offset:        out.Offset,
		Running:       out.State.Running,
		Enforced:      out.State.Isolation.Network,
		Isolation:     out.State.Isolation,
		NetworkPolicy: networkPolicy,
	}
	if !out.State.Running {
		res.ExitCode = &out.State.ExitCode
	}
	return res, nil
}

// starterOf is tc's sandbox as an adapter.Starter.
func starterOf(tc *Context, op string) (adapter.Starter, error) {
	st, ok := tc.Sandbox.(adapter.Starter)
	if c, capable := tc.Sandbox.(adapter.Capable); ok && capable && !c.Capabilities().Processes {
		ok = false // a docker sandbox without its agent, for one
	}
	if !ok {
		return nil, &errs.Error{Code: errs.InvalidInput, Op: op, Msg: "this sandbox cannot run background processes", Err: errors.ErrUnsupported}
	}
	return st, nil
}

// findProcess finds a process of tc's sandbox: errs.NotFound for an unknown id.
func findProcess(ctx context.Context, tc *Context, op, id string) (adapter.Process, error) {
	if id == "" {
		e := errs.New(errs.InvalidInput, op, "", "process is empty")
		e.Details = map[string]any{"field": "process"}
		return nil, e
	}
	st, err := starterOf(tc, op)
	if err != nil {
		return nil, err
	}
	return st.Process(ctx, id)
}

// readOutput reads at most limit bytes of p's output after since, where p can bound its reads.
func readOutput(ctx context.Context, p adapter.Process, since int64, limit int) (adapter.ProcessOutput, error) {
	if ol, ok := p.(adapter.OutputLimiter); ok {
		return ol.OutputLimit(ctx, since, limit)
	}
	return p.Output(ctx, since)
}

// ProcessOutputInput is the input of process_output.
type ProcessOutputInput struct {
	Process string `json:"process" jsonschema:"the process id that bash with opts.background returned"`
	Since   int64  `json:"since,omitempty" jsonschema:"the offset the previous process_output returned; 0 (the default) reads from the start"`
}

// ProcessOutputResult is the result of process_output.
type ProcessOutputResult struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// Offset is the since of the next call: every byte before it was returned or dropped.
	Offset int64 `json:"offset"`
	// Dropped counts the bytes after since that the process's rings (1 MiB per stream) no longer
	// held. A read stops after maxOutputBytes; what follows is not dropped, it comes next time.
	Dropped int64 `json:"dropped"`
	Running bool  `json:"running"`
	// ExitCode is set once the process has exited (128+signo for a signal).
	ExitCode *int   `json:"exitCode,omitempty"`
	Limit    string `json:"limit,omitempty"`
}

// ProcessOutput is the process_output tool: {process, since?} -> what the process wrote after
// offset since, at most maxOutputBytes of it (the rest comes with the next call, from Offset).
// Errors: errs.NotFound for an unknown process, errs.InvalidInput for a negative since.
var ProcessOutput = builtin("", Definition[ProcessOutputInput, ProcessOutputResult]{
	Name: "process_output",
	Description: "Read what a background process (bash with opts.background) printed after offset since: " +
		"stdout, stderr, the offset to pass as since next time, the bytes dropped from its 1 MiB rings, " +
		"whether it still runs and its exit code.",
	Execute: func(ctx context.Context, in ProcessOutputInput, tc *Context) (ProcessOutputResult, error) {
		if in.Since < 0 {
			e := errs.New(errs.InvalidInput, "process_output", "", "since must not be negative")
			e.Details = map[string]any{"field": "since"}
			return ProcessOutputResult{}, e
		}
		p, err := findProcess(ctx, tc, "process_output", in.Process)
		if err != nil {
			return ProcessOutputResult{}, err
		}
		out, err := readOutput(ctx, p, in.Since, tc.MaxOutputBytes)
		if err != nil {
			return ProcessOutputResult{}, err
		}
		res := ProcessOutputResult{Stdout: string(out.Stdout), Stderr: string(out.Stderr), Offset: out.Offset,
			Dropped: out.Dropped, Running: out.State.Running, Limit: out.State.Limit}
		if !out.State.Running {
			res.ExitCode = &out.State.ExitCode
		}
		return res, nil
	},
})

// ProcessInputInput is the input of process_input.
type ProcessInputInput struct {
	Process string `json:"process" jsonschema:"the process id"`
	Data    string `json:"data" jsonschema:"bytes to write to the process's stdin (include the newline a line-reading program waits for)"`
	EOF     bool   `json:"eof,omitempty" jsonschema:"close the process's stdin after data"`
}

// ProcessInput is the process_input tool: {process, data, eof?} -> "ok" once data is in the
// process's stdin pipe. A process that does not read blocks the call until the tool context's
// timeout (errs.ProcessTimeout). Errors: errs.NotFound for an unknown process, errs.InvalidInput
// once its stdin is closed or it has exited.
var ProcessInput = builtin("", Definition[ProcessInputInput, string]{
	Name:        "process_input",
	Description: "Write data to the stdin of a background process (bash with opts.background); eof closes its stdin afterwards.",
	SideEffect:  true,
	// Input often carries what should not be kept (a password a prompt asks for): the journal
	// keeps its hash and size, as for write's content.
	RedactFields: []string{"data"},
	Execute: func(ctx context.Context, in ProcessInputInput, tc *Context) (string, error) {
		if len(in.Data) > tc.MaxOutputBytes {
			return "", errs.New(errs.ContentTooLarge, "process_input", "", "data is %d bytes, more than maxOutputBytes %d", len(in.Data), tc.MaxOutputBytes)
		}
		p, err := findProcess(ctx, tc, "process_input", in.Process)
		if err != nil {
			return "", err
		}
		if in.Data != "" {
			wctx, cancel := context.WithTimeout(ctx, tc.Timeout)
			err := p.Write(wctx, []byte(in.Data))
			cancel()
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return "", errs.New(errs.ProcessTimeout, "process_input", "", "the process did not read its input within %s", tc.Timeout)
			}
			if err != nil {
				return "", err
			}
		}
		if in.EOF {
			if err := p.CloseStdin(ctx); err != nil {
				return "", err
			}
		}
		return "ok", nil
	},
})

// ProcessKillInput is the input of process_kill.
type ProcessKillInput struct {
	Process string `json:"process" jsonschema:"the process id"`
	Signal  string `json:"signal,omitempty" jsonschema:"TERM (the default), KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT"`
}

// ProcessKill is the process_kill tool: {process, signal?="TERM"} -> "ok" once the signal is
// sent to the process's tree (an exited process is not an error). Errors: errs.NotFound for an
// unknown process, errs.InvalidInput for an unknown signal.
var ProcessKill = builtin("", Definition[ProcessKillInput, string]{
	Name:        "process_kill",
	Description: "Send a signal (default TERM) to a background process and its children; process_output then shows its exit.",
	SideEffect:  true,
	Idempotent:  new(true),
	Execute: func(ctx context.Context, in ProcessKillInput, tc *Context) (string, error) {
		sig := in.Signal
		if sig == "" {
			sig = "TERM"
		}
		p, err := findProcess(ctx, tc, "process_kill", in.Process)
		if err != nil {
			return "", err
		}
		if err := p.Signal(ctx, sig); err != nil {
			return "", err
		}
		return "ok", nil
	},
})

// ProcessListInput is the input of process_list (nothing).
type ProcessListInput struct{}

// ProcessListResult is the result of process_list.
type ProcessListResult struct {
	Processes []adapter.ProcessState `json:"processes"`
}

// ProcessList is the process_list tool: {} -> the sandbox's processes, running and exited,
// oldest first.
var ProcessList = builtin("", Definition[ProcessListInput, ProcessListResult]{
	Name:        "process_list",
	Description: "List the sandbox's background processes (running and recently exited), oldest first, with their ids, argv, state and exit codes.",
	Execute: func(ctx context.Context, _ ProcessListInput, tc *Context) (ProcessListResult, error) {
		st, err := starterOf(tc, "process_list")
		if err != nil {
			return ProcessListResult{}, err
		}
		list, err := st.Processes(ctx)
		if err != nil {
			return ProcessListResult{}, err
		}
		if list == nil {
			list = []adapter.ProcessState{}
		}
		return ProcessListResult{Processes: list}, nil
	},
})
