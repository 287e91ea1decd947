package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/progress"
	"github.com/sandboxer/sandboxer/lifecycle"
	"github.com/sandboxer/sandboxer/snapshot"
)

// File system snapshots of long-lived sandboxes (issue 38, package snapshot): taken on one
// adapter, restored on any, every restore verified. The catalog is STATE_DIR/snapshots.

func newSnapshotCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "snapshot",
		Short: "File system snapshots of long-lived sandboxes (take, restore, ls, rm, keep)",
		Long: `A snapshot is a sandbox's workspace captured by content (a manifest and SHA-256-named blobs in
STATE_DIR/snapshots): taken on any adapter, restored on any other, every restore checked against
the manifest before it succeeds (VERIFY_FAILED names the paths otherwise). A second snapshot
stores only what changed. sandbox create --from-snapshot NAME --count N branches N new
sandboxes from one. See docs/snapshots.md.`,
		Args: func(c *cobra.Command, args []string) error {
			return usage(errors.New("snapshot: want a subcommand: take, restore, ls, rm or keep"))
		},
		RunE: func(c *cobra.Command, args []string) error { return nil },
	}
	c.AddCommand(newSnapshotTakeCmd(std), newSnapshotRestoreCmd(std), newSnapshotLsCmd(std),
		newSnapshotRmCmd(std), newSnapshotKeepCmd(std))
	return c
}

// openCatalog opens the snapshot catalog of the settings' state directory.
func openCatalog(s Settings) (*snapshot.Catalog, error) {
	return snapshot.Open(filepath.Join(s.StateDir, "snapshots"), snapshot.Options{})
}

// withCatalog runs f with c's settings and their catalog, closed after.
func withCatalog(c *cobra.Command, f func(s Settings, cat *snapshot.Catalog) error) error {
	s, err := settingsOf(c)
	if err != nil {
		return err
	}
	cat, err := openCatalog(s)
	if err != nil {
		return err
	}
	defer cat.Close()
	return f(s, cat)
}

// withLasting runs f on the long-lived sandbox id, attached for the call.
func withLasting(ctx context.Context, s Settings, id string, f func(sess *session) error) error {
	if err := lifecycle.CheckID(id); err != nil {
		return usage(err)
	}
	s.Sandbox = id
	sess, err := openSession(ctx, s)
	if err != nil {
		return err
	}
	defer sess.Close()
	return f(sess)
}

func newSnapshotTakeCmd(std Streams) *cobra.Command {
	var keep int
	c := &cobra.Command{
		Use:   "take ID NAME",
		Short: "Take a snapshot NAME of the long-lived sandbox ID's workspace and print its summary",
		Args:  exactArgs(2),
		RunE: runE(func(c *cobra.Command, args []string) error {
			if err := snapshot.CheckName(args[1]); err != nil {
				return usage(err)
			}
			if keep < 0 {
				return usage(fmt.Errorf("--keep %d: want 0 (all) or more", keep))
			}
			return withCatalog(c, func(s Settings, cat *snapshot.Catalog) error {
				return withLasting(c.Context(), s, args[0], func(sess *session) error {
					stop := progress.Spinner(std.Err, "taking snapshot "+args[1])
					m, err := cat.Take(c.Context(), sess.Sandbox, args[1])
					stop()
					if err != nil {
						return err
					}
					out := map[string]any{"name": m.Name, "source": m.Source, "files": m.Files, "bytes": m.Bytes,
						"read": m.Read, "stored": m.Stored}
					if len(m.Skipped) > 0 {
						out["skipped"] = m.Skipped
					}
					if keep > 0 {
						gone, err := cat.Keep(c.Context(), keep, snapshot.Filter{Source: m.Source})
						if err != nil {
							return err
						}
						out["deleted"] = gone
					}
					return printJSON(std, out)
				})
			})
		}),
	}
	addStateFlags(c)
	c.Flags().IntVar(&keep, "keep", 0, "then keep only the newest K snapshots of this sandbox (0: all)")
	return c
}

func newSnapshotRestoreCmd(std Streams) *cobra.Command {
	var replace bool
	c := &cobra.Command{
		Use:   "restore NAME ID",
		Short: "Restore snapshot NAME into the long-lived sandbox ID's workspace, verified",
		Args:  exactArgs(2),
		RunE: runE(func(c *cobra.Command, args []string) error {
			return withCatalog(c, func(s Settings, cat *snapshot.Catalog) error {
				return withLasting(c.Context(), s, args[1], func(sess *session) error {
					stop := progress.Spinner(std.Err, "restoring snapshot "+args[0])
					err := cat.Restore(c.Context(), args[0], sess.Sandbox, snapshot.RestoreOptions{Replace: replace})
					stop()
					if err != nil {
						return err
					}
					return printJSON(std, map[string]string{"restored": args[0], "id": args[1]})
				})
			})
		}),
	}
	addStateFlags(c)
	c.Flags().BoolVar(&replace, "replace", false, "replace a workspace that holds files: what the snapshot does not list is removed")
	return c
}

