package tools

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// BashInput is the input of bash.
type BashInput struct {
	Cmd  string    `json:"cmd" jsonschema:"executable name or path; no shell parsing (for pipes use cmd sh with args [-c, script])"`
	Args []string  `json:"args,omitempty" jsonschema:"arguments, passed as they are"`
	Opts *BashOpts `json:"opts,omitempty" jsonschema:"options"`
}

// BashOpts are the per-call options of bash.
type BashOpts struct {
	Cwd string `json:"cwd,omitempty" jsonschema:"working directory inside the workspace; default the workspace root"`
	// Background starts the command and returns at once with its process id (BashStarted); the
	// process_* tools read its output, write its stdin and kill it. The timeout does not apply.
	Background bool `json:"background,omitempty" jsonschema:"start the command in the background and return at once with {process, output}; read it with process_output, write its stdin with process_input, stop it with process_kill"`
	// WaitMs, with Background, waits that long (or until the process exits) before returning
	// what it printed. 0..BashMaxWaitMs.
	WaitMs int `json:"waitMs,omitempty" jsonschema:"with background: milliseconds to wait (less if the process exits) before returning what it printed; default 0"`
}

// BashResult is the result of a bash call that exited 0 (and the Details of one that did not).
type BashResult struct {
	// Output is stdout followed by stderr (each already capped at MaxOutputBytes). The two streams
	// are captured separately, so their interleaving in time is not kept.
	Output    string `json:"output"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exitCode"`
	Truncated bool   `json:"truncated"` // either stream went over MaxOutputBytes
	// StdoutDropped and StderrDropped count the bytes left out of a truncated stream.
	StdoutDropped int64 `json:"stdoutDroppedBytes,omitempty"`
	StderrDropped int64 `json:"stderrDroppedBytes,omitempty"`
	DurationMs    int64 `json:"durationMs"`
	// Enforced says whether the sandbox itself cut the command off the network (network namespace,
	// container network none, no network at all), as opposed to argv inspection alone. false
	// while the network is off means only the policy check applied (SPEC.md section 4).
	Enforced bool `json:"enforced"`
	// Isolation lists every enforcement layer that was in force.
	Isolation adapter.Isolation `json:"isolation"`
	// Limit names the resource limit that ended the command ("memory"), if one did.
	Limit string `json:"limit,omitempty"`
	// NetworkPolicy says what command inspection did: "inspected" (the network is off and the
	// command passed), "no-network" (the network is off and the sandbox has none at all, so
	// inspection does not apply), or "off" (allowNetwork).
	NetworkPolicy string `json:"networkPolicy"`
	// Network lists what the sandbox's egress proxy decided while the command ran (allowHosts):
	// one entry per CONNECT tunnel or plain HTTP request, with the bytes each way. Absent when
	// the sandbox has no proxy or no connection was made. A sandbox running several commands at
	// once reports each request under every command running at the time.
	Network []egress.Decision `json:"network,omitempty"`
	// Receipt is what the command cost (time, CPU, memory, processes, bytes) and which workspace
	// paths it created, changed and deleted (docs/receipts.md).
	Receipt adapter.Receipt `json:"receipt"`
}

// Text is the combined output: what the agent reads.
func (r BashResult) Text() string { return r.Output }

