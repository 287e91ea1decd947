package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/progress"
	"github.com/sandboxer/sandboxer/lifecycle"
)

func newSandboxCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Manage long-lived sandboxes (create, ls, rm, fork, prune, network, pause, resume, checkpoint)",
		Long: `Long-lived sandboxes outlive one invocation: create one, then pass --sandbox ID to tool,
exec and mcp. Their records live in the state directory (--state-dir, default
$XDG_STATE_HOME/sandboxer or ~/.local/state/sandboxer); a local sandbox's workspace is
STATE_DIR/sandboxes/ID/workspace.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(fmt.Errorf("unknown sandbox command %q (want create, ls, rm, fork, prune, network, pause, resume or checkpoint)", args[0]))
			}
			return usage(errors.New("sandbox: want a subcommand: create, ls, rm, fork, prune, network, pause, resume or checkpoint"))
		},
		RunE: func(c *cobra.Command, args []string) error { return nil },
	}
	c.AddCommand(newSandboxCreateCmd(std), newSandboxLsCmd(std), newSandboxRmCmd(std),
		newSandboxForkCmd(std), newSandboxPruneCmd(std), newSandboxNetworkCmd(std),
		newSandboxPauseCmd(std, true), newSandboxPauseCmd(std, false), newSandboxCheckpointCmd(std))
	return c
}

func printJSON(std Streams, v any) error {
	enc := json.NewEncoder(std.Out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func newSandboxCreateCmd(std Streams) *cobra.Command {
	var from, fromCheckpoint string
	var count int
	c := &cobra.Command{
		Use:   "create [flags]",
		Short: `Create a long-lived sandbox of --adapter and print {"id":"..."}`,
		Args:  exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			if fromCheckpoint != "" {
				if from != "" || c.Flags().Changed(keyRoot) || count < 1 {
					return usage(fmt.Errorf("--from-checkpoint takes no --from-snapshot or --%s, and --count is 1 or more", keyRoot))
				}
				if !c.Flags().Changed(keyAdapter) {
					s.Adapter = "oci" // the adapter whose checkpoints there are
				}
				stop := progress.Spinner(std.Err, "restoring "+fromCheckpoint)
				ids, err := createFromCheckpoint(c.Context(), s, fromCheckpoint, count)
				stop()
				if err != nil {
					return err
				}
				return printJSON(std, map[string][]string{"ids": ids})
			}
			if !knownAdapter(s.Adapter) {
				return usage(unknownAdapter(s.Adapter))
			}
			seed := rootCopyAdapters[s.Adapter] && c.Flags().Changed(keyRoot)
			if seed {
				if err := vetRoot(s); err != nil {
					return err
				}
			}
			if from != "" || count != 1 {
				if from == "" {
					return usage(errSnapshotCount)
				}
				if seed || count < 1 {
					return usage(fmt.Errorf("--from-snapshot takes no --%s, and --count is 1 or more", keyRoot))
				}
				stop := progress.Spinner(std.Err, "restoring snapshot "+from)
				ids, err := createFromSnapshot(c.Context(), s, from, count)
				stop()
				if err != nil {
					return err
				}
				return printJSON(std, map[string][]string{"ids": ids})
			}
			mgr, o := lifecycle.NewManager(s.StateDir), optionsOf(s)
			stop := progress.Spinner(std.Err, "creating a "+s.Adapter+" sandbox")
			rec, err := mgr.Create(c.Context(), o)
			stop()
			if err != nil {
				err = inCLIWords(err)
				if errors.Is(err, errs.InvalidInput) {
					return usage(err)
				}
				return err
			}
			if seed {
				if err := seedRoot(c.Context(), s, mgr, rec.ID, std.Err); err != nil {
					discardSandbox(c.Context(), mgr, rec.ID, o)
					return err
				}
			}
			return printJSON(std, map[string]string{"id": rec.ID})
		}),
	}
	addCommonFlags(c.Flags())
	c.Flags().StringVar(&from, "from-snapshot", "", "restore this snapshot into the new sandbox (any adapter; verified), and print {\"ids\":[...]}")
	c.Flags().StringVar(&fromCheckpoint, "from-checkpoint", "", "restore the checkpoint in this directory (sandbox checkpoint: oci, its processes with their memory), and print {\"ids\":[...]}")
	c.Flags().IntVar(&count, "count", 1, "with --from-snapshot or --from-checkpoint: make this many sandboxes, each independent")
	return c
}

func newSandboxLsCmd(std Streams) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List long-lived sandboxes",
		Args:  exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			mgr, o := lifecycle.NewManager(s.StateDir), optionsOf(s)
			recs, err := mgr.List()
			if err != nil {
				return err
			}
			type row struct {
				lifecycle.Record
				Alive bool `json:"alive"`
				// Error says why it is not known whether the backing is there (a daemon or
				// server that does not answer, a refused token, an adapter this build lacks).
				Error string `json:"error,omitempty"`
			}
			rows := make([]row, 0, len(recs))
			for _, r := range recs {
				alive, err := mgr.Alive(c.Context(), r, o)
				rw := row{Record: r, Alive: alive}
				if err != nil {
					rw.Error = err.Error()
					fmt.Fprintf(std.Err, "sandboxer: warning: sandbox %s: %v\n", r.ID, err)
				}
				rows = append(rows, rw)
			}
			if asJSON {
				return printJSON(std, rows)
			}
			tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tADAPTER\tSTATUS\tCREATED\tWHERE")
			for _, r := range rows {
				status := "ok"
				switch {
				case r.Error != "":
					status = "unknown"
				case !r.Alive:
					status = "gone"
				}
				where := r.Workspace
				switch {
				case r.URL != "":
					where = r.Backend + " on " + r.URL
				case where == "":
					where = r.Backend
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Adapter, status, r.CreatedAt.Format(time.RFC3339), where)
			}
			return tw.Flush()
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	addStateFlags(c)
	return c
}

// addStateFlags declares the flags of commands that only need the state directory (and, for a
// remote sandbox, the token and CA of the server its record names).
func addStateFlags(c *cobra.Command) {
	c.Flags().String("config", "", configFlagUsage)
	c.Flags().String(keyStateDir, "", "state directory (default $XDG_STATE_HOME/sandboxer or ~/.local/state/sandboxer)")
	addRemoteAccessFlags(c.Flags())
}

func newSandboxRmCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "rm ID...",
		Short: "Remove long-lived sandboxes (and a local sandbox's workspace)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(errors.New("sandbox rm: want at least one sandbox id"))
			}
			for _, id := range args {
				if err := lifecycle.CheckID(id); err != nil {
					return usage(err)
				}
			}
			return nil
		},
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			mgr, o := lifecycle.NewManager(s.StateDir), optionsOf(s)
			var failed []error
			for _, id := range args {
				if err := mgr.Remove(c.Context(), id, o); err != nil {
					failed = append(failed, err)
					continue
				}
				fmt.Fprintln(std.Out, id)
			}
			return errors.Join(failed...)
		}),
	}
	addStateFlags(c)
	return c
}

// discardSandbox removes the sandbox id that a failed call made: destroyed, and its record gone
// even when its backing could not be destroyed.
func discardSandbox(ctx context.Context, mgr *lifecycle.Manager, id string, o lifecycle.Options) {
	if err := mgr.Remove(context.WithoutCancel(ctx), id, o); err != nil {
		_ = mgr.Forget(id)
	}
}

func newSandboxPruneCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "prune",
		Short: "Remove the records of sandboxes whose backing (workspace, container) is gone",
		Args:  exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			// What crashed processes left behind (ephemeral containers), where the adapter is
			// reachable, then the records whose backing is gone.
			rep, err := lifecycle.NewManager(s.StateDir).Prune(c.Context(), optionsOf(s))
			for _, w := range rep.Warnings {
				fmt.Fprintf(std.Err, "sandboxer: warning: %v\n", w)
			}
			for _, l := range rep.Leftovers {
				fmt.Fprintf(std.Out, "%s:%s\n", l.Adapter, l.ID)
			}
			for _, id := range rep.Removed {
				fmt.Fprintln(std.Out, id)
			}
			return err
		}),
	}
	addStateFlags(c)
	return c
}

func newSandboxForkCmd(std Streams) *cobra.Command {
	var count int
	c := &cobra.Command{
		Use:   "fork ID",
		Short: `Create a new long-lived sandbox from a copy of ID's workspace and print {"id":"..."} (with "skipped": the FIFOs, sockets and devices left out; --count N: {"ids":[...]})`,
		Args: func(c *cobra.Command, args []string) error {
			if err := exactArgs(1)(c, args); err != nil {
				return err
			}
			if count < 1 {
				return usage(fmt.Errorf("--count %d: want 1 or more", count))
			}
			return usage(lifecycle.CheckID(args[0]))
		},
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			s.Sandbox = args[0]
			sess, err := openSession(c.Context(), s)
			if err != nil {
				return err
			}
			defer sess.Close()
			mgr, o := lifecycle.NewManager(s.StateDir), optionsOf(s)
			var ids []string
			var rep adapter.CopyReport
			stop := progress.Spinner(std.Err, "forking "+args[0])
			defer stop()
			for range count {
				rec, r, err := mgr.Fork(c.Context(), sess.lasting, o)
				if err != nil {
					for _, id := range ids {
						discardSandbox(c.Context(), mgr, id, o)
					}
					return inCLIWords(err)
				}
				ids, rep = append(ids, rec.ID), r
			}
			stop()
			if count == 1 {
				return printJSON(std, struct {
					ID string `json:"id"`
					adapter.CopyReport
				}{ids[0], rep})
			}
			return printJSON(std, struct {
				IDs []string `json:"ids"`
				adapter.CopyReport
			}{ids, rep})
		}),
	}
	addStateFlags(c)
	c.Flags().String(keySyncMaxFile, "100MiB", "the largest file the fork copies (bytes, or with KiB, MiB, GiB); a larger one fails the fork")
	c.Flags().IntVar(&count, "count", 1, "make this many forks, each independent (all or none)")
	return c
}

