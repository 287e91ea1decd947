package tools

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// GrepInput is the input of grep.
type GrepInput struct {
	Pattern string `json:"pattern" jsonschema:"regular expression (ripgrep syntax)"`
	Path    string `json:"path,omitempty" jsonschema:"directory or file to search, relative to the workspace root or absolute inside it; default the whole workspace"`
}

// Grep is the grep tool: {pattern, path?="."} -> the lines of `rg -n -- PATTERN PATH`, run inside
// the sandbox with the workspace root as working directory, "" when nothing matches (rg exit 1).
//
// Paths in the output are relative to the workspace root, never host paths: an absolute path
// inside the root is turned into a relative one before rg runs, and for the whole workspace (".")
// rg's "./" prefix is removed. Searching a single file prints "LINE:TEXT" without a file name,
// as rg does. When the output is over MaxOutputBytes, its head is kept and a last line
// "[sandboxer: output truncated, N bytes dropped]" says so.
//
// Errors: errs.PathInvalid, errs.PathEscape (outside the root, or a final symlink that the
// sandbox cannot show stays inside), errs.GrepFailed (rg exit 2: bad regex, unreadable path; the
// message and Details["stderr"] hold rg's message), errs.ProcessFailed (rg cannot be started),
// errs.ProcessTimeout, errs.SandboxUnavailable.
var Grep = builtin("path", Definition[GrepInput, string]{
	Name:        "grep",
	Description: "Search files in the sandbox workspace with ripgrep (rg -n). Returns matching lines as path:line:text, or an empty string when nothing matches.",
	Execute:     runGrep,
})

func runGrep(ctx context.Context, in GrepInput, tc *Context) (string, error) {
	p := in.Path
	if p == "" {
		p = "."
	}
	if strings.IndexByte(p, 0) >= 0 || strings.TrimSpace(p) == "" {
		return "", errs.New(errs.PathInvalid, "grep", in.Path, "path is empty or contains a NUL byte")
	}
	rel, err := adapter.Rel("grep", cmp.Or(tc.RootDir, "."), p)
	if err != nil {
		return "", err
	}
	if err := checkSearchRoot(ctx, rel, tc); err != nil {
		return "", err
	}
	res, err := tc.Sandbox.ExecuteCommand(ctx, adapter.Command{
		Args:           []string{"rg", "-n", "--", in.Pattern, rel},
		Env:            tc.Env,
		Timeout:        tc.Timeout,
		MaxOutputBytes: tc.MaxOutputBytes,
	})
	if err != nil {
		if errors.Is(err, errs.ProcessTimeout) {
			e := errs.As(err)
			e.Details = mergeDetails(e.Details, map[string]any{"stdout": string(res.Stdout), "stderr": string(res.Stderr)})
			return "", e
		}
		return "", err
	}
	switch res.ExitCode {
	case 0:
	case 1:
		return "", nil
	default:
		msg := strings.TrimSpace(string(res.Stderr))
		e := errs.New(errs.GrepFailed, "grep", in.Path, "rg exited with code %d: %s", res.ExitCode, msg)
		e.Details = map[string]any{"exitCode": res.ExitCode, "stderr": string(res.Stderr), "stdout": string(res.Stdout)}
		return "", e
	}
	out := res.Stdout
	if rel == "." {
		out = stripDotSlash(out)
	}
	if res.StdoutTruncated {
		var b bytes.Buffer
		b.Write(out)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[sandboxer: output truncated, %d bytes dropped]\n", res.StdoutDropped)
		out = b.Bytes()
	}
	return string(out), nil
}

// checkSearchRoot stops rg from following a final symlink out of the workspace: rg follows a
// symlink given as its path argument. Intermediate symlinks are the sandbox's business (StatFile
// rejects escapes). A final symlink is allowed when it reads as a file inside the root; a link to a
// directory cannot be verified through the Sandbox interface and is refused (errs.PathEscape).
func checkSearchRoot(ctx context.Context, rel string, tc *Context) error {
	st, ok := tc.Sandbox.(adapter.Statter)
	if !ok || rel == "." {
		return nil
	}
	info, err := st.StatFile(ctx, rel)
	if err != nil {
		if errors.Is(err, errs.NotFound) {
			return nil // rg reports the missing path (exit 2)
		}
		return err
	}
	if info.Mode.Type() != fs.ModeSymlink {
		return nil
	}
	// A limit of 0: the content is not wanted, only whether the link resolves inside (a file too
	// large to read was opened inside the workspace).
	if _, err := tc.Sandbox.ReadFile(adapter.WithReadLimit(ctx, 0), rel); err != nil && !errors.Is(err, errs.FileTooLarge) {
		if errors.Is(err, errs.PathEscape) || errors.Is(err, errs.NotFound) {
			return errs.New(errs.PathEscape, "grep", rel, "path is a symlink that cannot be verified to stay inside the workspace")
		}
		return err
	}
	return nil
}

// stripDotSlash removes the "./" rg puts before each path when searching ".".
func stripDotSlash(out []byte) []byte {
	if !bytes.Contains(out, []byte("./")) {
		return out
	}
	var b bytes.Buffer
	b.Grow(len(out))
	for len(out) > 0 {
		line := out
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			line, out = out[:i+1], out[i+1:]
		} else {
			out = nil
		}
		b.Write(bytes.TrimPrefix(line, []byte("./")))
	}
	return b.Bytes()
}

func mergeDetails(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}
