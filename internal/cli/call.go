package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/telemetry"
	"github.com/sandboxer/sandboxer/journal"
	"github.com/sandboxer/sandboxer/tools"
)

// WireError is the "error" member of a failed call's JSON.
type WireError = api.Error

// Reply is the JSON object of one tool call, the same on the CLI (stdout of `sandboxer tool`) and
// over MCP (structured content):
//
//	{"ok":true,"output":"<result text>"[,"exitCode":0,"stdout":"","stderr":"","truncated":false][,"warning":"..."]}
//	{"ok":false,"error":{"code":"<CODE>","message":"...","details":{...}}[,"warning":"..."]}
//
// The bash members come from the tool's structured result (tools.BashResult).
type Reply struct {
	OK      bool
	Output  string
	Extra   []member // structured members of the result, after "output"
	Error   *WireError
	Warning string
}

type member struct {
	key string
	val json.RawMessage
}

// MarshalJSON writes the members in the documented order.
func (r Reply) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	put := func(key string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		if raw, ok := v.(json.RawMessage); ok {
			b.Write(raw)
			return nil
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		return nil
	}
	b.WriteByte('{')
	var err error
	if err = put("ok", r.OK); err != nil {
		return nil, err
	}
	if r.OK {
		err = put("output", r.Output)
		for _, m := range r.Extra {
			if err == nil {
				err = put(m.key, m.val)
			}
		}
	} else {
		err = put("error", r.Error)
	}
	if err == nil && r.Warning != "" {
		err = put("warning", r.Warning)
	}
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// errorReply turns a tool error into its wire form. The message is the error text without the
// leading code ("read ../x: path leaves the workspace").
func errorReply(err error) Reply {
	e := errs.As(err)
	msg := strings.TrimPrefix(e.Error(), string(e.Code)+": ")
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	return Reply{Error: &WireError{Code: e.Code, Message: msg, Details: details}}
}

// Text is the text an agent reads: the result, or the error starting with its code.
func (r Reply) Text() string {
	if r.OK {
		return r.Output
	}
	if r.Error.Message == "" {
		return string(r.Error.Code)
	}
	return string(r.Error.Code) + ": " + r.Error.Message
}

// resultReply turns a tool's result into its wire form: output is the result text; a Texter result
// (bash) that encodes to a JSON object adds its members after "output". value is the JSON of
// res.Value (nil if it has none).
func resultReply(res *tools.Result, value json.RawMessage) Reply {
	r := Reply{OK: true, Output: res.Output}
	if _, ok := res.Value.(tools.Texter); !ok || value == nil {
		return r
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return r
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return r
		}
		key, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return r
		}
		switch key {
		case "ok", "output", "error", "warning":
			continue
		}
		r.Extra = append(r.Extra, member{key: key, val: val})
	}
	return r
}

// caller runs the tool calls of one task position (run, node, iteration, attempt) and journals
// every one of them: a row with status running before the tool runs (journal.Begin, which also
// allocates the call's seq), completed with the outcome after (journal.Finish). A journal failure
// is reported on warn and never changes or hides the result.
type caller struct {
	base    tools.Context // template: sandbox, limits and position; Seq is set per call
	pos     journal.Position
	j       *journal.Journal // nil: journal off or could not be opened
	warn    io.Writer
	warnMu  sync.Mutex
	seq     atomic.Int64 // in-process seq when there is no journal to continue from
	after   func(ctx context.Context, tool *tools.Tool) error
	warning struct {
		once sync.Once
		text string
	}
	jw *journalWriter // runs the journal's writes; nil without a journal
	// finishLater completes a call's row after its reply is returned (the MCP server: the
	// client does not wait for that write). The row is running meanwhile; closing jw waits for
	// it.
	finishLater bool
}

// journalWriter runs a process's journal writes in order on one long-lived goroutine. Its stack
// grows once to what SQLite's deep frames need; on each request's (new) goroutine, or on one per
// completed row, the runtime would copy a growing stack every call. A handoff to a goroutine
// waiting on a channel runs on the same thread.
type journalWriter struct {
	jobs chan func()
	done chan struct{}
}