// Bash is the bash tool: {cmd, args?, opts?: {cwd?}} -> BashResult. argv = [cmd, args...] runs
// directly through Sandbox.ExecuteCommand, without a shell, in opts.cwd (default the root), with
// MaxOutputBytes per stream and Timeout.
//
// Checks before anything runs, each errs.InvalidInput naming the field: cmd empty or only white
// space, cmd over BashMaxCommandLength, more than BashMaxArgs args, an arg over BashMaxArgLength,
// cmd and args joined by spaces over BashMaxCommandLength, opts.cwd over BashMaxCwdLength, args
// not strings. Then, with AllowNetwork false and a sandbox that has a network (policy.Needed),
// the policy check: errs.NetworkDisabled or errs.GitRemoteDisabled (Details["command"]), and the
// command is not run. The result's NetworkPolicy says which applied.
//
// Errors after that: errs.PathEscape / errs.PathInvalid / errs.NotFound for a bad opts.cwd;
// errs.ProcessFailed (the executable cannot be started); errs.ProcessTimeout (the whole process
// tree was killed; Details hold the partial "output", "stdout", "stderr", "truncated");
// errs.CommandFailed for a non-zero exit, with Details "exitCode", "output", "stdout", "stderr",
// "truncated", "isolation", "enforced"; errs.SandboxUnavailable.
//
// With opts.background the command is checked the same way, then started (adapter.Starter) and
// the call returns at once (after opts.waitMs) with a BashStarted: {process, output, ...}.
var Bash = builtin("", Definition[BashInput, any]{
	Name:        "bash",
	Description: "Run an executable with arguments in the sandbox workspace, without a shell (for pipes or redirects run sh with args [\"-c\", script]). Returns the combined output; a non-zero exit is an error carrying the output. With opts.background it returns at once with {process, output} (a dev server, a watcher): see process_output, process_input, process_kill, process_list.",
	SideEffect:  true,
	Execute:     runBash,
})

// ValidateBash checks in against the BashMax* limits without running anything; Bash calls it
// first. Errors are errs.InvalidInput whose message and Details["field"] name the field.
func ValidateBash(in BashInput) error {
	if strings.TrimSpace(in.Cmd) == "" {
		return fieldErr("cmd", "cmd is empty")
	}
	if len(in.Cmd) > BashMaxCommandLength {
		return fieldErr("cmd", "cmd is %d bytes, more than %d", len(in.Cmd), BashMaxCommandLength)
	}
	if len(in.Args) > BashMaxArgs {
		return fieldErr("args", "args has %d entries, more than %d", len(in.Args), BashMaxArgs)
	}
	total := len(in.Cmd)
	for i, a := range in.Args {
		if len(a) > BashMaxArgLength {
			return fieldErr("args", "args[%d] is %d bytes, more than %d", i, len(a), BashMaxArgLength)
		}
		total += 1 + len(a)
	}
	if total > BashMaxCommandLength {
		return fieldErr("args", "cmd and args joined are %d bytes, more than %d", total, BashMaxCommandLength)
	}
	if in.Opts != nil && len(in.Opts.Cwd) > BashMaxCwdLength {
		return fieldErr("opts.cwd", "opts.cwd is %d bytes, more than %d", len(in.Opts.Cwd), BashMaxCwdLength)
	}
	if in.Opts != nil && (in.Opts.WaitMs < 0 || in.Opts.WaitMs > BashMaxWaitMs) {
		return fieldErr("opts.waitMs", "opts.waitMs must be between 0 and %d, got %d", BashMaxWaitMs, in.Opts.WaitMs)
	}
	if in.Opts != nil && in.Opts.WaitMs != 0 && !in.Opts.Background {
		return fieldErr("opts.waitMs", "opts.waitMs applies only with opts.background")
	}
	return nil
}

func fieldErr(field, format string, args ...any) error {
	e := errs.New(errs.InvalidInput, "bash", "", format, args...)
	e.Details = map[string]any{"field": field}
	return e
}

