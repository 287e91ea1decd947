package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Exit statuses of `sandboxer exec` when the command did not produce one (as timeout(1) and env(1)).
const (
	ExitExecFailed  = 125 // sandboxer could not or would not run it (sandbox unavailable, bad cwd, network policy)
	ExitNotFound    = 127 // the executable could not be started (PROCESS_FAILED)
	ExitExecTimeout = 124 // the command outlived --timeout; its process tree was killed
)

func newExecCmd(std Streams) *cobra.Command {
	var cwd string
	var env []string
	var stdin bool
	c := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARG...]",
		Short: "Run a command in a sandbox, streaming its output, and exit with its status",
		Long: `Run argv (no shell: use sh -c for pipes) in a sandbox. Standard output and error are
streamed as they are produced. The exit status is the command's own; when the command could not
run it is 125 (sandboxer error), 124 (timeout: the whole process tree was killed) or 127 (the
executable could not be started). Standard input is passed only with --stdin.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(errors.New("exec: no command given (sandboxer exec [flags] -- CMD ARG...)"))
			}
			return nil
		},
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			for _, kv := range env {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					return usage(fmt.Errorf("--env %q: want KEY=VALUE", kv))
				}
			}
			sess, err := openSession(c.Context(), s)
			if err != nil {
				return &exitError{code: ExitExecFailed, err: err}
			}
			defer sess.Close()
			cmd := adapter.Command{
				Args: args, Dir: cwd, Env: env, Timeout: s.Timeout, MaxOutputBytes: s.MaxOutputBytes,
				AllowNetwork: s.AllowNetwork, Stdout: std.Out, Stderr: std.Err,
			}
			if stdin {
				cmd.Stdin = std.In
			}
			if err := checkPolicy(sess.Sandbox, args, s.AllowNetwork, sess.allowHosts(s)); err != nil {
				return &exitError{code: ExitExecFailed, err: err}
			}
			wsync, err := openWorkSync(c.Context(), s, sess, std.Err)
			if err != nil {
				return &exitError{code: ExitExecFailed, err: err}
			}
			if wsync != nil {
				defer wsync.close()
			}
			var res adapter.Result
			stack, err := safely("exec", func() error {
				var err error
				res, err = sess.Sandbox.ExecuteCommand(c.Context(), cmd)
				return err
			})
			if stack != nil {
				// exec has no journal row to keep the stack in: it follows the error on stderr.
				fmt.Fprintf(std.Err, "sandboxer: %v\nsandboxer: the stack of the panic (a bug: please report it):\n%s", err, stack)
				return exit(ExitExecFailed)
			}
			if wsync != nil {
				if ferr := wsync.flush(c.Context(), "after exec"); ferr != nil {
					fmt.Fprintf(std.Err, "sandboxer: warning: %v\n", ferr)
				}
			}
			switch {
			case err == nil:
				return exit(res.ExitCode)
			case errors.Is(err, errs.ProcessTimeout):
				return &exitError{code: ExitExecTimeout, err: err}
			case errors.Is(err, errs.ProcessFailed):
				return &exitError{code: ExitNotFound, err: err}
			default:
				return &exitError{code: ExitExecFailed, err: err}
			}
		}),
	}
	c.Flags().SetInterspersed(false) // everything after CMD belongs to CMD
	addCommonFlags(c.Flags())
	c.Flags().StringVar(&cwd, "cwd", "", "working directory, relative to the workspace")
	c.Flags().StringArrayVarP(&env, "env", "e", nil, "add KEY=VALUE to the command's environment (repeatable)")
	c.Flags().BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the command")
	return c
}
