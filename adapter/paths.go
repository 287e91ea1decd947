package adapter

import (
	"path"
	"strings"

	"github.com/sandboxer/sandboxer/errs"
)

// Rel turns a caller's path into a clean, slash-separated path relative to the workspace root,
// lexically: root is the workspace as commands see it ("/workspace" or a host directory). It
// rejects the empty path (errs.PathInvalid) and paths that leave the root by ".." or by being
// absolute elsewhere (errs.PathEscape). "." is the root itself. Symlinks are not looked at: each
// adapter resolves the result against its own file tree (os.Root for local).
func Rel(op, root, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errs.New(errs.PathInvalid, op, p, "path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errs.New(errs.PathInvalid, op, p, "path contains a NUL byte")
	}
	if path.IsAbs(p) {
		root = path.Clean(root)
		cp := path.Clean(p)
		if cp == root {
			return ".", nil
		}
		if root == "/" {
			return cp[1:], nil
		}
		rest, ok := strings.CutPrefix(cp, root+"/")
		if !ok {
			return "", errs.New(errs.PathEscape, op, p, "absolute path outside the workspace %s", root)
		}
		return rest, nil
	}
	cp := path.Clean(p)
	if cp == ".." || strings.HasPrefix(cp, "../") {
		return "", errs.New(errs.PathEscape, op, p, "path leaves the workspace")
	}
	return cp, nil
}