func newJournalWriter() *journalWriter {
	w := &journalWriter{jobs: make(chan func(), 64), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for f := range w.jobs {
			f()
		}
	}()
	return w
}

// do runs f on the writer and waits for it.
func (w *journalWriter) do(f func()) {
	ran := make(chan struct{})
	w.jobs <- func() { f(); close(ran) }
	<-ran
}

// later queues f.
func (w *journalWriter) later(f func()) { w.jobs <- f }

// close runs what is queued and stops the writer.
func (w *journalWriter) close() {
	close(w.jobs)
	<-w.done
}

func (c *caller) warnf(format string, args ...any) {
	c.warnMu.Lock()
	defer c.warnMu.Unlock()
	fmt.Fprintf(c.warn, "sandboxer: warning: "+format+"\n", args...)
}

// resumeWarning is the retry warning of this position, computed once per process (earlier attempts
// do not change while this one runs).
func (c *caller) resumeWarning(ctx context.Context) string {
	if c.pos.Attempt <= 1 || c.j == nil {
		return ""
	}
	c.warning.once.Do(func() {
		w, err := c.j.ResumeWarning(ctx, c.pos)
		if err != nil {
			c.warnf("journal: %v", err)
		}
		c.warning.text = w
	})
	return c.warning.text
}

// begin starts the call's row and returns its seq (continuing across processes), or counts in
// process when there is no journal (begun false: the row, if any, is recorded whole at the end).
func (c *caller) begin(ctx context.Context, e journal.Entry) (seq int, begun bool) {
	if c.j != nil {
		var err error
		c.jw.do(func() { seq, err = c.j.Begin(ctx, e) })
		if err == nil {
			c.seq.Store(int64(seq))
			return seq, true
		}
		c.warnf("journal: %v (the call runs; its seq is counted in this process only)", err)
	}
	return int(c.seq.Add(1)), false
}

// call runs one tool call and returns its reply. input must be a JSON object (or empty). with,
// if given, adjusts the call's tool context (live output writers).
func (c *caller) call(ctx context.Context, t *tools.Tool, input json.RawMessage, with ...func(*tools.Context)) Reply {
	// The journal's part in a call is not cut short when the call is cancelled: the seq and the
	// row are the record of it. SQLite's busy timeout bounds how long either waits for a lock.
	// (A context without a Done channel also spares the SQLite driver a goroutine per statement.)
	jctx := context.WithoutCancel(ctx)
	meta := t.Metadata()
	tc := c.base
	for _, f := range with {
		f(&tc)
	}
	started := time.Now()
	e := journal.Entry{
		RunID: c.pos.RunID, NodeID: c.pos.NodeID, Iteration: c.pos.Iteration, Attempt: c.pos.Attempt,
		ToolName: meta.Name, StartedAtMs: started.UnixMilli(), IdempotencyKey: tc.IdempotencyKey,
		SideEffect: meta.SideEffect, Idempotent: meta.Idempotent,
	}
	if c.j != nil {
		if len(bytes.TrimSpace(input)) == 0 {
			e.InputJSON = "{}"
		} else {
			e.InputJSON = string(meta.Redact(input))
		}
	}
	var begun bool
	tc.Seq, begun = c.begin(jctx, e)
	warning := c.resumeWarning(jctx)

	end := telemetry.StartCall(ctx, telemetry.Call{RunID: c.pos.RunID, NodeID: c.pos.NodeID, Iteration: c.pos.Iteration,
		Attempt: c.pos.Attempt, Seq: tc.Seq, Tool: meta.Name, Input: input})
	res, stack, err := callTool(ctx, t, input, &tc)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = cancelled(ctx, err)
	}
	end(res, err)
	finished := time.Now()

	var reply Reply
	var value json.RawMessage // the result's JSON, for the reply and the journal row
	if err != nil {
		reply = errorReply(err)
	} else {
		if _, texter := res.Value.(tools.Texter); texter || c.j != nil {
			if v, merr := json.Marshal(res.Value); merr == nil {
				value = v
			}
		}
		reply = resultReply(res, value)
	}
	reply.Warning = warning

	if c.after != nil && meta.SideEffect {
		if astack, aerr := safely(meta.Name, func() error { return c.after(ctx, t) }); astack != nil {
			c.warnf("%v\n%s", aerr, astack)
		} else if aerr != nil {
			// A flush that failed or left conflicts: said on stderr and in the reply, whose
			// result stands (the sandbox did what it said).
			c.warnf("%v", aerr)
			reply.Warning = strings.TrimPrefix(reply.Warning+"\n"+aerr.Error(), "\n")
		}
	}
	if c.j != nil {
		e.Seq, e.IdempotencyKey, e.FinishedAtMs = tc.Seq, tc.Key(), finished.UnixMilli()
		outcome(&e, res, value, reply, stack)
		if c.finishLater {
			c.jw.later(func() { c.finish(jctx, e, begun) })
		} else {
			c.jw.do(func() { c.finish(jctx, e, begun) })
		}
	}
	return reply
}