// newSandboxPauseCmd is `sandbox pause ID...` (paused true) or `sandbox resume ID...`.
func newSandboxPauseCmd(std Streams, paused bool) *cobra.Command {
	verb, short := "resume", "Let paused long-lived sandboxes' processes go on where they were"
	if paused {
		verb, short = "pause", "Freeze long-lived sandboxes' processes where they are (docker, oci): no CPU, memory kept, until resume"
	}
	c := &cobra.Command{
		Use:   verb + " ID...",
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			mgr, o := lifecycle.NewManager(s.StateDir), optionsOf(s)
			for _, id := range args {
				if err := lifecycle.CheckID(id); err != nil {
					return usage(err)
				}
				if paused {
					err = mgr.Pause(c.Context(), id, o)
				} else {
					err = mgr.Resume(c.Context(), id, o)
				}
				if errors.Is(err, errs.NotFound) {
					return errs.New(errs.SandboxUnavailable, "sandbox", "", "no sandbox %q in %s (see sandboxer sandbox ls)", id, s.StateDir)
				}
				if errors.Is(err, errs.InvalidInput) {
					return usage(err)
				}
				if err != nil {
					return err
				}
				fmt.Fprintln(std.Out, id)
			}
			return nil
		}),
	}
	addStateFlags(c)
	return c
}
