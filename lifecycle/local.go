package lifecycle

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
)

// localEnforces says what the local adapter enforces in this build: kernel isolation on Linux,
// none elsewhere (macOS).
func localEnforces() string {
	if !local.KernelIsolation {
		return "NO kernel isolation on " + runtime.GOOS + ": file calls are jailed to the workspace by os.Root, " +
			"but commands are plain processes of your user (they can read and write whatever you can, and reach " +
			"the network), in a process group killed when they end; every result reports network, filesystem, " +
			"processTree and limits as not enforced. Isolation fails closed: with --isolation auto every command is refused " +
			"(ISOLATION_UNAVAILABLE); --isolation off runs them as plain processes."
	}
	return "file calls jailed to the workspace by os.Root; with --isolation auto (the default) " +
		"each command also runs in its own user, PID and network namespaces (loopback only unless " +
		"--allow-network), under Landlock (writes only to the workspace and a private TMPDIR, " +
		"home directories and credentials unreadable) and in a cgroup killed as a whole; " +
		"it fails closed: a command runs only with every layer doctor lists, less those turned off by --disable-layer " +
		"(else ISOLATION_UNAVAILABLE naming them). Every result says which layers applied."
}

// localDriver: a long-lived local sandbox's workspace is STATE/sandboxes/ID/workspace, removed
// with its record; an ephemeral one works in Options.Local.Root (kept) or a temporary directory.
var localDriver = driver{
	open: func(ctx context.Context, o Options) (adapter.Sandbox, error) {
		return local.New(o.LocalConfig(o.Local.Root))
	},
	create: func(ctx context.Context, o Options, rs records, rec *Record) error {
		rec.Workspace = rs.workspaceDir(rec.ID)
		if err := o.LocalConfig(rec.Workspace).Validate(); err != nil {
			return err // refused now rather than at every attach
		}
		return os.MkdirAll(rec.Workspace, 0o755)
	},
	attach: func(ctx context.Context, o Options, rec Record) (adapter.Sandbox, error) {
		fi, err := os.Stat(rec.Workspace)
		if err != nil || !fi.IsDir() {
			return nil, errs.New(errs.SandboxUnavailable, "attach", "", "sandbox %s: workspace %s is gone", rec.ID, rec.Workspace)
		}
		return local.New(o.LocalConfig(rec.Workspace))
	},
	detach: func(ctx context.Context, sb adapter.Sandbox) error {
		return sb.Stop(ctx) // a configured Root is kept by Stop
	},
	destroy: func(ctx context.Context, o Options, rec Record) error {
		return nil // the workspace lives in the state directory, removed with the record
	},
	alive: func(ctx context.Context, o Options, rec Record) (bool, error) {
		fi, err := os.Stat(rec.Workspace)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return fi.IsDir(), nil
	},
	fork: func(ctx context.Context, o Options, rs records, src adapter.Sandbox, rec *Record) (adapter.CopyReport, error) {
		l, ok := src.(*local.Sandbox)
		if !ok {
			return adapter.CopyReport{}, errs.New(errs.Internal, "fork", "", "not a local sandbox")
		}
		rec.Workspace = rs.workspaceDir(rec.ID)
		return l.CopyWorkspace(ctx, rec.Workspace) // bounded by the source's ForkMaxFileBytes
	},
}