// callTool runs t. A panic in the tool or its adapter (on this goroutine) is recovered as an
// INTERNAL error with the panic's message; stack is then the panic's stack, for the journal row.
func callTool(ctx context.Context, t *tools.Tool, input json.RawMessage, tc *tools.Context) (res *tools.Result, stack []byte, err error) {
	stack, err = safely(t.Name(), func() error {
		var err error
		res, err = t.Call(ctx, input, tc)
		return err
	})
	if stack != nil {
		res = nil
	}
	return res, stack, err
}

// safely runs f and recovers a panic in it as an INTERNAL error whose message is the panic's
// ("panic: ..."); stack is the panic's stack then, nil otherwise.
func safely(op string, f func() error) (stack []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			stack = debug.Stack()
			err = errs.New(errs.Internal, op, "", "panic: %v", p)
		}
	}()
	return nil, f()
}

// cancelled is the error of a call whose context was cancelled while it ran (the client
// cancelled it or went away): PROCESS_FAILED, with details cancelled: true and the reason, plus
// the details the tool gave (a command's partial output). The command's process tree was killed
// by the adapter.
func cancelled(ctx context.Context, err error) error {
	e := errs.As(err)
	reason := "cancelled"
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, io.EOF):
		reason = "the client closed the connection"
	case cause != nil && !errors.Is(cause, context.Canceled):
		reason = cause.Error()
	}
	details := map[string]any{}
	for k, v := range e.Details {
		details[k] = v
	}
	details["cancelled"] = true
	details["reason"] = reason
	return &errs.Error{Code: errs.ProcessFailed, Op: e.Op, Msg: "cancelled: " + reason, Details: details}
}

// outcome fills in e's status and output or error from the call's reply; the stack of a
// recovered panic goes into the row's error details (never into the reply).
func outcome(e *journal.Entry, res *tools.Result, value json.RawMessage, reply Reply, stack []byte) {
	if reply.OK {
		e.Status = journal.StatusSuccess
		out := value
		if out == nil {
			out, _ = json.Marshal(res.Output)
		}
		e.OutputJSON = string(out)
		return
	}
	e.Status = journal.StatusError
	werr := reply.Error
	if stack != nil {
		withStack := *werr
		withStack.Details = map[string]any{"stack": string(stack)}
		for k, v := range werr.Details {
			withStack.Details[k] = v
		}
		werr = &withStack
	}
	out, _ := json.Marshal(werr)
	e.ErrorJSON = string(out)
}

// finish completes the call's row, or records it whole when it could not be begun.
func (c *caller) finish(ctx context.Context, e journal.Entry, begun bool) {
	var err error
	if begun {
		err = c.j.Finish(ctx, e)
	} else {
		err = c.j.Record(ctx, e)
	}
	if err != nil {
		c.warnf("journal: %v (the call's result is unaffected)", err)
	}
}
