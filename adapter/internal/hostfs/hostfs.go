// Package hostfs owns the file calls of the adapters whose workspace is a directory of this host
// that the sandbox sees at /workspace (oci; docker with a daemon on this host): no process in the
// sandbox, no round trip. The sandbox can plant symbolic links, so every path is resolved by
// os.Root (which refuses a link that leads out and never follows one through a mount of the host),
// and a link the sandbox made with an absolute target ("/workspace/x", which os.Root does not
// follow) is resolved here, component by component, inside the workspace; the result is opened
// through os.Root again, so a link swapped in meanwhile can only make the call fail. Files and
// directories the calls create belong to the sandbox user's host uid, so its commands can change
// them.
package hostfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// FS is the file calls on one workspace. Its methods have the contracts of adapter.Sandbox's,
// adapter.FileStreamer's, adapter.Lister's, adapter.Statter's, adapter.Remover's and
// adapter.ModeWriter's.
type FS struct {
	Root     *os.Root // the workspace directory
	UID, GID int      // the host uid and gid that own what the calls create
	// Check, when set, says whether the sandbox still takes calls (errs.SandboxUnavailable once
	// it is stopped).
	Check func(op string) error
}

// TmpPrefix names the temporary files of writes; listings skip them.
const TmpPrefix = ".sandboxer-tmp-"

const tmpPrefix = TmpPrefix

func (h FS) check(op string) error {
	if h.Check != nil {
		return h.Check(op)
	}
	return nil
}

// rel is a caller's path relative to the workspace (lexically jailed).
func rel(op, p string) (string, error) {
	return adapter.Rel(op, adapter.DefaultWorkspace, p)
}

func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// mapErr turns an error of an os.Root call into a coded error.
func mapErr(op, p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errs.CodeOf(err) != "":
		return err
	case adapter.IsRootEscape(err):
		return errs.Wrap(errs.PathEscape, op, p, err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return errs.Wrap(errs.NotFound, op, p, err)
	case errors.Is(err, syscall.ELOOP):
		return errs.Wrap(errs.PathEscape, op, p, err)
	case errors.Is(err, syscall.EISDIR):
		return errs.Wrap(errs.InvalidInput, op, p, err)
	}
	return errs.Wrap(errs.Internal, op, p, err)
}

// resolve follows every symbolic link of r (workspace-relative, clean) inside the workspace, as
// the container would, and returns the path without links (components that do not exist are
// taken as they are). A link that leads outside /workspace, dangling or not, is errs.PathEscape.
func (h FS) resolve(op, p, r string) (string, error) {
	done, rest, links := ".", r, 0
	for rest != "" && rest != "." {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		next := path.Join(done, c)
		fi, err := h.Root.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > 40 {
			return "", errs.New(errs.PathEscape, op, p, "too many levels of symbolic links")
		}
		target, err := h.Root.Readlink(next)
		if err != nil {
			return "", mapErr(op, p, err)
		}
		var t string
		if path.IsAbs(target) {
			t, err = adapter.Rel(op, adapter.DefaultWorkspace, target)
		} else {
			t, err = adapter.Rel(op, adapter.DefaultWorkspace, path.Join(done, target))
		}
		if err != nil {
			return "", errs.New(errs.PathEscape, op, p, "symlink leads outside the workspace")
		}
		done = "."
		if rest != "" {
			rest = t + "/" + rest
		} else {
			rest = t
		}
	}
	return done, nil
}

// retry runs fn on r, and once more on r resolved when os.Root refused a link (an absolute
// one, which may stay inside /workspace).
func (h FS) retry(op, p, r string, fn func(r string) error) error {
	err := fn(r)
	if err == nil || !adapter.IsRootEscape(err) {
		return mapErr(op, p, err)
	}
	rr, rerr := h.resolve(op, p, r)
	if rerr != nil {
		return rerr
	}
	return mapErr(op, p, fn(rr))
}

