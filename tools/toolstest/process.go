package toolstest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools"
)

// The process tools: bash with opts.background, process_output, process_input, process_kill and
// process_list. Skipped visibly for a sandbox that is no adapter.Starter.

func (s suite) processEnv(t *testing.T) *tools.Context {
	tc := s.env(t)
	if c, known := caps(tc.Sandbox); known && !c.Processes {
		t.Skip("the sandbox has no background processes (Capabilities.Processes)")
	}
	if _, ok := tc.Sandbox.(adapter.Starter); !ok {
		t.Skip("the sandbox is no adapter.Starter: no background processes")
	}
	return tc
}

// background starts argv with bash's opts.background (and waitMs).
func background(t *testing.T, tc *tools.Context, waitMs int, argv ...string) tools.BashStarted {
	t.Helper()
	res := ok(t, tc, tools.Bash, obj("cmd", argv[0], "args", argv[1:], "opts", obj("background", true, "waitMs", waitMs)))
	started, isStarted := res.Value.(tools.BashStarted)
	require.True(t, isStarted, "a background bash returns a BashStarted, not %T", res.Value)
	require.NotEmpty(t, started.Process)
	assert.Contains(t, res.Output, `"process":"`+started.Process+`"`, "the text the agent reads carries the id")
	return started
}

// pollOutput calls process_output from since until done says so (generous deadline), and
// returns everything read and the last result.
func pollOutput(t *testing.T, tc *tools.Context, id string, since int64, done func(stdout string, last tools.ProcessOutputResult) bool) (string, tools.ProcessOutputResult) {
	t.Helper()
	var stdout strings.Builder
	deadline := time.Now().Add(60 * time.Second)
	for {
		res := ok(t, tc, tools.ProcessOutput, obj("process", id, "since", since))
		out := res.Value.(tools.ProcessOutputResult)
		require.GreaterOrEqual(t, out.Offset, since)
		stdout.WriteString(out.Stdout)
		since = out.Offset
		if done(stdout.String(), out) {
			return stdout.String(), out
		}
		require.True(t, time.Now().Before(deadline), "process %s: stdout so far %q", id, stdout.String())
		time.Sleep(10 * time.Millisecond)
	}
}

func (s suite) testBackground(t *testing.T) {
	tc := s.processEnv(t)

	// waitMs returns as soon as the process exits, with its output and exit code.
	quick := background(t, tc, 60000, "sh", "-c", "echo hi; echo oops >&2; exit 3")
	assert.Equal(t, "hi\n", quick.Stdout)
	assert.Equal(t, "oops\n", quick.Stderr)
	assert.Equal(t, "hi\noops\n", quick.Output)
	assert.False(t, quick.Running)
	require.NotNil(t, quick.ExitCode)
	assert.Equal(t, 3, *quick.ExitCode)
	assert.Equal(t, int64(8), quick.Offset)

	// A line server: input in, output out, killed.
	srv := background(t, tc, 0, "sh", "-c", `echo ready; while read l; do echo "got $l"; done`)
	pollOutput(t, tc, srv.Process, 0, func(out string, _ tools.ProcessOutputResult) bool { return out == "ready\n" })
	assert.Equal(t, "ok", ok(t, tc, tools.ProcessInput, obj("process", srv.Process, "data", "one\n")).Output)
	out, last := pollOutput(t, tc, srv.Process, 0, func(out string, _ tools.ProcessOutputResult) bool { return out == "ready\ngot one\n" })
	assert.True(t, last.Running)
	assert.Nil(t, last.ExitCode)
	assert.Equal(t, "ready\ngot one\n", out)

	list := ok(t, tc, tools.ProcessList, "{}").Value.(tools.ProcessListResult)
	require.Len(t, list.Processes, 2)
	assert.Equal(t, quick.Process, list.Processes[0].ID)
	assert.Equal(t, srv.Process, list.Processes[1].ID)
	assert.True(t, list.Processes[1].Running)

	assert.Equal(t, "ok", ok(t, tc, tools.ProcessKill, obj("process", srv.Process)).Output)
	_, last = pollOutput(t, tc, srv.Process, last.Offset, func(_ string, last tools.ProcessOutputResult) bool { return !last.Running })
	require.NotNil(t, last.ExitCode)
	if c, known := caps(tc.Sandbox); !known || c.Signals {
		assert.Equal(t, 128+15, *last.ExitCode, "TERM is the default signal")
	}
	fails(t, tc, tools.ProcessInput, obj("process", srv.Process, "data", "late\n"), errs.InvalidInput)
	assert.Equal(t, "ok", ok(t, tc, tools.ProcessKill, obj("process", srv.Process, "signal", "KILL")).Output, "killing an exited process is fine")

	// eof closes stdin.
	cat := background(t, tc, 0, "cat")
	ok(t, tc, tools.ProcessInput, obj("process", cat.Process, "data", "all\n", "eof", true))
	out, last = pollOutput(t, tc, cat.Process, 0, func(_ string, last tools.ProcessOutputResult) bool { return !last.Running })
	assert.Equal(t, "all\n", out)
	assert.Equal(t, 0, *last.ExitCode)
}

