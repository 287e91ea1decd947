package local

import (
	"context"
	"os"
	"path/filepath"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Fork copies the workspace into a new temporary directory (removed by the fork's Stop) and returns
// a sandbox on it with the same configuration. The copy is adapter.CopyTree's: files (holes kept,
// each at most Config.ForkMaxFileBytes, else errs.FileTooLarge), directories, permissions and
// symbolic links (as links, never followed, also one swapped in during the copy); FIFOs, sockets
// and devices are left out unread (never blocking), and listed by the fork's ForkSkipped. The source
// is only read. Errors: errs.SandboxUnavailable (stopped), errs.FileTooLarge, errs.LimitExceeded
// (directories nested too deep), errs.Internal.
func (s *Sandbox) Fork(ctx context.Context) (adapter.Sandbox, error) {
	if err := s.checkOpen("fork"); err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.Root = ""
	child, err := New(cfg)
	if err != nil {
		return nil, err
	}
	rep, err := adapter.CopyTree(ctx, "fork", s.root, child.root, s.forkMaxFileBytes())
	if err != nil {
		_ = child.Stop(ctx)
		return nil, err
	}
	child.forkSkipped = rep
	return child, nil
}

// CopyWorkspace copies the workspace into dir, a new directory (0755; it must not exist, its
// parents are made), as Fork copies it, and returns what it left out. On an error dir is removed.
// The CLI's `sandbox fork` makes its long-lived forks with it. Errors are Fork's.
func (s *Sandbox) CopyWorkspace(ctx context.Context, dir string) (adapter.CopyReport, error) {
	const op = "fork"
	if err := s.checkOpen(op); err != nil {
		return adapter.CopyReport{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return adapter.CopyReport{}, errs.Wrap(errs.Internal, op, "", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return adapter.CopyReport{}, errs.Wrap(errs.Internal, op, "", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		_ = os.Remove(dir)
		return adapter.CopyReport{}, errs.Wrap(errs.Internal, op, "", err)
	}
	rep, err := adapter.CopyTree(ctx, op, s.root, root, s.forkMaxFileBytes())
	root.Close()
	if err != nil {
		_ = os.RemoveAll(dir)
	}
	return rep, err
}

// ForkSkipped is what the copy that made this sandbox (Fork) left out: FIFOs, sockets and devices
// of the source's workspace. It is empty for a sandbox that Fork did not make.
func (s *Sandbox) ForkSkipped() adapter.CopyReport { return s.forkSkipped }

func (s *Sandbox) forkMaxFileBytes() int64 {
	switch s.cfg.ForkMaxFileBytes {
	case 0:
		return adapter.DefaultCopyMaxFileBytes
	case NoLimit:
		return -1
	}
	return s.cfg.ForkMaxFileBytes
}
