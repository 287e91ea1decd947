package tools

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools/patch"
)

// ReadInput is the input of read.
type ReadInput struct {
	Path string `json:"path" jsonschema:"file to read, relative to the workspace root or absolute inside it"`
}

// WriteInput is the input of write.
type WriteInput struct {
	Path    string `json:"path" jsonschema:"file to create or replace, relative to the workspace root or absolute inside it; parent directories are created"`
	Content string `json:"content" jsonschema:"the whole new content of the file"`
}

// EditInput is the input of edit.
type EditInput struct {
	Path  string `json:"path" jsonschema:"existing file to patch, relative to the workspace root or absolute inside it"`
	Patch string `json:"patch" jsonschema:"single-file unified diff (---/+++ names are ignored; hunks may have moved but their context must match)"`
}

// Read is the read tool: {path} -> the file's content. Errors: errs.PathInvalid, errs.PathEscape,
// errs.NotFound, errs.FileTooLarge (larger than MaxOutputBytes; checked with adapter.Statter before
// reading when the sandbox has it), errs.SandboxUnavailable.
var Read = builtin("path", Definition[ReadInput, string]{
	Name:        "read",
	Description: "Read a file from the sandbox workspace and return its content.",
	Execute: func(ctx context.Context, in ReadInput, tc *Context) (string, error) {
		if err := checkPath("read", in.Path); err != nil {
			return "", err
		}
		data, err := readLimited(ctx, "read", in.Path, tc)
		if err != nil {
			return "", err
		}
		return string(data), nil
	},
})

// Write is the write tool: {path, content} -> "ok". The content size is checked before the path
// (errs.ContentTooLarge over MaxOutputBytes); then errs.PathInvalid, errs.PathEscape (also through
// a symlink, dangling or not), errs.SandboxUnavailable. Parent directories are created; the
// replace is atomic. The journal keeps only the SHA-256 and size of content.
var Write = builtin("path", Definition[WriteInput, string]{
	Name:         "write",
	Description:  "Create or replace a file in the sandbox workspace (parent directories are created). Returns \"ok\".",
	SideEffect:   true,
	RedactFields: []string{"content"},
	Execute: func(ctx context.Context, in WriteInput, tc *Context) (string, error) {
		if len(in.Content) > tc.MaxOutputBytes {
			return "", tooLarge(errs.ContentTooLarge, "write", in.Path, "content", len(in.Content), tc.MaxOutputBytes)
		}
		if err := checkPath("write", in.Path); err != nil {
			return "", err
		}
		if err := tc.Sandbox.WriteFile(ctx, in.Path, []byte(in.Content)); err != nil {
			return "", err
		}
		return "ok", nil
	},
})

// Edit is the edit tool: {path, patch} -> "ok". Order of checks: errs.PatchTooLarge (patch over
// MaxOutputBytes), the path (errs.PathInvalid, errs.PathEscape), the patch itself
// (errs.InvalidInput: not a diff, several files, no hunk), the file (errs.NotFound,
// errs.FileTooLarge), then errs.PatchFailed when a hunk does not apply (the message names the
// hunk; Details as in package patch). On any error the file is left byte-for-byte unchanged. The
// journal keeps only the SHA-256 and size of patch.
var Edit = builtin("path", Definition[EditInput, string]{
	Name:         "edit",
	Description:  "Apply a single-file unified diff to an existing file in the sandbox workspace. Hunks may have moved by some lines, but their context must match exactly. Returns \"ok\".",
	SideEffect:   true,
	RedactFields: []string{"patch"},
	Execute: func(ctx context.Context, in EditInput, tc *Context) (string, error) {
		if len(in.Patch) > tc.MaxOutputBytes {
			return "", tooLarge(errs.PatchTooLarge, "edit", in.Path, "patch", len(in.Patch), tc.MaxOutputBytes)
		}
		if err := checkPath("edit", in.Path); err != nil {
			return "", err
		}
		p, err := patch.Parse(in.Patch)
		if err != nil {
			return "", withPath(err, in.Path)
		}
		src, err := readLimited(ctx, "edit", in.Path, tc)
		if err != nil {
			return "", err
		}
		out, err := p.Apply(src)
		if err != nil {
			return "", withPath(err, in.Path)
		}
		if bytes.Equal(out, src) {
			return "ok", nil
		}
		if err := tc.Sandbox.WriteFile(ctx, in.Path, out); err != nil {
			return "", err
		}
		return "ok", nil
	},
})

// readLimited reads a file of at most tc.MaxOutputBytes bytes. With an adapter.Statter the size is
// checked before the content is read, so a huge file is never loaded.
func readLimited(ctx context.Context, op, p string, tc *Context) ([]byte, error) {
	if st, ok := tc.Sandbox.(adapter.Statter); ok {
		info, err := st.StatFile(ctx, p)
		if err != nil {
			return nil, err
		}
		if info.Mode.Type() == fs.ModeDir {
			return nil, errs.New(errs.NotFound, op, p, "is a directory, not a file")
		}
		// A final symlink reports its own size; the size of what it points to is checked after.
		if info.Mode.IsRegular() && info.Size > int64(tc.MaxOutputBytes) {
			return nil, tooLarge(errs.FileTooLarge, op, p, "file", int(info.Size), tc.MaxOutputBytes)
		}
	}
	// The adapter checks the size of what it opened (a symlink's target) before reading it.
	data, err := tc.Sandbox.ReadFile(adapter.WithReadLimit(ctx, int64(tc.MaxOutputBytes)), p)
	if errors.Is(err, errs.FileTooLarge) {
		size := int(tc.MaxOutputBytes) + 1
		if b, ok := errs.As(err).Details["bytes"].(int64); ok {
			size = int(b)
		}
		return nil, tooLarge(errs.FileTooLarge, op, p, "file", size, tc.MaxOutputBytes)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > tc.MaxOutputBytes {
		return nil, tooLarge(errs.FileTooLarge, op, p, "file", len(data), tc.MaxOutputBytes)
	}
	return data, nil
}

func checkPath(op, p string) error {
	if strings.TrimSpace(p) == "" {
		return errs.New(errs.PathInvalid, op, p, "path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return errs.New(errs.PathInvalid, op, p, "path contains a NUL byte")
	}
	return nil
}

func tooLarge(code errs.Code, op, p, what string, size, limit int) error {
	e := errs.New(code, op, p, "%s is %d bytes, more than maxOutputBytes %d", what, size, limit)
	e.Details = map[string]any{"bytes": size, "maxOutputBytes": limit}
	return e
}

func withPath(err error, p string) error {
	e := errs.As(err)
	if e.Path == "" {
		e.Path = p
	}
	return e
}

// builtin defines a built-in tool whose pathField errors are errs.PathInvalid.
func builtin[In, Out any](pathField string, d Definition[In, Out]) *Tool {
	t := define(d) // its schema is made at its first use (TestBuiltins checks them all)
	t.pathField = pathField
	return t
}
