package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/tools"
)

// Version is reported to MCP clients.
var Version = "0.1.0"

func newMCPCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve the five tools over MCP on stdio",
		Long: `Serve read, write, edit, grep and bash as MCP tools on stdin/stdout, with the same input
schemas and behaviour as 'sandboxer tool'. A successful call returns its result as text; a
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
			sess, cl, done, err := openCaller(ctx, s, std.Err)
			if err != nil {
				return err
			}
			defer done()
			// A call's reply does not wait for its journal row to be completed: the row is
			// running until then, and every row is completed before the server exits.
			cl.finishLater = true
			if s.Store != "" {
				stop, err := attachStore(ctx, s, sess, cl, std.Err)
				if err != nil {
					return err
				}
				defer stop()
			}
			// A client that goes away closes the server's stdout: a write to it must fail (and
			// end the session) rather than kill the process before its journal rows are
			// complete. Notify, unlike Ignore, leaves SIGPIPE's default to the commands run.
			sigpipe := make(chan os.Signal, 1)
			signal.Notify(sigpipe, syscall.SIGPIPE)
			defer signal.Stop(sigpipe)
			srv := newMCPServer(cl)
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
	c.Flags().Int(keyMCPMaxMessage, DefaultMCPMaxMessageBytes,
		fmt.Sprintf("longest message read, in bytes (%d..%d); a longer one gets an error reply and is skipped", MCPMaxMessageBytesMin, MCPMaxMessageBytesMax))
	return c
}

// newMCPServer exposes the built-in tools of cl's sandbox.
func newMCPServer(cl *caller) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandboxer", Version: Version}, &mcp.ServerOptions{
		Instructions: "Tools run in a sandboxed workspace: paths are relative to its root. bash runs argv " +
			"without a shell (use cmd sh with args [\"-c\", script] for pipes).",
	})
	var warned atomic.Bool
	for _, t := range tools.Builtins() {
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
			reply := cl.call(ctx, t, req.Params.Arguments)
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
