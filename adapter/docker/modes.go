package docker

import (
	"context"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Symlink implements adapter.ModeWriter with one exec in the container (symlinkScript).
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	const op = "symlink"
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, op, p, "is the workspace root")
	}
	if err := adapter.CheckLinkTarget(op, p, target); err != nil {
		return err
	}
	_, err = s.script(ctx, op, p, symlinkScript, []string{r, target}, nil, nil)
	return err
}

// SetExecutable implements adapter.ModeWriter with one exec in the container (chmodScript).
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	const op = "chmod"
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	bit := "0"
	if exec {
		bit = "1"
	}
	_, err = s.script(ctx, op, p, chmodScript, []string{r, bit}, nil, nil)
	return err
}

var _ adapter.ModeWriter = (*Sandbox)(nil)