// open opens a regular file of the workspace for reading, with its size (a symlink's target's).
func (h FS) open(op, p string) (*os.File, int64, error) {
	if err := h.check(op); err != nil {
		return nil, 0, err
	}
	r, err := rel(op, p)
	if err != nil {
		return nil, 0, err
	}
	var f *os.File
	err = h.retry(op, p, r, func(r string) (err error) {
		// O_NONBLOCK: a FIFO planted in the workspace must not hang the call.
		f, err = h.Root.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, mapErr(op, p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, errs.New(errs.NotFound, op, p, "not a regular file (%s)", fi.Mode().Type())
	}
	return f, fi.Size(), nil
}

// OpenFile opens a regular file of the workspace for reading (adapter.FileStreamer).
func (h FS) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	f, size, err := h.open("read", p)
	if err != nil {
		return nil, 0, err
	}
	return f, size, nil
}

// ReadFile reads a regular file of the workspace.
func (h FS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	const op = "read"
	f, size, err := h.open(op, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size of the file opened (a symlink's target), checked before anything is allocated.
	limit := adapter.ReadLimit(ctx)
	if size > limit {
		return nil, adapter.FileTooLarge(op, p, size, limit)
	}
	data := make([]byte, 0, size+1)
	for {
		if int64(len(data)) > limit { // it grew while being read
			return nil, adapter.FileTooLarge(op, p, int64(len(data)), limit)
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, mapErr(op, p, err)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// WriteFile writes data atomically: a temporary file next to the target, then rename. Parent
// directories are created; a symlink is written through when it stays inside.
func (h FS) WriteFile(ctx context.Context, p string, data []byte) error {
	_, err := h.WriteFileFrom(ctx, p, bytes.NewReader(data))
	return err
}

// WriteFileFrom writes what src yields as WriteFile writes data (adapter.FileStreamer); a failed
// read of src leaves the target as it was and is returned as it is.
func (h FS) WriteFileFrom(ctx context.Context, p string, src io.Reader) (int64, error) {
	const op = "write"
	if err := h.check(op); err != nil {
		return 0, err
	}
	r, err := rel(op, p)
	if err != nil {
		return 0, err
	}
	if r == "." {
		return 0, errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
	}
	n, err := h.writeIn(op, p, path.Dir(r), path.Base(r), src)
	if errors.Is(err, adapter.ErrFinalSymlink) {
		target, rerr := h.resolve(op, p, r)
		if rerr != nil {
			return 0, rerr
		}
		if target == "." {
			return 0, errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
		}
		n, err = h.writeIn(op, p, path.Dir(target), path.Base(target), src)
		if errors.Is(err, adapter.ErrFinalSymlink) { // replaced by a link meanwhile
			return 0, errs.New(errs.PathEscape, op, p, "the target changed into a symlink while writing")
		}
	}
	return n, err
}

// writeIn writes name in directory dir (workspace-relative), creating dir.
func (h FS) writeIn(op, p, dir, name string, src io.Reader) (int64, error) {
	var d *os.File
	err := h.retry(op, p, dir, func(dir string) (err error) {
		if err = h.mkdirAll(dir); err != nil {
			return err
		}
		d, err = h.Root.Open(dir)
		return err
	})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return 0, mapErr(op, p, err)
	}
	if !fi.IsDir() {
		return 0, errs.New(errs.InvalidInput, op, p, "a parent is not a directory")
	}
	return h.writeAt(d, op, p, name, src)
}

// mkdirAll creates dir and its missing parents through the root, owned by the sandbox user.
func (h FS) mkdirAll(dir string) error {
	if dir == "." {
		return nil
	}
	if fi, err := h.Root.Stat(dir); err == nil {
		if !fi.IsDir() {
			return syscall.ENOTDIR
		}
		return nil
	}
	if err := h.mkdirAll(path.Dir(dir)); err != nil {
		return err
	}
	err := h.Root.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return h.Root.Lchown(dir, h.UID, h.GID)
}

// writeAt replaces name in the open directory d atomically (adapter.ReplaceAt: a temporary file
// owned by the sandbox user, then renameat), keeping the permissions of a file it replaces.
func (h FS) writeAt(d *os.File, op, p, name string, src io.Reader) (int64, error) {
	n, err := adapter.ReplaceAt(d, name, func() string { return tmpPrefix + randomSuffix() }, h.UID, h.GID, src)
	return n, adapter.ReplaceErr(op, p, err, mapErr)
}

// StatFile reports one entry without following a final symlink; a link that leads outside the
// workspace is refused like any other path.
func (h FS) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	const op = "stat"
	if err := h.check(op); err != nil {
		return adapter.FileInfo{}, err
	}
	r, err := rel(op, p)
	if err != nil {
		return adapter.FileInfo{}, err
	}
	dir, name := path.Dir(r), path.Base(r)
	var fi fs.FileInfo
	err = h.retry(op, p, dir, func(dir string) (err error) {
		fi, err = h.Root.Lstat(path.Join(dir, name))
		return err
	})
	if err != nil {
		return adapter.FileInfo{}, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if _, err := h.resolve(op, p, r); err != nil {
			return adapter.FileInfo{}, err
		}
	}
	info := adapter.FileInfo{Path: r, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.Inode = st.Ino
	}
	if info.IsLink() {
		err = h.retry(op, p, dir, func(dir string) (err error) {
			info.Link, err = h.Root.Readlink(path.Join(dir, name))
			return err
		})
		if err != nil {
			return adapter.FileInfo{}, err
		}
	}
	return info, nil
}

// RemoveFile deletes one file, symlink (not its target) or empty directory.
func (h FS) RemoveFile(ctx context.Context, p string) error {
	const op = "remove"
	if err := h.check(op); err != nil {
		return err
	}
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, op, p, "cannot remove the workspace root")
	}
	dir, name := path.Dir(r), path.Base(r)
	return h.retry(op, p, dir, func(dir string) error { return h.Root.Remove(path.Join(dir, name)) })
}

// ListFiles walks dir with directory file descriptors (openat with O_NOFOLLOW, fstatat without
// following), so the walk can neither leave the workspace nor be redirected midway. The
// temporary files of writes in progress are left out.
func (h FS) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	return walk(ctx, h, "list", dir, adapter.ListFilesAt)
}

// ListDirs lists every directory under dir (adapter.DirLister), walked as ListFiles walks.
func (h FS) ListDirs(ctx context.Context, dir string) ([]string, error) {
	return walk(ctx, h, "list", dir, adapter.ListDirsAt)
}

// walk opens dir through the root and lists it with list, leaving out temporary files.
func walk[T any](ctx context.Context, h FS, op, dir string, list func(context.Context, *os.File, string, func(string) bool) ([]T, error)) ([]T, error) {
	if err := h.check(op); err != nil {
		return nil, err
	}
	if dir == "" {
		dir = "."
	}
	r, err := rel(op, dir)
	if err != nil {
		return nil, err
	}
	var d *os.File
	var start string
	err = h.retry(op, dir, r, func(r string) (err error) {
		d, err = h.Root.Open(r)
		start = r
		return err
	})
	if err != nil {
		return nil, err
	}
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		d.Close()
		return nil, errs.New(errs.NotFound, op, dir, "not a directory")
	}
	if start == "." {
		start = ""
	}
	out, err := list(ctx, d, start, func(name string) bool { return strings.HasPrefix(name, tmpPrefix) })
	if err != nil {
		return nil, mapErr(op, dir, err)
	}
	return out, nil
}