func runBash(ctx context.Context, in BashInput, tc *Context) (any, error) {
	if err := ValidateBash(in); err != nil {
		return BashResult{}, err
	}
	argv := make([]string, 0, 1+len(in.Args))
	argv = append(argv, in.Cmd)
	argv = append(argv, in.Args...)
	networkPolicy, err := CheckNetwork("bash", tc.Sandbox, tc.AllowNetwork, tc.AllowHosts, argv)
	if err != nil {
		return BashResult{}, err
	}
	var dir string
	if in.Opts != nil {
		dir = in.Opts.Cwd
		if dir != "" && strings.TrimSpace(dir) == "" {
			return BashResult{}, errs.New(errs.PathInvalid, "bash", dir, "opts.cwd is only white space")
		}
	}
	cmd := adapter.Command{
		Args:           argv,
		Dir:            dir,
		Env:            tc.Env,
		Timeout:        tc.Timeout,
		MaxOutputBytes: tc.MaxOutputBytes,
		AllowNetwork:   tc.AllowNetwork,
		Stdout:         tc.Stdout,
		Stderr:         tc.Stderr,
	}
	if in.Opts != nil && in.Opts.Background {
		// The same command, network settings included, without what only a foreground call
		// has: the timeout, the capture budget and the live copy.
		cmd.Timeout, cmd.MaxOutputBytes, cmd.Stdout, cmd.Stderr = 0, 0, nil, nil
		started, err := startBash(ctx, cmd, in.Opts.WaitMs, networkPolicy, tc)
		if err != nil {
			return nil, pathErr(err, dir)
		}
		return started, nil
	}
	proxy := egress.Of(tc.Sandbox)
	var mark egress.Mark
	if proxy != nil {
		mark = proxy.Mark()
	}
	diff := beginPathDiff(ctx, tc)
	res, err := tc.Sandbox.ExecuteCommand(ctx, cmd)
	out := bashResult(res)
	out.NetworkPolicy = networkPolicy
	if proxy != nil {
		out.Network, _ = proxy.Since(ctx, mark, networkGrace)
		addNetwork(&out.Receipt, out.Network)
		if len(out.Network) == 0 {
			out.Network = nil
		}
	}
	out.Receipt.Paths = diff.end(ctx)
	if err != nil {
		e := errs.As(err)
		if errors.Is(err, errs.ProcessTimeout) {
			e.Details = mergeDetails(e.Details, out.details())
		}
		return BashResult{}, pathErr(e, dir)
	}
	if res.ExitCode != 0 {
		e := errs.New(errs.CommandFailed, "bash", "", "command exited with code %d", res.ExitCode)
		if out.Output != "" {
			e.Msg += ":\n" + out.Output
		}
		e.Details = out.details()
		return BashResult{}, e
	}
	return out, nil
}

// pathErr names the working directory in an error about it.
func pathErr(err error, dir string) error {
	e := errs.As(err)
	if e.Path == "" && dir != "" && (errors.Is(err, errs.PathEscape) || errors.Is(err, errs.PathInvalid) || errors.Is(err, errs.NotFound)) {
		e.Path = dir
	}
	return e
}

// networkGrace is how long bash waits, after the command, for the proxy to finish copying the
// last bytes of the connections the command closed (for the counts in Network).
const networkGrace = 2 * time.Second

func bashResult(res adapter.Result) BashResult {
	stdout, stderr := string(res.Stdout), string(res.Stderr)
	return BashResult{
		Output:        stdout + stderr,
		Stdout:        stdout,
		Stderr:        stderr,
		ExitCode:      res.ExitCode,
		Truncated:     res.Truncated(),
		StdoutDropped: res.StdoutDropped,
		StderrDropped: res.StderrDropped,
		DurationMs:    res.Duration.Milliseconds(),
		Enforced:      res.Isolation.Network,
		Isolation:     res.Isolation,
		Limit:         res.Limit,
		Receipt:       res.Receipt,
	}
}

func (r BashResult) details() map[string]any {
	d := map[string]any{
		"exitCode":      r.ExitCode,
		"output":        r.Output,
		"stdout":        r.Stdout,
		"stderr":        r.Stderr,
		"truncated":     r.Truncated,
		"enforced":      r.Enforced,
		"isolation":     r.Isolation,
		"networkPolicy": r.NetworkPolicy,
		"receipt":       r.Receipt,
	}
	if r.Limit != "" {
		d["limit"] = r.Limit
	}
	if r.Network != nil {
		d["network"] = r.Network
	}
	return d
}
