package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/journal"
	"github.com/sandboxer/sandboxer/tools"
)

// maxInputBytes bounds the JSON input read from --input or stdin (the largest valid input is a
// write of BashMaxOutputBytes of content, JSON-escaped).
const maxInputBytes = 8*tools.BashMaxOutputBytes + 1<<20

func toolNames() []string {
	var n []string
	for _, t := range tools.All() {
		n = append(n, t.Name())
	}
	return n
}

func newToolCmd(std Streams) *cobra.Command {
	var input string
	c := &cobra.Command{
		Use:   "tool NAME [--input JSON | < input.json] [flags]",
		Short: "Run one tool call (" + strings.Join(toolNames(), ", ") + ") and print one JSON object",
		Long: `Run one tool call and print exactly one JSON object on stdout:

  {"ok":true,"output":"<the tool's result>"}
  {"ok":false,"error":{"code":"TOOL_NOT_FOUND","message":"...","details":{}}}

bash adds "stdout", "stderr", "exitCode" and "truncated" (and "enforced", "isolation",
"networkPolicy", "durationMs"); a non-zero exit is TOOL_COMMAND_FAILED whose details hold exitCode and output.
On --attempt > 1 the object carries "warning" when earlier attempts of the same run, node and
iteration already called side-effecting, non-idempotent tools.

The input is --input, or standard input when --input is not given. Every call is recorded in
the journal (--journal). Exit status: 0 ok, 1 tool error, 2 usage error (unknown tool, bad JSON).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(fmt.Errorf("tool: want one tool name (%s)", strings.Join(toolNames(), ", ")))
			}
			if tools.Lookup(args[0]) == nil {
				return usage(fmt.Errorf("tool: unknown tool %q (want one of %s)", args[0], strings.Join(toolNames(), ", ")))
			}
			return nil
		},
		RunE: runE(func(c *cobra.Command, args []string) error {
			t := tools.Lookup(args[0])
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			raw := []byte(input)
			if !c.Flags().Changed("input") {
				if raw, err = io.ReadAll(io.LimitReader(std.In, maxInputBytes+1)); err != nil {
					return usage(fmt.Errorf("tool: reading the input from stdin: %w", err))
				}
			}
			if err := checkInput(raw); err != nil {
				return usage(err)
			}
			ctx := c.Context()
			// From here on every failure is reported as the one JSON object, exit status 1.
			fail := func(err error) error {
				var ee *exitError
				if errors.As(err, &ee) {
					return err
				}
				if perr := printJSON(std, errorReply(err)); perr != nil {
					return perr
				}
				return exit(1)
			}
			sess, cl, done, err := openCaller(ctx, s, std.Err, t.Name() == "bash")
			if err != nil {
				return fail(err)
			}
			defer done()
			stop, err := attachWorkSync(ctx, s, sess, cl, std.Err)
			if err != nil {
				return fail(err)
			}
			defer stop()
			reply := cl.call(ctx, t, raw)
			if err := printJSON(std, reply); err != nil {
				return err
			}
			if !reply.OK {
				return exit(1)
			}
			return nil
		}),
	}
	addCommonFlags(c.Flags())
	c.Flags().StringVar(&input, "input", "", "the tool's input, a JSON object (default: read from stdin)")
	return c
}

// checkInput accepts exactly one JSON object (surrounding white space allowed).
func checkInput(raw []byte) error {
	if len(raw) > maxInputBytes {
		return fmt.Errorf("tool: input is larger than %d bytes", maxInputBytes)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return errors.New("tool: no input: give --input '{...}' or a JSON object on stdin")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("null")
		}
		return fmt.Errorf("tool: the input is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("tool: the input has data after the JSON object")
	}
	return nil
}

// journalOpening is the journal of one invocation being opened in the background, while the
// sandbox opens (both cost a few milliseconds; neither needs the other). In the resident server
// the journal is open already (warmth.journal).
type journalOpening struct {
	done    chan struct{}
	j       *journal.Journal
	release func() // ends this invocation's use of j
	err     error
}

// openJournal starts opening the journal of s (none when the journal is off).
func openJournal(ctx context.Context, s Settings) *journalOpening {
	o := &journalOpening{done: make(chan struct{})}
	opts := s.journalOptions()
	switch {
	case s.Journal == "":
		close(o.done)
	case s.inv.warm != nil:
		o.j, o.release, o.err = s.inv.warm.journal(ctx, s.Journal, opts)
		close(o.done)
	default:
		go func() {
			defer close(o.done)
			if o.j, o.err = journal.Open(ctx, s.Journal, opts); o.j != nil {
				o.release = func() { o.j.Close() }
			}
		}()
	}
	return o
}

// wait returns the opened journal (nil when off) or why it could not be opened.
func (o *journalOpening) wait() (*journal.Journal, error) {
	<-o.done
	return o.j, o.err
}

// discard closes the journal once it is open, for an invocation that ends before its calls.
func (o *journalOpening) discard() {
	if j, _ := o.wait(); j != nil {
		o.release()
	}
}

// openCaller opens the invocation's journal and sandbox together, then prepares its caller (see
// newCaller). done closes what it opened, the two together too: closing the journal completes
// the rows still queued and checkpoints its WAL into the file (two fsyncs), while the sandbox
// stops (its helper killed, its cgroups and temporary directories removed); neither needs the
// other (issue 15).
func openCaller(ctx context.Context, s Settings, warn io.Writer, warm bool) (*session, *caller, func(), error) {
	jo := openJournal(ctx, s)
	sess, err := openSession(ctx, s)
	if err != nil {
		jo.discard()
		return nil, nil, nil, err
	}
	if w, ok := sess.Sandbox.(adapter.Warmer); ok && warm {
		// The command's isolation helper starts while the journal opens and records the call.
		w.Warm(s.AllowNetwork)
	}
	cl, done := newCaller(s, sess, jo, warn)
	return sess, cl, func() {
		if cl.j == nil {
			sess.Close()
			return
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			done()
		}()
		sess.Close()
		<-closed
	}, nil
}

// newCaller prepares the journal and the tool context of one invocation. A journal that cannot be
// opened is reported on warn and the calls run without it. done closes the journal.
func newCaller(s Settings, sess *session, jo *journalOpening, warn io.Writer) (*caller, func()) {
	tc := tools.NewContext(sess.Sandbox)
	tc.RunID, tc.NodeID, tc.Iteration, tc.Attempt = s.RunID, s.NodeID, s.Iteration, s.Attempt
	tc.AllowNetwork, tc.MaxOutputBytes, tc.Timeout = s.AllowNetwork, s.MaxOutputBytes, s.Timeout
	tc.NoPathDiff = s.NoPathDiff
	tc.AllowHosts = sess.allowHosts(s)
	cl := &caller{
		base: *tc,
		pos:  journal.Position{RunID: s.RunID, NodeID: s.NodeID, Iteration: s.Iteration, Attempt: s.Attempt},
		warn: warn,
	}
	if j, err := jo.wait(); err != nil {
		cl.warnf("%v (tool calls run without a journal)", err)
	} else if j != nil {
		cl.j, cl.jw = j, newJournalWriter()
	}
	return cl, func() {
		if cl.j != nil {
			cl.jw.close()
			jo.release()
		}
	}
}
