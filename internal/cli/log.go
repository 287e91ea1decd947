package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/journal"
)

func newLogCmd(std Streams) *cobra.Command {
	var asJSON, verify bool
	var limit int
	c := &cobra.Command{
		Use:   "log [--run-id R] [--node-id N] [--json] | log --verify [--run-id R] [--json]",
		Short: "List the tool-call journal",
		Long: `List the journal's rows in the order they were recorded, optionally only those of one run
and/or node. --json prints one JSON object per line with the journal's field names (runId, nodeId,
iteration, attempt, seq, toolName, inputJson, outputJson, startedAtMs, finishedAtMs, status,
errorJson, idempotencyKey, sideEffect, idempotent).

--verify checks the journal's hash chains (of one run with --run-id) instead: every row's hash, its
link to the row before, the chain indexes and each run's head, and with --journal-key-file every
signature. It prints ok with the number of rows checked and each run's head, or the first row that
fails and which check (content_changed, row_deleted, row_inserted, signature_wrong, key_missing),
and then exits 1 with VERIFY_FAILED. See docs/journal.md.`,
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
			j, err := journal.Open(c.Context(), s.Journal, s.journalOptions())
			if err != nil {
				return err
			}
			defer j.Close()
			if verify {
				if s.NodeID != "" || limit != 0 {
					return usage(errors.New("--verify checks whole runs: --node-id and --limit do not apply"))
				}
				return verifyJournal(c.Context(), std, j, s.RunID, asJSON)
			}
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
	addJournalKeyFlag(c.Flags())
	c.Flags().String(keyStateDir, "", "state directory (default $XDG_STATE_HOME/sandboxer or ~/.local/state/sandboxer)")
	c.Flags().String(keyRunID, "", "only rows of this run")
	c.Flags().String(keyNodeID, "", "only rows of this node")
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line (--verify: one object, the report)")
	c.Flags().BoolVar(&verify, "verify", false, "check the journal's hash chains (and signatures, with --journal-key-file)")
	c.Flags().IntVar(&limit, "limit", 0, "only the last N rows (0: all)")
	return c
}

// verifyJournal checks j's chains (of runID only, when not empty) and prints the report: a
// line and the runs' heads, or with asJSON the journal.Verification. A failed check is
// VERIFY_FAILED naming the first row that failed.
func verifyJournal(ctx context.Context, std Streams, j *journal.Journal, runID string, asJSON bool) error {
	v, err := j.Verify(ctx, runID)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(std, v); err != nil {
			return err
		}
	} else if v.OK {
		fmt.Fprintf(std.Out, "ok: %d rows in %d runs", v.Rows, v.Runs)
		if v.KeyID != "" {
			fmt.Fprintf(std.Out, ", %d signatures (key id %s)", v.Signed, v.KeyID)
		}
		fmt.Fprintf(std.Out, "; %d unchained (written before the chain), %d running\n", v.Unchained, v.Running)
		tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tROWS\tHEAD")
		for _, h := range v.Heads {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", h.RunID, h.Rows, h.Hash)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if v.OK {
		return nil
	}
	m := v.Mismatch
	e := errs.New(errs.VerifyFailed, "log --verify", j.Path(), "%s", m)
	e.Details = map[string]any{"runId": m.RunID, "index": m.Index, "id": m.ID, "check": string(m.Check)}
	return e
}
