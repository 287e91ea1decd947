package oci

import (
	"context"

	"github.com/sandboxer/sandboxer/adapter"
)

var _ adapter.DirLister = (*Sandbox)(nil)

// ListDirs lists the workspace's directories on the host (adapter.DirLister): it works while
// the sandbox is paused, when no command can run in it.
func (s *Sandbox) ListDirs(ctx context.Context, dir string) ([]string, error) {
	return s.files().ListDirs(ctx, dir)
}
