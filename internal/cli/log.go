package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/journal"
)

func newLogCmd(std Streams) *cobra.Command {
	var asJSON bool
	var limit int
	c := &cobra.Command{
		Use:   "log [--run-id R] [--node-id N] [--json]",
		Short: "List the tool-call journal",
		Long: `List the journal's rows in the order they were recorded, optionally only those of one run
and/or node. --json prints one JSON object per line with the journal's field names (runId, nodeId,
iteration, attempt, seq, toolName, inputJson, outputJson, startedAtMs, finishedAtMs, status,
errorJson, idempotencyKey, sideEffect, idempotent).`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usage(fmt.Errorf("--limit %d: must not be negative", limit))
			}
			if s.Journal == "" {
				return usage(errors.New("log: the journal is off (--journal off)"))
			}
			if _, err := os.Stat(s.Journal); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("no journal at %s", s.Journal)
			}
			j, err := journal.Open(c.Context(), s.Journal, journal.Options{})
			if err != nil {
				return err
			}
			defer j.Close()
			rows, err := j.List(c.Context(), journal.Filter{RunID: s.RunID, NodeID: s.NodeID, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				for _, r := range rows {
					if err := printJSON(std, r); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STARTED\tRUN\tNODE\tITER\tATTEMPT\tSEQ\tTOOL\tSTATUS\tDURATION\tKEY")
			for _, r := range rows {
				started := time.UnixMilli(r.StartedAtMs).UTC().Format("2006-01-02T15:04:05.000Z")
				dur := time.Duration(r.FinishedAtMs-r.StartedAtMs) * time.Millisecond
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", started, r.RunID, r.NodeID,
					r.Iteration, r.Attempt, r.Seq, r.ToolName, r.Status, dur, r.IdempotencyKey)
			}
			return tw.Flush()
		}),
	}
	c.Flags().String("config", "", configFlagUsage)
	c.Flags().String(keyJournal, "", "journal path (default STATE_DIR/journal.db)")
	c.Flags().String(keyStateDir, "", "state directory (default $XDG_STATE_HOME/sandboxer or ~/.local/state/sandboxer)")
	c.Flags().String(keyRunID, "", "only rows of this run")
	c.Flags().String(keyNodeID, "", "only rows of this node")
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	c.Flags().IntVar(&limit, "limit", 0, "only the last N rows (0: all)")
	return c
}
