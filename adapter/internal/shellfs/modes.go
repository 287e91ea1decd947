package shellfs

import (
	"context"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Symlink is adapter.ModeWriter's Symlink, with one exec in the sandbox (symlinkScript).
func (f FS) Symlink(ctx context.Context, p, target string) error {
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
	_, err = f.script(ctx, op, p, symlinkScript, []string{r, target}, nil, nil)
	return err
}

// SetExecutable is adapter.ModeWriter's SetExecutable, with one exec in the sandbox (chmodScript).
func (f FS) SetExecutable(ctx context.Context, p string, exec bool) error {
	const op = "chmod"
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	bit := "0"
	if exec {
		bit = "1"
	}
	_, err = f.script(ctx, op, p, chmodScript, []string{r, bit}, nil, nil)
	return err
}