func newSnapshotLsCmd(std Streams) *cobra.Command {
	var asJSON bool
	var f snapshot.Filter
	c := &cobra.Command{
		Use:   "ls",
		Short: "List snapshots, oldest first",
		Args:  exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			return withCatalog(c, func(s Settings, cat *snapshot.Catalog) error {
				list, err := cat.List(c.Context(), f)
				if err != nil {
					return err
				}
				if asJSON {
					if list == nil {
						list = []snapshot.Info{}
					}
					return printJSON(std, list)
				}
				tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSOURCE\tADAPTER\tFILES\tBYTES\tCREATED")
				for _, i := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", i.Name, i.Source, i.Adapter, i.Files, i.Bytes, i.Created.Format(time.RFC3339))
				}
				return tw.Flush()
			})
		}),
	}
	addStateFlags(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	c.Flags().StringVar(&f.Prefix, "prefix", "", "only names starting with this")
	c.Flags().StringVar(&f.Source, "source", "", "only snapshots of this source")
	return c
}

func newSnapshotRmCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Delete snapshots and free the blobs no other snapshot uses",
		Args:  cobra.MinimumNArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			return withCatalog(c, func(s Settings, cat *snapshot.Catalog) error {
				if err := cat.Delete(c.Context(), args...); err != nil {
					return err
				}
				return printJSON(std, map[string][]string{"deleted": args})
			})
		}),
	}
	addStateFlags(c)
	return c
}

func newSnapshotKeepCmd(std Streams) *cobra.Command {
	var f snapshot.Filter
	c := &cobra.Command{
		Use:   "keep K",
		Short: "Retention: of the snapshots selected (--prefix, --source), keep the newest K and delete the others",
		Args:  exactArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			var k int
			if _, err := fmt.Sscan(args[0], &k); err != nil || k < 0 {
				return usage(fmt.Errorf("keep %q: want a count, 0 or more", args[0]))
			}
			return withCatalog(c, func(_ Settings, cat *snapshot.Catalog) error {
				gone, err := cat.Keep(c.Context(), k, f)
				if err != nil {
					return err
				}
				if gone == nil {
					gone = []string{}
				}
				return printJSON(std, map[string][]string{"deleted": gone})
			})
		}),
	}
	addStateFlags(c)
	c.Flags().StringVar(&f.Prefix, "prefix", "", "only names starting with this")
	c.Flags().StringVar(&f.Source, "source", "", "only snapshots of this source")
	return c
}

// createFromSnapshot makes count long-lived sandboxes of o and restores snapshot name into each
// (snapshot.Catalog.RestoreMany, every one verified); on failure none is left.
func createFromSnapshot(ctx context.Context, s Settings, name string, count int) ([]string, error) {
	cat, err := openCatalog(s)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	if _, err := cat.Get(ctx, name); err != nil {
		return nil, err
	}
	mgr, o := lifecycle.NewManager(s.StateDir), optionsOf(s)
	var ids []string
	var sbs []adapter.Sandbox
	var sessions []*lifecycle.Session
	fail := func(err error) ([]string, error) {
		for _, ls := range sessions {
			ls.Close()
		}
		for _, id := range ids {
			discardSandbox(context.WithoutCancel(ctx), mgr, id, o)
		}
		return nil, err
	}
	for range count {
		rec, err := mgr.Create(ctx, o)
		if err != nil {
			return fail(inCLIWords(err))
		}
		ids = append(ids, rec.ID)
		ls, err := mgr.Attach(ctx, rec.ID, o)
		if err != nil {
			return fail(err)
		}
		sessions = append(sessions, ls)
		sbs = append(sbs, ls.Sandbox)
	}
	if err := cat.RestoreMany(ctx, name, sbs, snapshot.RestoreOptions{}); err != nil {
		return fail(err)
	}
	for _, ls := range sessions {
		ls.Close()
	}
	return ids, nil
}

// errSnapshotCount: --count without --from-snapshot or --from-checkpoint.
var errSnapshotCount = errs.New(errs.InvalidInput, "sandbox", "", "--count needs --from-snapshot or --from-checkpoint")
