package lifecycle

import (
	"context"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
)

const memoryEnforces = "no host file, process or socket is touched: an in-memory file tree and a Go shell " +
	"interpreter with built-in utilities, with command, loop and size limits."

// ErrInProcess is Manager's answer for an adapter whose sandboxes live in the memory of one
// process (Adapter.InProcess: memory): they cannot be recorded and attached again. Open one and
// keep it; fork it with adapter.Forker.
var ErrInProcess = errs.New(errs.InvalidInput, "sandbox", "",
	"memory sandboxes live inside one process and cannot be kept across processes: Open one and keep it")

// ErrNoNetwork is Open's answer for a memory sandbox with Options.AllowHosts: it has no network
// at all, so no way out through an egress proxy.
var ErrNoNetwork = errs.New(errs.SandboxUnavailable, "sandbox", "",
	"the memory adapter has no network at all, so AllowHosts cannot be served: use the local adapter (with a network namespace), docker or oci")

// memoryDriver: an in-memory tree and a shell interpreter; nothing on the host is touched. Each
// sandbox starts from an empty workspace.
var memoryDriver = driver{
	open: func(ctx context.Context, o Options) (adapter.Sandbox, error) {
		if len(o.AllowHosts) > 0 {
			return nil, ErrNoNetwork
		}
		return memory.New(memory.Config{})
	},
	create: func(ctx context.Context, o Options, rs records, rec *Record) error {
		return ErrInProcess
	},
	attach: func(ctx context.Context, o Options, rec Record) (adapter.Sandbox, error) {
		return nil, ErrInProcess
	},
	detach:  func(ctx context.Context, sb adapter.Sandbox) error { return sb.Stop(ctx) },
	destroy: func(ctx context.Context, o Options, rec Record) error { return nil },
	alive:   func(ctx context.Context, o Options, rec Record) (bool, error) { return false, nil },
	fork: func(ctx context.Context, o Options, rs records, src adapter.Sandbox, rec *Record) (adapter.CopyReport, error) {
		return adapter.CopyReport{}, ErrInProcess
	},
}
