package lifecycle

import (
	"context"
	"errors"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
)

const ociEnforces = "each sandbox is an OCI container run by --runtime (runc by default, runsc for gVisor's " +
	"user-space kernel, crun) without a daemon: an empty network namespace unless --allow-network " +
	"(then the host's network namespace, weaker than docker's bridge), a user namespace mapping the " +
	"container's root to an unprivileged host uid (runc, crun), a non-root user, all capabilities " +
	"dropped, no-new-privileges, the default seccomp profile (runc, crun), a read-only root file " +
	"system with a private /tmp, masked /proc paths, memory/CPU/pids cgroup limits, a workspace of " +
	"--disk (10 GiB by default; a loop-mounted file system, root); each result " +
	"lists the layers checked in force."

// ociLasting is the configuration of a long-lived oci sandbox.
func ociLasting(o Options) oci.Config {
	c := o.OCIConfig()
	c.Persist = true
	return c
}

// ociDriver: one OCI container per sandbox, run by runc, runsc or crun without a daemon,
// everything under the state directory. An ephemeral sandbox's container and workspace are
// removed by Stop; a long-lived one is created with Persist and found again by its oci id, which
// the record keeps as Backend (its workspace directory as Workspace). The runtime a sandbox was
// created with is the adapter's own record: Options.OCI.Runtime only picks it at create.
var ociDriver = driver{
	open: func(ctx context.Context, o Options) (adapter.Sandbox, error) {
		return oci.New(ctx, o.OCIConfig())
	},
	create: func(ctx context.Context, o Options, rs records, rec *Record) error {
		cfg := ociLasting(o)
		sb, err := oci.New(ctx, cfg)
		if err != nil {
			return err
		}
		rec.Backend, rec.Workspace, rec.Image = sb.ID(), sb.HostWorkspace(), cfg.Image // "": its own root file system
		return sb.Detach()
	},
	attach: func(ctx context.Context, o Options, rec Record) (adapter.Sandbox, error) {
		sb, err := oci.Attach(ctx, ociLasting(o), rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil, errs.New(errs.SandboxUnavailable, "attach", "", "sandbox %s: its container is gone", rec.ID)
		}
		return sb, err
	},
	detach: func(ctx context.Context, sb adapter.Sandbox) error {
		if o, ok := sb.(*oci.Sandbox); ok {
			return o.Detach()
		}
		return nil
	},
	destroy: func(ctx context.Context, o Options, rec Record) error {
		err := oci.Remove(ctx, ociLasting(o), rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		return err
	},
	alive: func(ctx context.Context, o Options, rec Record) (bool, error) {
		infos, err := oci.List(ctx, ociLasting(o))
		return runningIn(infos, err, rec.Backend, func(i oci.Info) (string, string) { return i.ID, i.Status })
	},
	fork: func(ctx context.Context, o Options, rs records, src adapter.Sandbox, rec *Record) (adapter.CopyReport, error) {
		c, err := forkAs[*oci.Sandbox](ctx, "oci", src)
		if err != nil {
			return adapter.CopyReport{}, err
		}
		rec.Backend, rec.Workspace = c.ID(), c.HostWorkspace()
		return c.ForkSkipped(), c.Detach()
	},
	prune: func(ctx context.Context, o Options) ([]string, error) {
		return oci.Prune(ctx, o.OCIConfig(), oci.PruneOptions{})
	},
	setPaused: func(ctx context.Context, o Options, rec Record, paused bool) error {
		return oci.SetPaused(ctx, ociLasting(o), rec.Backend, paused)
	},
	restore: func(ctx context.Context, o Options, dir string, rec *Record) error {
		sb, err := oci.Restore(ctx, ociLasting(o), dir)
		if err != nil {
			return err
		}
		rec.Backend, rec.Workspace, rec.Image = sb.ID(), sb.HostWorkspace(), sb.Image()
		return sb.Detach()
	},
}
