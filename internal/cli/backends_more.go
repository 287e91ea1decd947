package cli

import (
	"context"
	"errors"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/state"
)

func dockerConfig(s Settings, persist bool) docker.Config {
	return docker.Config{Image: s.Image, AllowNetwork: s.AllowNetwork, AllowHosts: s.AllowHosts, Persist: persist,
		WorkspaceBytes: s.Disk, StateDir: s.StateDir}
}

// dockerBackend: one container per sandbox. An ephemeral sandbox's container is removed when the
// invocation ends; a long-lived one is created with Persist (docker prune leaves it) and found
// again by its sandbox id (the container label), which the record keeps as Backend.
var dockerBackend = backend{
	enforces: "each sandbox is a container: network mode none unless --allow-network, all " +
		"capabilities dropped, no-new-privileges, read-only root file system, non-root user, " +
		"memory/CPU/pids limits, the daemon's default seccomp profile, a workspace of --disk (10 GiB " +
		"by default; a loop-mounted file system, root with a local daemon); the process tree is killed " +
		"inside the container on timeout.",
	open: func(ctx context.Context, s Settings) (adapter.Sandbox, error) {
		return docker.New(ctx, dockerConfig(s, false))
	},
	create: func(ctx context.Context, s Settings, st state.Dir, rec *state.Record) error {
		sb, err := docker.New(ctx, dockerConfig(s, true))
		if err != nil {
			return err
		}
		rec.Backend, rec.Image = sb.ID(), s.Image
		return nil
	},
	attach: func(ctx context.Context, s Settings, st state.Dir, rec state.Record) (adapter.Sandbox, error) {
		cfg := dockerConfig(s, true)
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
	destroy: func(ctx context.Context, s Settings, rec state.Record) error {
		sb, err := docker.Attach(ctx, dockerConfig(s, true), rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		if err != nil {
			// Not running: Attach refuses it, but the container may still exist. Prune by label
			// removes stopped ones.
			_, perr := docker.Prune(ctx, dockerConfig(s, true), docker.PruneOptions{})
			return errors.Join(err, perr)
		}
		return sb.Stop(ctx)
	},
	alive: func(ctx context.Context, s Settings, rec state.Record) (bool, error) {
		infos, err := docker.List(ctx, dockerConfig(s, true))
		if err != nil {
			return false, err
		}
		for _, i := range infos {
			if i.ID == rec.Backend {
				return i.State == "running", nil
			}
		}
		return false, nil
	},
	fork: func(ctx context.Context, s Settings, st state.Dir, src adapter.Sandbox, rec *state.Record) (adapter.CopyReport, error) {
		f, ok := src.(adapter.Forker)
		if !ok {
			return adapter.CopyReport{}, errs.New(errs.Internal, "fork", "", "docker sandbox cannot fork")
		}
		child, err := f.Fork(ctx)
		if err != nil {
			return adapter.CopyReport{}, err
		}
		id, ok := child.(adapter.Identified)
		if !ok {
			child.Stop(context.WithoutCancel(ctx))
			return adapter.CopyReport{}, errs.New(errs.Internal, "fork", "", "forked docker sandbox has no id")
		}
		rec.Backend = id.ID()
		return adapter.CopyReport{}, nil
	},
	prune: func(ctx context.Context, s Settings) ([]string, error) {
		return docker.Prune(ctx, dockerConfig(s, false), docker.PruneOptions{})
	},
}

// errMemoryOneProcess: a memory sandbox lives in the memory of one process.
var errMemoryOneProcess = errs.New(errs.InvalidInput, "sandbox", "",
	"memory sandboxes live inside one process and cannot be kept across invocations: "+
		"use `sandboxer mcp --adapter memory`, or --store to keep the files")

// errMemoryNoNetwork: a memory sandbox has no network, so no way out through an egress proxy.
var errMemoryNoNetwork = errs.New(errs.SandboxUnavailable, "sandbox", "",
	"the memory adapter has no network at all, so --allow-host cannot be served: "+
		"use --adapter local (with a network namespace), docker or oci")

// memoryBackend: an in-memory tree and a shell interpreter; nothing on the host is touched. Each
// invocation starts from an empty workspace (or the --store).
var memoryBackend = backend{
	enforces: "no host file, process or socket is touched: an in-memory file tree and a Go shell " +
		"interpreter with built-in utilities, with command, loop and size limits.",
	open: func(ctx context.Context, s Settings) (adapter.Sandbox, error) {
		if len(s.AllowHosts) > 0 {
			return nil, errMemoryNoNetwork
		}
		return memory.New(memory.Config{})
	},
	create: func(ctx context.Context, s Settings, st state.Dir, rec *state.Record) error {
		return errMemoryOneProcess
	},
	attach: func(ctx context.Context, s Settings, st state.Dir, rec state.Record) (adapter.Sandbox, error) {
		return nil, errMemoryOneProcess
	},
	detach:  func(ctx context.Context, sb adapter.Sandbox) error { return sb.Stop(ctx) },
	destroy: func(ctx context.Context, s Settings, rec state.Record) error { return nil },
	alive:   func(ctx context.Context, s Settings, rec state.Record) (bool, error) { return false, nil },
	fork: func(ctx context.Context, s Settings, st state.Dir, src adapter.Sandbox, rec *state.Record) (adapter.CopyReport, error) {
		return adapter.CopyReport{}, errMemoryOneProcess
	},
}
