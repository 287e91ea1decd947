package oci

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/errs"
)

// File calls run on the host, through an os.Root opened on the workspace directory: no process
// in the container, no round trip. The sandbox can plant symbolic links, so every path is
// resolved by os.Root (which refuses a link that leads out and never follows one through a
// mount of the host), and a link the container made with an absolute target ("/workspace/x",
// which os.Root does not follow) is resolved here, component by component, inside the
// workspace; the result is opened through os.Root again, so a link swapped in meanwhile can
// only make the call fail. Files and directories the calls create belong to the sandbox user's
// host uid, so commands in the container can change them.

// tmpPrefix names the temporary files of writes; listings skip them.
const tmpPrefix = ".sandboxer-tmp-"

// rel is a caller's path relative to the workspace (lexically jailed).
func rel(op, p string) (string, error) {
	return adapter.Rel(op, adapter.DefaultWorkspace, p)
}

func (s *Sandbox) checkOpen(op string) error {
	if s.isStopped() {
		return s.errStopped(op)
	}
	return nil
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
func (s *Sandbox) resolve(op, p, r string) (string, error) {
	done, rest, links := ".", r, 0
	for rest != "" && rest != "." {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		next := path.Join(done, c)
		fi, err := s.ws.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > 40 {
			return "", errs.New(errs.PathEscape, op, p, "too many levels of symbolic links")
		}
		target, err := s.ws.Readlink(next)
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
func (s *Sandbox) retry(op, p, r string, fn func(r string) error) error {
	err := fn(r)
	if err == nil || !adapter.IsRootEscape(err) {
		return mapErr(op, p, err)
	}
	rr, rerr := s.resolve(op, p, r)
	if rerr != nil {
		return rerr
	}
	return mapErr(op, p, fn(rr))
}

// open opens a regular file of the workspace for reading, with its size (a symlink's target's).
func (s *Sandbox) open(op, p string) (*os.File, int64, error) {
	if err := s.checkOpen(op); err != nil {
		return nil, 0, err
	}
	r, err := rel(op, p)
	if err != nil {
		return nil, 0, err
	}
	var f *os.File
	err = s.retry(op, p, r, func(r string) (err error) {
		// O_NONBLOCK: a FIFO planted in the workspace must not hang the call.
		f, err = s.ws.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
func (s *Sandbox) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	f, size, err := s.open("read", p)
	if err != nil {
		return nil, 0, err
	}
	return f, size, nil
}

// ReadFile reads a regular file of the workspace.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	const op = "read"
	f, size, err := s.open(op, p)
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
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	_, err := s.WriteFileFrom(ctx, p, bytes.NewReader(data))
	return err
}

// WriteFileFrom writes what src yields as WriteFile writes data (adapter.FileStreamer); a failed
// read of src leaves the target as it was and is returned as it is.
func (s *Sandbox) WriteFileFrom(ctx context.Context, p string, src io.Reader) (int64, error) {
	const op = "write"
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	r, err := rel(op, p)
	if err != nil {
		return 0, err
	}
	if r == "." {
		return 0, errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
	}
	n, err := s.writeIn(op, p, path.Dir(r), path.Base(r), src)
	if errors.Is(err, adapter.ErrFinalSymlink) {
		target, rerr := s.resolve(op, p, r)
		if rerr != nil {
			return 0, rerr
		}
		if target == "." {
			return 0, errs.New(errs.InvalidInput, op, p, "the workspace root is a directory")
		}
		n, err = s.writeIn(op, p, path.Dir(target), path.Base(target), src)
		if errors.Is(err, adapter.ErrFinalSymlink) { // replaced by a link meanwhile
			return 0, errs.New(errs.PathEscape, op, p, "the target changed into a symlink while writing")
		}
	}
	return n, err
}

// writeIn writes name in directory dir (workspace-relative), creating dir.
func (s *Sandbox) writeIn(op, p, dir, name string, src io.Reader) (int64, error) {
	var d *os.File
	err := s.retry(op, p, dir, func(dir string) (err error) {
		if err = s.mkdirAll(dir); err != nil {
			return err
		}
		d, err = s.ws.Open(dir)
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
	return s.writeAt(d, op, p, name, src)
}

// mkdirAll creates dir and its missing parents through the root, owned by the sandbox user.
func (s *Sandbox) mkdirAll(dir string) error {
	if dir == "." {
		return nil
	}
	if fi, err := s.ws.Stat(dir); err == nil {
		if !fi.IsDir() {
			return syscall.ENOTDIR
		}
		return nil
	}
	if err := s.mkdirAll(path.Dir(dir)); err != nil {
		return err
	}
	err := s.ws.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.ws.Lchown(dir, s.rec.HostUID, s.rec.HostUID)
}

// writeAt replaces name in the open directory d atomically (adapter.ReplaceAt: a temporary file
// owned by the sandbox user, then renameat), keeping the permissions of a file it replaces.
func (s *Sandbox) writeAt(d *os.File, op, p, name string, src io.Reader) (int64, error) {
	n, err := adapter.ReplaceAt(d, name, func() string { return tmpPrefix + newID() }, s.rec.HostUID, src)
	return n, adapter.ReplaceErr(op, p, err, mapErr)
}

// StatFile reports one entry without following a final symlink; a link that leads outside the
// workspace is refused like any other path.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	const op = "stat"
	if err := s.checkOpen(op); err != nil {
		return adapter.FileInfo{}, err
	}
	r, err := rel(op, p)
	if err != nil {
		return adapter.FileInfo{}, err
	}
	dir, name := path.Dir(r), path.Base(r)
	var fi fs.FileInfo
	err = s.retry(op, p, dir, func(dir string) (err error) {
		fi, err = s.ws.Lstat(path.Join(dir, name))
		return err
	})
	if err != nil {
		return adapter.FileInfo{}, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if _, err := s.resolve(op, p, r); err != nil {
			return adapter.FileInfo{}, err
		}
	}
	info := adapter.FileInfo{Path: r, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.Inode = st.Ino
	}
	if info.IsLink() {
		err = s.retry(op, p, dir, func(dir string) (err error) {
			info.Link, err = s.ws.Readlink(path.Join(dir, name))
			return err
		})
		if err != nil {
			return adapter.FileInfo{}, err
		}
	}
	return info, nil
}

// RemoveFile deletes one file, symlink (not its target) or empty directory.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error {
	const op = "remove"
	if err := s.checkOpen(op); err != nil {
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
	return s.retry(op, p, dir, func(dir string) error { return s.ws.Remove(path.Join(dir, name)) })
}

// ListFiles walks dir with directory file descriptors (openat with O_NOFOLLOW, fstatat without
// following), so the walk can neither leave the workspace nor be redirected midway. The
// temporary files of writes in progress are left out.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	const op = "list"
	if err := s.checkOpen(op); err != nil {
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
	err = s.retry(op, dir, r, func(r string) (err error) {
		d, err = s.ws.Open(r)
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
	out, err := adapter.ListFilesAt(ctx, d, start, func(name string) bool { return strings.HasPrefix(name, tmpPrefix) })
	if err != nil {
		return nil, mapErr(op, dir, err)
	}
	return out, nil
}

// prepareWorkspace makes the workspace directory (or takes the given one) and the commands' HOME,
// both owned by the sandbox user and on the capped file system where there is one (capWorkspace),
// fills the workspace from copyFrom (a workspace being forked, by adapter.CopyTree; HOME starts
// empty, as the local adapter's) when set, and opens the root on it.
func (s *Sandbox) prepareWorkspace(ctx context.Context, copyFrom *os.Root) error {
	uid := s.rec.HostUID
	s.rec.Home = s.lay.home(s.rec.ID)
	var made []string
	if s.rec.OwnWorkspace {
		if err := s.capWorkspace(ctx); err != nil {
			return err
		}
		made = append(made, s.rec.Workspace)
	} else if err := os.MkdirAll(s.rec.Workspace, 0o755); err != nil {
		return err
	}
	for _, d := range append(made, s.rec.Home) {
		if err := os.MkdirAll(filepath.Dir(d), 0o711); err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		if err := os.Lchown(d, uid, uid); err != nil {
			return err
		}
	}
	if err := s.lay.writeRecord(s.rec); err != nil {
		return err
	}
	ws := s.rec.Workspace
	root, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	s.ws = root
	if copyFrom != nil {
		if s.forkSkipped, err = adapter.CopyTree(ctx, "fork", copyFrom, root, s.cfg.forkMaxFileBytes()); err != nil {
			return err
		}
	}
	if copyFrom != nil || !s.rec.OwnWorkspace {
		// Everything in it becomes the sandbox user's. The container is not running yet, so
		// nothing moves under the walk.
		err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// capWorkspace mounts a file system of Config.WorkspaceBytes at the sandbox's directory's disk,
// owned by the sandbox user, where the host allows it (diskcap.Check), and makes its directories
// workspace and home the sandbox's workspace and HOME: one cap for both. Elsewhere s.diskErr says
// why not, and the workspace and HOME stay directories of the host's file system. The record
// names the file and the mount before they are made, so that every removal releases them.
func (s *Sandbox) capWorkspace(ctx context.Context) error {
	size := s.cfg.workspaceBytes()
	switch {
	case size <= 0:
		s.diskErr = errors.New("no cap asked for (WorkspaceBytes -1)")
		return nil
	case s.rec.KeepWorkspace:
		s.diskErr = errors.New("a kept workspace is a host directory, not capped")
		return nil
	}
	if s.diskErr = diskcap.Check(); s.diskErr != nil {
		return nil
	}
	s.rec.Disk, s.rec.DiskMount = s.lay.disk(s.rec.ID), s.lay.diskMount(s.rec.ID)
	if err := s.lay.writeRecord(s.rec); err != nil {
		return err
	}
	if err := os.Mkdir(s.rec.DiskMount, 0o755); err != nil {
		return err
	}
	if s.diskErr = diskcap.Mount(ctx, s.rec.Disk, s.rec.DiskMount, size, s.rec.HostUID, s.rec.HostUID); s.diskErr == nil {
		s.rec.Workspace, s.rec.Home = filepath.Join(s.rec.DiskMount, "workspace"), filepath.Join(s.rec.DiskMount, "home")
	}
	return nil
}

// WorkspaceCap returns the size of the file system at /workspace (Config.WorkspaceBytes), or 0
// and why the workspace is not capped.
func (s *Sandbox) WorkspaceCap() (int64, error) {
	if s.rec.Disk == "" || !diskcap.Mounted(s.rec.Disk, s.rec.diskMount()) {
		if s.diskErr == nil {
			return 0, errors.New("the workspace is not capped (not made by this sandbox)")
		}
		return 0, s.diskErr
	}
	return s.cfg.workspaceBytes(), nil
}

// ForkSkipped is what the copy that made this sandbox (Fork) left out: FIFOs, sockets and devices
// of the source's workspace. It is empty for a sandbox that Fork did not make.
func (s *Sandbox) ForkSkipped() adapter.CopyReport { return s.forkSkipped }

// Fork starts a new sandbox with the same configuration whose workspace is a copy of this one's
// at this moment, made on the host by adapter.CopyTree: symbolic links as links (never followed,
// also one the container swaps in during the copy), holes kept, FIFOs, sockets and devices left
// out (listed by the fork's ForkSkipped), each file at most Config.ForkMaxFileBytes (else
// errs.FileTooLarge). The source is not changed.
func (s *Sandbox) Fork(ctx context.Context) (adapter.Sandbox, error) {
	if err := s.checkOpen("fork"); err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.Workspace = ""
	return create(ctx, cfg, s.ws)
}

var _ adapter.FileStreamer = (*Sandbox)(nil)
