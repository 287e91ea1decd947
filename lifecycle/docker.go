package lifecycle

import (
	"context"
	"errors"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/errs"
)

const dockerEnforces = "each sandbox is a container: network mode none unless --allow-network, all " +
	"capabilities dropped, no-new-privileges, read-only root file system, non-root user, " +
	"memory/CPU/pids limits, the daemon's default seccomp profile, a workspace of --disk (10 GiB " +
	"by default; a loop-mounted file system, root with a local daemon); the process tree is killed " +
	"inside the container on timeout."

// dockerLasting is the configuration of a long-lived docker sandbox.
func dockerLasting(o Options) docker.Config {
	c := o.DockerConfig()
	c.Persist = true
	return c
}

// dockerDriver: one container per sandbox. An ephemeral sandbox's container is removed by Stop;
// a long-lived one is created with Persist (the adapter's prune leaves it) and found again by its
// sandbox id (the container label), which the record keeps as Backend.
var dockerDriver = driver{
	open: func(ctx context.Context, o Options) (adapter.Sandbox, error) {
		return docker.New(ctx, o.DockerConfig())
	},
	create: func(ctx context.Context, o Options, rs records, rec *Record) error {
		sb, err := docker.New(ctx, dockerLasting(o))
		if err != nil {
			return err
		}
		rec.Backend, rec.Image = sb.ID(), o.Image
		if rec.Image == "" {
			rec.Image = image.DefaultTag
		}
		return sb.Detach() // the container stays (Persist); this process's handle ends
	},
	attach: func(ctx context.Context, o Options, rec Record) (adapter.Sandbox, error) {
		cfg := dockerLasting(o)
		cfg.Image = rec.Image
		sb, err := docker.Attach(ctx, cfg, rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil, errs.New(errs.SandboxUnavailable, "attach", "", "sandbox %s: its container is gone", rec.ID)
		}
		return sb, err
	},
	detach: func(ctx context.Context, sb adapter.Sandbox) error {
		if d, ok := sb.(*docker.Sandbox); ok {
			return d.Detach()
		}
		return nil
	},
	destroy: func(ctx context.Context, o Options, rec Record) error {
		sb, err := docker.Attach(ctx, dockerLasting(o), rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		if err != nil {
			// Not running: Attach refuses it, but the container may still exist. Prune by label
			// removes stopped ones.
			_, perr := docker.Prune(ctx, dockerLasting(o), docker.PruneOptions{})
			return errors.Join(err, perr)
		}
		return sb.Stop(ctx)
	},
	alive: func(ctx context.Context, o Options, rec Record) (bool, error) {
		infos, err := docker.List(ctx, dockerLasting(o))
		return runningIn(infos, err, rec.Backend, func(i docker.Info) (string, string) { return i.ID, i.State })
	},
	fork: func(ctx context.Context, o Options, rs records, src adapter.Sandbox, rec *Record) (adapter.CopyReport, error) {
		c, err := forkAs[*docker.Sandbox](ctx, "docker", src)
		if err != nil {
			return adapter.CopyReport{}, err
		}
		rec.Backend = c.ID()
		return adapter.CopyReport{}, c.Detach() // persistent as its source: it stays
	},
	prune: func(ctx context.Context, o Options) ([]string, error) {
		return docker.Prune(ctx, o.DockerConfig(), docker.PruneOptions{})
	},
	setPaused: func(ctx context.Context, o Options, rec Record, paused bool) error {
		return docker.SetPaused(ctx, dockerLasting(o), rec.Backend, paused)
	},
}
