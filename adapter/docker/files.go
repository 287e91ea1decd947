package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/hostfs"
	"github.com/sandboxer/sandboxer/adapter/internal/shellfs"
	"github.com/sandboxer/sandboxer/errs"
)

// File calls take one of two roads. When the workspace is a directory of this host (the capped
// disk, with a daemon on this host: the default where the host allows it), they run here, on that
// directory, through package hostfs (as oci's do): no exec, no round trip, streams at disk speed.
// Otherwise each is one exec in the container: the agent's own (agent -fs) where the container
// has the agent, else shellfs's scripts.

// files is the sandbox's file operations run in the container over s.run with baseEnv.
func (s *Sandbox) files() shellfs.FS {
	f := shellfs.FS{
		Run: func(ctx context.Context, op string, e shellfs.Exec) (int, error) {
			return s.run(ctx, op, rawExec{args: e.Args, env: e.Env, stdin: e.Stdin, stdout: e.Stdout, stderr: e.Stderr})
		},
		Env: baseEnv,
	}
	if s.hasAgent() {
		f.Agent = s.agentPath()
	}
	return f
}

// hostFiles returns the host-side file calls and a function that releases them, when the
// workspace is a directory of this host that can be opened now and the container runs (one
// inspect of the daemon: a sandbox whose container died answers SANDBOX_UNAVAILABLE, as its
// commands do, not with its last files); ok is false otherwise, and the calls then go into the
// container, which reports why they cannot run.
func (s *Sandbox) hostFiles(ctx context.Context) (h hostfs.FS, release func(), ok bool) {
	if s.disk.dir == "" || s.isStopped() || !s.running(ctx) {
		return h, nil, false
	}
	uid, gid, numeric := numericUser(s.cfg.user())
	if !numeric {
		return h, nil, false
	}
	root, err := os.OpenRoot(s.disk.workspace())
	if err != nil {
		return h, nil, false
	}
	return hostfs.FS{Root: root, UID: uid, GID: gid, Check: s.checkOpen}, func() { root.Close() }, true
}

func (s *Sandbox) checkOpen(op string) error {
	if s.isStopped() {
		return s.errStopped(op)
	}
	return nil
}

// either runs onHost on the host-side file calls when there are, else inContainer.
func either[T any](ctx context.Context, s *Sandbox, onHost func(hostfs.FS) (T, error), inContainer func(shellfs.FS) (T, error)) (T, error) {
	if h, release, ok := s.hostFiles(ctx); ok {
		defer release()
		return onHost(h)
	}
	return inContainer(s.files())
}

// either0 is either for calls that return only an error.
func either0(ctx context.Context, s *Sandbox, onHost func(hostfs.FS) error, inContainer func(shellfs.FS) error) error {
	_, err := either(ctx, s, func(h hostfs.FS) (struct{}, error) { return struct{}{}, onHost(h) },
		func(f shellfs.FS) (struct{}, error) { return struct{}{}, inContainer(f) })
	return err
}

// ReadFile returns a regular file's content.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return either(ctx, s, func(h hostfs.FS) ([]byte, error) { return h.ReadFile(ctx, p) },
		func(f shellfs.FS) ([]byte, error) { return f.ReadFile(ctx, p) })
}

// WriteFile writes data through a temporary file renamed over the target, creating parent
// directories.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	return either0(ctx, s, func(h hostfs.FS) error { return h.WriteFile(ctx, p, data) },
		func(f shellfs.FS) error { return f.WriteFile(ctx, p, data) })
}

// StatFile reports one entry without following a final symlink.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	return either(ctx, s, func(h hostfs.FS) (adapter.FileInfo, error) { return h.StatFile(ctx, p) },
		func(f shellfs.FS) (adapter.FileInfo, error) { return f.StatFile(ctx, p) })
}

