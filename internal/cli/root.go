// Package cli owns the sandboxer command line: the cobra command tree, configuration by viper
// (defaults < the user's sandboxer.yaml or --config < SANDBOXER_* environment < flags), the explicit adapter
// table, and the glue from tool calls to the journal used by both `sandboxer tool` and
// `sandboxer mcp`.
//
// Exit status: 0 success; 1 a tool error or a runtime failure; 2 a usage error (unknown command,
// tool or flag, bad JSON, bad setting). `sandboxer exec` exits with the command's own status.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/internal/telemetry"
)

// Streams are the standard streams of one invocation.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// exitError carries an exit status; err (if any) is printed on stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usage marks err as a usage error (exit status 2).
func usage(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: 2, err: err}
}

// exit returns an error that ends the program with code and prints nothing more.
func exit(code int) error { return &exitError{code: code} }

// Main runs the CLI with args (without the program name) and returns the exit status.
func Main(args []string, std Streams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := run(ctx, args, std)
	sctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	if err := telemetry.Shutdown(sctx); err != nil {
		fmt.Fprintf(std.Err, "sandboxer: warning: traces: %v\n", err)
	}
	return code
}

// telemetryFlushTimeout bounds how long an invocation waits, at its end, for its spans to reach
// the OTLP collector.
const telemetryFlushTimeout = 5 * time.Second

// run runs the CLI in ctx, which ends the invocation when it is cancelled.
func run(ctx context.Context, args []string, std Streams) int {
	root := newRoot(std)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	// The invocation's spans are sent before it returns: a short-lived process loses none, and
	// the resident server's client sees its call exported when its call ends.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlushTimeout)
	if ferr := telemetry.Flush(fctx); ferr != nil {
		fmt.Fprintf(std.Err, "sandboxer: warning: traces: %v\n", ferr)
	}
	cancel()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(std.Err, "sandboxer: %v\n", ee.err)
		}
		return ee.code
	}
	// Errors cobra returns before a command runs: unknown command, bad flag, wrong arguments.
	fmt.Fprintf(std.Err, "sandboxer: %v\nRun 'sandboxer --help' for usage.\n", err)
	return 2
}

func newRoot(std Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "sandboxer",
		Short: "Run AI agents' tool calls (read, write, edit, grep, bash) in sandboxes",
		Long: `sandboxer runs AI agents' tool calls in a sandbox (local, docker, memory, oci or kubernetes adapter, or remote: on a sandboxerd serve),
over the CLI (sandboxer tool, sandboxer exec) or as an MCP server on stdio (sandboxer mcp),
and records every call in an SQLite journal.

Configuration: defaults < ~/.config/sandboxer/sandboxer.yaml (or --config; never one in the workspace) < SANDBOXER_* environment < flags.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(std.In)
	root.SetOut(std.Out)
	root.SetErr(std.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usage(err) })
	root.AddCommand(
		newToolCmd(std),
		newExecCmd(std),
		newSandboxCmd(std),
		newSnapshotCmd(std),
		newLogCmd(std),
		newMCPCmd(std),
		newDoctorCmd(std),
		newImageCmd(std),
		newPsCmd(std),
		newLogsCmd(std),
		newKillCmd(std),
		newPortForwardCmd(std),
		newServerCmd(std),
		newServeCmd(std),
		newUICmd(std),
	)
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}

// noArgs and friends make argument-count mistakes usage errors.
func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usage(fmt.Errorf("%s: want %d argument(s), got %d", c.CommandPath(), n, len(args)))
		}
		return nil
	}
}

func settingsOf(c *cobra.Command) (Settings, error) {
	inv := invocationOf(c.Context())
	s, err := loadIn(inv, c.Flags())
	if err == nil {
		// Tracing is process-wide: the first invocation that asks for it builds the exporter.
		// The OTEL_* variables are the process's own (they name a resident server and reach it).
		err = telemetry.EnableTracing(s.OTLPEndpoint, os.Getenv)
	}
	return s, usage(err)
}

// runE adapts a command body: errors that carry no exit status are runtime failures (exit 1).
func runE(f func(c *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		err := f(c, args)
		if err == nil {
			return nil
		}
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &exitError{code: 1, err: err}
	}
}