func (s suite) testProcessErrors(t *testing.T) {
	tc := s.processEnv(t)
	fails(t, tc, tools.ProcessOutput, obj("process", "nope"), errs.NotFound)
	fails(t, tc, tools.ProcessInput, obj("process", "nope", "data", "x"), errs.NotFound)
	fails(t, tc, tools.ProcessKill, obj("process", "nope"), errs.NotFound)
	fails(t, tc, tools.ProcessOutput, obj("process", ""), errs.InvalidInput)
	fails(t, tc, tools.ProcessOutput, `{}`, errs.InvalidInput)
	fails(t, tc, tools.ProcessOutput, obj("process", "p1", "extra", 1), errs.InvalidInput)
	fails(t, tc, tools.Bash, obj("cmd", "true", "opts", obj("background", true, "waitMs", -1)), errs.InvalidInput)
	fails(t, tc, tools.Bash, obj("cmd", "true", "opts", obj("waitMs", 10)), errs.InvalidInput)
	fails(t, tc, tools.Bash, obj("cmd", "no-such-program-sandboxer", "opts", obj("background", true)), errs.ProcessFailed)
	fails(t, tc, tools.Bash, obj("cmd", "true", "opts", obj("background", true, "cwd", "../..")), errs.PathEscape)

	p := background(t, tc, 0, "sleep", "60")
	fails(t, tc, tools.ProcessKill, obj("process", p.Process, "signal", "BOGUS"), errs.InvalidInput)
	fails(t, tc, tools.ProcessOutput, obj("process", p.Process, "since", -1), errs.InvalidInput)
	tc.MaxOutputBytes = 4
	fails(t, tc, tools.ProcessInput, obj("process", p.Process, "data", "too long"), errs.ContentTooLarge)

	// At most adapter.DefaultMaxProcesses run at once.
	for range adapter.DefaultMaxProcesses - 1 {
		background(t, tc, 0, "sleep", "60")
	}
	fails(t, tc, tools.Bash, obj("cmd", "sleep", "args", []string{"60"}, "opts", obj("background", true)), errs.LimitExceeded)
	list := ok(t, tc, tools.ProcessList, "{}").Value.(tools.ProcessListResult)
	for _, p := range list.Processes {
		ok(t, tc, tools.ProcessKill, obj("process", p.ID, "signal", "KILL"))
	}
}

// The network policy applies to background commands as to foreground ones.
func (s suite) testBackgroundNetworkDenied(t *testing.T) {
	tc := s.processEnv(t)
	if c, known := caps(tc.Sandbox); known && c.Network == adapter.NetVirtual {
		t.Skip("the sandbox has no network: inspection does not apply")
	}
	for _, c := range NetworkDeniedCases[:min(5, len(NetworkDeniedCases))] {
		_, err := call(t, tc, tools.Bash, obj("cmd", c.Argv[0], "args", c.Argv[1:], "opts", obj("background", true)))
		require.Error(t, err, "%q", c.Argv)
		assert.Contains(t, []errs.Code{errs.NetworkDisabled, errs.GitRemoteDisabled}, errs.CodeOf(err), "%q: %v", c.Argv, err)
	}
	fails(t, tc, tools.Bash, obj("cmd", "sh", "args", []string{"-c", "echo ran > ran.txt; curl https://example.com"}, "opts", obj("background", true)), errs.NetworkDisabled)
	_, err := call(t, tc, tools.Read, obj("path", "ran.txt"))
	require.ErrorIs(t, err, errs.NotFound, "a denied background command does not run")
	list := ok(t, tc, tools.ProcessList, "{}").Value.(tools.ProcessListResult)
	assert.Empty(t, list.Processes)
}
