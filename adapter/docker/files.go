package docker

import (
	"context"
	"io"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/shellfs"
)

// files is the sandbox's file operations, run over s.run with baseEnv: the agent's own (agent
// -fs) where the container has the agent, else shellfs's scripts.
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

// ReadFile returns a regular file's content (one exec: resolve in the jail, then cat).
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return s.files().ReadFile(ctx, p)
}

// WriteFile writes data through a temporary file renamed over the target (one exec, data on
// stdin), creating parent directories.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	return s.files().WriteFile(ctx, p, data)
}

// StatFile reports one entry without following a final symlink.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	return s.files().StatFile(ctx, p)
}

// RemoveFile deletes a file, a symlink or an empty directory.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error {
	return s.files().RemoveFile(ctx, p)
}

// ListFiles walks dir in one exec (find plus batched stat) and returns its regular files and
// symbolic links (with their target text).
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	return s.files().ListFiles(ctx, dir)
}

// ReadFiles reads many files with one exec per batch of paths, streamed as one tar: a file over
// adapter.ReadLimit(ctx) stops the exec (errs.FileTooLarge) before its content is held.
func (s *Sandbox) ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte) error) error {
	return s.files().ReadFiles(ctx, paths, fn)
}

// WriteFiles writes many files with one exec per batch (a tar on stdin, each file renamed into
// place after every path passed the jail).
func (s *Sandbox) WriteFiles(ctx context.Context, files []adapter.File) error {
	return s.files().WriteFiles(ctx, files)
}

// Symlink implements adapter.ModeWriter with one exec in the container.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	return s.files().Symlink(ctx, p, target)
}

// SetExecutable implements adapter.ModeWriter with one exec in the container.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	return s.files().SetExecutable(ctx, p, exec)
}

var _ adapter.ModeWriter = (*Sandbox)(nil)

// OpenFile opens a regular file as a stream (adapter.FileStreamer): through the agent, of any
// size; without it (NoAgent), read whole within adapter.ReadLimit(ctx).
func (s *Sandbox) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	return s.files().OpenFile(ctx, p)
}

// WriteFileFrom writes a stream as WriteFile writes data (adapter.FileStreamer): through the
// agent, framed, so a stream cut short is never committed; without it, read whole first.
func (s *Sandbox) WriteFileFrom(ctx context.Context, p string, r io.Reader) (int64, error) {
	return s.files().WriteFileFrom(ctx, p, r)
}

var _ adapter.FileStreamer = (*Sandbox)(nil)
