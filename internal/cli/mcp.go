package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/internal/telemetry"
	"github.com/sandboxer/sandboxer/tools"
)

// Version is reported to MCP clients.
var Version = "0.1.0"

func newMCPCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve the tools over MCP on stdio",
		Long: `Serve read, write, edit, grep, bash and the process tools (process_output, process_input,
process_kill, process_list) as MCP tools on stdin/stdout, with the same input schemas and
behaviour as 'sandboxer tool'. With --sandbox ID, a snapshot tool too (action take, restore,
list or delete: file system snapshots of that sandbox, as 'sandboxer snapshot' takes them). Background processes (bash with opts.background) live as long as
the server for the local and memory adapters, as long as the sandbox for docker and oci. A successful call returns its result as text; a
failed one has isError true and text starting with the code ("TOOL_PATH_ESCAPE: ..."). Both
carry structured content equal to the JSON object 'sandboxer tool' prints. Every call is recorded
in the journal. With --store, the workspace is hydrated from the store at start and flushed back
after each write, edit and bash. Logs and warnings go to stderr.

A line that is not a message the server can take (not JSON, not JSON-RPC, longer than
--mcp-max-message-bytes) gets a JSON-RPC error reply and the session goes on. When the client
goes away, the calls in progress are cancelled (their commands killed, their journal rows
completed) and the server exits 0.`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			ctx := c.Context()
			m, stopMetrics, err := startMetrics(c, std)
			if err != nil {
				return err
			}
			defer stopMetrics()
			sess, cl, done, err := openCaller(ctx, s, std.Err, false)
			if err != nil {
				return err
			}
			defer done()
			if m != nil {
				m.Gauge(telemetry.MetricSandboxes, "Sandboxes this process holds open.", nil, func() float64 { return 1 })
			}
			// A call's reply does not wait for its journal row to be completed: the row is
			// running until then, and every row is completed before the server exits.
			cl.finishLater = true
			stop, err := attachWorkSync(ctx, s, sess, cl, std.Err)
			if err != nil {
				return err
			}
			defer stop()
			// A client that goes away closes the server's stdout: a write to it must fail (and
			// end the session) rather than kill the process before its journal rows are
			// complete. Notify, unlike Ignore, leaves SIGPIPE's default to the commands run.
			sigpipe := make(chan os.Signal, 1)
			signal.Notify(sigpipe, syscall.SIGPIPE)
			defer signal.Stop(sigpipe)
			var extra []*tools.Tool
			if sess.Record != nil {
				cat, err := openCatalog(s)
				if err != nil {
					return err
				}
				defer cat.Close()
				extra = append(extra, snapshotTool(cat, sess.Record.ID))
			}
			srv := newMCPServer(cl, extra...)
			t, closeTransport := mcpTransport(std.In, std.Out, s.MCPMaxMessageBytes)
			defer closeTransport()
			err = srv.Run(ctx, t)
			switch {
			case err == nil, errors.Is(err, context.Canceled), errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE):
				return nil // the client is gone or the server was interrupted
			default:
				return err
			}
		}),
	}
	addCommonFlags(c.Flags())
	addMetricsFlag(c.Flags())
	c.Flags().Int(keyMCPMaxMessage, DefaultMCPMaxMessageBytes,
		fmt.Sprintf("longest message read, in bytes (%d..%d); a longer one gets an error reply and is skipped", MCPMaxMessageBytesMin, MCPMaxMessageBytesMax))
	return c
}

// newMCPServer exposes the built-in tools of cl's sandbox, and extra.
func newMCPServer(cl *caller, extra ...*tools.Tool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandboxer", Version: Version}, &mcp.ServerOptions{
		Instructions: "Tools run in a sandboxed workspace: paths are relative to its root. bash runs argv " +
			"without a shell (use cmd sh with args [\"-c\", script] for pipes).",
	})
	var warned atomic.Bool
	for _, t := range slices.Concat(tools.All(), extra) {
		meta := t.Metadata()
		destructive := meta.SideEffect
		openWorld := t.Name() == "bash"
		srv.AddTool(&mcp.Tool{
			Name:        meta.Name,
			Description: meta.Description,
			InputSchema: t.InputSchema(),
			Annotations: &mcp.ToolAnnotations{
				ReadOnlyHint:    !meta.SideEffect,
				IdempotentHint:  meta.Idempotent,
				DestructiveHint: &destructive,
				OpenWorldHint:   &openWorld,
			},
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var with []func(*tools.Context)
			if token := req.Params.GetProgressToken(); token != nil && t.Name() == "bash" {
				with = append(with, func(tc *tools.Context) {
					p := &progressOut{ctx: ctx, session: req.Session, token: token, budget: tc.MaxOutputBytes}
					tc.Stdout, tc.Stderr = p.stream("stdout"), p.stream("stderr")
				})
			}
			reply := cl.call(telemetry.FromMeta(ctx, req.Params.Meta), t, req.Params.Arguments, with...)
			structured, err := json.Marshal(reply)
			if err != nil {
				return nil, err
			}
			res := &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: reply.Text()}},
				IsError:           !reply.OK,
				StructuredContent: json.RawMessage(structured),
			}
			// The agent reads the retry warning once, as its own text block; the structured
			// content carries it on every call, as the CLI's JSON does.
			if reply.Warning != "" && warned.CompareAndSwap(false, true) {
				res.Content = append(res.Content, &mcp.TextContent{Text: reply.Warning})
			}
			return res, nil
		})
	}
	return srv
}

// progressOut sends a foreground bash command's output, as it comes, as MCP progress
// notifications of the call's progress token: the message is the text (cut on UTF-8
// boundaries), progress counts the bytes sent so far, and _meta.stream says "stdout" or
// "stderr". Each stream sends at most budget bytes (the result's own cap); the result still
// carries the whole capped output.
type progressOut struct {
	ctx     context.Context
	session *mcp.ServerSession
	token   any
	budget  int

	mu   sync.Mutex
	sent int64
}

func (p *progressOut) stream(name string) io.Writer {
	return &progressStream{p: p, name: name, left: p.budget}
}

type progressStream struct {
	p       *progressOut
	name    string
	pending []byte // an incomplete UTF-8 sequence held back from the last write
	left    int
}

func (s *progressStream) Write(b []byte) (int, error) {
	n := len(b)
	if s.left <= 0 {
		return n, nil
	}
	data := append(s.pending, b...)
	cut := len(data)
	// Hold back a trailing incomplete UTF-8 sequence (at most 3 bytes) for the next write.
	for i := 1; i <= 3 && i <= len(data); i++ {
		c := data[len(data)-i]
		if c < 0x80 {
			break
		}
		if c >= 0xC0 { // a leading byte: is its sequence complete?
			if !utf8.FullRune(data[len(data)-i:]) {
				cut = len(data) - i
			}
			break
		}
	}
	s.pending = append([]byte(nil), data[cut:]...)
	data = data[:cut]
	if len(data) > s.left { // the last that fits, cut before a rune that would not
		k := s.left
		for k > 0 && !utf8.RuneStart(data[k]) {
			k--
		}
		data, s.left = data[:k], 0
	} else {
		s.left -= len(data)
	}
	if len(data) == 0 {
		return n, nil
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.sent += int64(len(data))
	// A client that went away or a slow one must not fail the command: errors are dropped.
	_ = s.p.session.NotifyProgress(s.p.ctx, &mcp.ProgressNotificationParams{
		Meta:          mcp.Meta{"stream": s.name},
		ProgressToken: s.p.token,
		Message:       string(data),
		Progress:      float64(s.p.sent),
	})
	return n, nil
}
