package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/progress"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// newSandboxCheckpointCmd is `sandbox checkpoint ID DIR`: the sandbox with its processes' memory
// (oci under gVisor), restored by `sandbox create --from-checkpoint DIR`.
func newSandboxCheckpointCmd(std Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "checkpoint ID DIR",
		Short: "Save a long-lived sandbox with its processes' memory in the new directory DIR (oci with --runtime runsc); it goes on running",
		Long: `checkpoint saves the sandbox's processes with their memory (gVisor's checkpoint), its
workspace and HOME in DIR, a directory it makes; the sandbox goes on where it was. 
sandbox create --from-checkpoint DIR [--count N] makes new sandboxes whose processes continue
with that memory (open TCP connections are reset). sandboxer doctor says where it works.`,
		Args: func(c *cobra.Command, args []string) error {
			if err := exactArgs(2)(c, args); err != nil {
				return err
			}
			return usage(lifecycle.CheckID(args[0]))
		},
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			dir, err := invocationOf(c.Context()).abs(args[1]) // the caller's directory, not a resident server's
			if err != nil {
				return usage(err)
			}
			s.Sandbox = args[0]
			sess, err := openSession(c.Context(), s)
			if err != nil {
				return err
			}
			defer sess.Close()
			stop := progress.Spinner(std.Err, "checkpointing "+args[0])
			err = lifecycle.NewManager(s.StateDir).Checkpoint(c.Context(), sess.lasting, dir)
			stop()
			if errors.Is(err, errs.InvalidInput) {
				return usage(err)
			}
			if err != nil {
				return err
			}
			return printJSON(std, map[string]string{"id": args[0], "checkpoint": dir})
		}),
	}
	addStateFlags(c)
	return c
}

// createFromCheckpoint makes count long-lived sandboxes of o from the checkpoint in dir, each
// independent; on failure none is left.
func createFromCheckpoint(ctx context.Context, s Settings, dir string, count int) ([]string, error) {
	abs, err := invocationOf(ctx).abs(dir)
	if err != nil {
		return nil, usage(err)
	}
	mgr, o := lifecycle.NewManager(s.StateDir), optionsOf(s)
	var ids []string
	for range count {
		rec, err := mgr.Restore(ctx, abs, o)
		if err != nil {
			for _, id := range ids {
				discardSandbox(context.WithoutCancel(ctx), mgr, id, o)
			}
			if errors.Is(err, errs.InvalidInput) {
				return nil, usage(err)
			}
			return nil, err
		}
		ids = append(ids, rec.ID)
	}
	return ids, nil
}