// openParent opens the directory of r (workspace-relative) through the root, creating it (owned
// by the sandbox user) when create is set.
func (h FS) openParent(op, p, dir string, create bool) (*os.File, error) {
	var d *os.File
	err := h.retry(op, p, dir, func(dir string) (err error) {
		if create {
			if err = h.mkdirAll(dir); err != nil {
				return err
			}
		}
		d, err = h.Root.Open(dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	fi, err := d.Stat()
	if err != nil {
		d.Close()
		return nil, mapErr(op, p, err)
	}
	if !fi.IsDir() {
		d.Close()
		return nil, errs.New(errs.InvalidInput, op, p, "a parent is not a directory")
	}
	return d, nil
}

// Symlink implements adapter.ModeWriter on the host, through the root: the link is made under a
// temporary name in the parent, given to the sandbox user and renamed over the path.
func (h FS) Symlink(ctx context.Context, p, target string) error {
	const op = "symlink"
	if err := h.check(op); err != nil {
		return err
	}
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	if r == "." {
		return errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
	}
	if err := adapter.CheckLinkTarget(op, p, target); err != nil {
		return err
	}
	d, err := h.openParent(op, p, path.Dir(r), true)
	if err != nil {
		return err
	}
	defer d.Close()
	err = adapter.SymlinkAt(d, path.Base(r), target, func() string { return tmpPrefix + randomSuffix() }, h.UID, h.GID)
	if errors.Is(err, adapter.ErrDirInTheWay) {
		return errs.New(errs.InvalidInput, op, p, "a directory is in the way")
	}
	return mapErr(op, p, err)
}

// SetExecutable implements adapter.ModeWriter on the host: the file is opened with O_NOFOLLOW in
// its parent and changed through that descriptor.
func (h FS) SetExecutable(ctx context.Context, p string, exec bool) error {
	const op = "chmod"
	if err := h.check(op); err != nil {
		return err
	}
	r, err := rel(op, p)
	if err != nil {
		return err
	}
	d, err := h.openParent(op, p, path.Dir(r), false)
	if err != nil {
		return err
	}
	defer d.Close()
	return mapErr(op, p, adapter.SetExecutableAt(d, op, p, path.Base(r), exec))
}
