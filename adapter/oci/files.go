package oci

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/adapter/internal/hostfs"
)

// File calls run on the host, through an os.Root opened on the workspace directory (package
// hostfs, shared with docker's host-side workspaces): no process in the container, no round
// trip. Files and directories the calls create belong to the sandbox user's host uid.

func (s *Sandbox) checkOpen(op string) error {
	if s.isStopped() {
		return s.errStopped(op)
	}
	return nil
}

// files is the sandbox's file calls.
func (s *Sandbox) files() hostfs.FS {
	return hostfs.FS{Root: s.ws, UID: s.rec.HostUID, GID: s.rec.HostUID, Check: s.checkOpen}
}

// ReadFile reads a regular file of the workspace.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return s.files().ReadFile(ctx, p)
}

// OpenFile opens a regular file of the workspace for reading (adapter.FileStreamer).
func (s *Sandbox) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	return s.files().OpenFile(ctx, p)
}

// WriteFile writes data atomically: a temporary file next to the target, then rename. Parent
// directories are created; a symlink is written through when it stays inside.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	return s.files().WriteFile(ctx, p, data)
}

// WriteFileFrom writes what src yields as WriteFile writes data (adapter.FileStreamer).
func (s *Sandbox) WriteFileFrom(ctx context.Context, p string, src io.Reader) (int64, error) {
	return s.files().WriteFileFrom(ctx, p, src)
}

// StatFile reports one entry without following a final symlink.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	return s.files().StatFile(ctx, p)
}

// RemoveFile deletes one file, symlink (not its target) or empty directory.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error {
	return s.files().RemoveFile(ctx, p)
}

// ListFiles walks dir with directory file descriptors; temporary files of writes are left out.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	return s.files().ListFiles(ctx, dir)
}

// Symlink implements adapter.ModeWriter on the host.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	return s.files().Symlink(ctx, p, target)
}

// SetExecutable implements adapter.ModeWriter on the host.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	return s.files().SetExecutable(ctx, p, exec)
}

var (
	_ adapter.ModeWriter   = (*Sandbox)(nil)
	_ adapter.FileStreamer = (*Sandbox)(nil)
)

// prepareWorkspace makes the workspace directory (or takes the given one) and the commands' HOME,
// both owned by the sandbox user and on the capped file system where there is one (capWorkspace),
// fills the workspace from copyFrom (a workspace being forked, by adapter.CopyTree; HOME starts
// empty, as the local adapter's) when set, and opens the root on it.
func (s *Sandbox) prepareWorkspace(ctx context.Context, src origin) error {
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
	if src.workspace != nil {
		if s.forkSkipped, err = adapter.CopyTree(ctx, "fork", src.workspace, root, s.cfg.forkMaxFileBytes()); err != nil {
			return err
		}
	}
	if src.home != nil {
		if err := copyInto(ctx, src.home, s.rec.Home, s.cfg.forkMaxFileBytes()); err != nil {
			return err
		}
		if err := chownTree(s.rec.Home, uid); err != nil {
			return err
		}
	}
	if src.workspace != nil || !s.rec.OwnWorkspace {
		return chownTree(ws, uid)
	}
	return nil
}

// copyInto copies the tree of src into the directory dst (adapter.CopyTree).
func copyInto(ctx context.Context, src *os.Root, dst string, maxFileBytes int64) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	_, err = adapter.CopyTree(ctx, "restore", src, root, maxFileBytes)
	return err
}

// chownTree makes everything under dir the sandbox user's. The container is not running yet, so
// nothing moves under the walk.
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
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
	return create(ctx, cfg, origin{workspace: s.ws})
}