// RemoveFile deletes a file, a symlink or an empty directory.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error {
	return either0(ctx, s, func(h hostfs.FS) error { return h.RemoveFile(ctx, p) },
		func(f shellfs.FS) error { return f.RemoveFile(ctx, p) })
}

// ListFiles walks dir and returns its regular files and symbolic links (with their target text).
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	return either(ctx, s, func(h hostfs.FS) ([]adapter.FileInfo, error) { return h.ListFiles(ctx, dir) },
		func(f shellfs.FS) ([]adapter.FileInfo, error) { return f.ListFiles(ctx, dir) })
}

// ListDirs lists the workspace's directories on the host (adapter.DirLister), which works while
// the sandbox is paused; errors.ErrUnsupported when the workspace is not a directory of this
// host (the caller runs a find in the container instead).
func (s *Sandbox) ListDirs(ctx context.Context, dir string) ([]string, error) {
	return either(ctx, s, func(h hostfs.FS) ([]string, error) { return h.ListDirs(ctx, dir) },
		func(shellfs.FS) ([]string, error) {
			return nil, errs.Wrap(errs.SandboxUnavailable, "list", dir, fmt.Errorf("the workspace is not on this host: %w", errors.ErrUnsupported))
		})
}

// ReadFiles reads many files: on the host one by one, in the container with one exec per batch
// of paths, streamed as one tar (a file over adapter.ReadLimit(ctx) stops the exec before its
// content is held).
func (s *Sandbox) ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte) error) error {
	return either0(ctx, s, func(h hostfs.FS) error {
		for _, p := range paths {
			data, err := h.ReadFile(ctx, p)
			if err == nil {
				err = fn(p, data)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}, func(f shellfs.FS) error { return f.ReadFiles(ctx, paths, fn) })
}

// WriteFiles writes many files, each atomically: on the host one by one, in the container with
// one exec per batch (a tar on stdin, each file renamed into place after every path passed the
// jail).
func (s *Sandbox) WriteFiles(ctx context.Context, files []adapter.File) error {
	return either0(ctx, s, func(h hostfs.FS) error {
		for _, file := range files {
			if err := h.WriteFile(ctx, file.Path, file.Data); err != nil {
				return err
			}
		}
		return nil
	}, func(f shellfs.FS) error { return f.WriteFiles(ctx, files) })
}

// Symlink implements adapter.ModeWriter.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	return either0(ctx, s, func(h hostfs.FS) error { return h.Symlink(ctx, p, target) },
		func(f shellfs.FS) error { return f.Symlink(ctx, p, target) })
}

// SetExecutable implements adapter.ModeWriter.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	return either0(ctx, s, func(h hostfs.FS) error { return h.SetExecutable(ctx, p, exec) },
		func(f shellfs.FS) error { return f.SetExecutable(ctx, p, exec) })
}

// OpenFile opens a regular file as a stream (adapter.FileStreamer): on the host, or through the
// agent, of any size; without either (NoAgent on a workspace elsewhere), read whole within
// adapter.ReadLimit(ctx).
func (s *Sandbox) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	if h, release, ok := s.hostFiles(ctx); ok {
		defer release() // the open file outlives the root it was opened through
		return h.OpenFile(ctx, p)
	}
	return s.files().OpenFile(ctx, p)
}

// WriteFileFrom writes a stream as WriteFile writes data (adapter.FileStreamer): on the host, or
// through the agent, framed, so a stream cut short is never committed; without either, read
// whole first.
func (s *Sandbox) WriteFileFrom(ctx context.Context, p string, r io.Reader) (int64, error) {
	return either(ctx, s, func(h hostfs.FS) (int64, error) { return h.WriteFileFrom(ctx, p, r) },
		func(f shellfs.FS) (int64, error) { return f.WriteFileFrom(ctx, p, r) })
}

var (
	_ adapter.ModeWriter   = (*Sandbox)(nil)
	_ adapter.FileStreamer = (*Sandbox)(nil)
	_ adapter.DirLister    = (*Sandbox)(nil)
)
