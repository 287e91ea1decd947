package kubernetes

import (
	"cmp"
	"context"
	"io"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/shellfs"
)

var _ interface {
	adapter.Lister
	adapter.Statter
	adapter.Remover
	adapter.BulkReader
	adapter.BulkWriter
	adapter.ModeWriter
} = (*Sandbox)(nil)

// fs is the sandbox's file operations, run through the agent as `agent -fs` (agent.ServeFS:
// package shellfs's contract, in Go, so the image needs no shell tools for them).
func (s *Sandbox) fs() shellfs.FS {
	return shellfs.FS{Env: baseEnv, Agent: cmp.Or(s.agentBin, agent.Path), Run: func(ctx context.Context, op string, e shellfs.Exec) (int, error) {
		return s.run(ctx, op, rawExec{args: e.Args, env: e.Env, stdin: e.Stdin, stdout: e.Stdout, stderr: e.Stderr})
	}}
}

// ReadFile returns a regular file's content; symlinks are resolved inside /workspace only.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return s.fs().ReadFile(ctx, p)
}

// WriteFile writes a file atomically, creating its parents.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	return s.fs().WriteFile(ctx, p, data)
}

// StatFile describes one entry.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	return s.fs().StatFile(ctx, p)
}

// RemoveFile removes a file or an empty directory.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error { return s.fs().RemoveFile(ctx, p) }

// ListFiles lists the tree under dir.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	return s.fs().ListFiles(ctx, dir)
}

// ReadFiles reads many files in one stream.
func (s *Sandbox) ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte) error) error {
	return s.fs().ReadFiles(ctx, paths, fn)
}

// WriteFiles writes many files in one stream.
func (s *Sandbox) WriteFiles(ctx context.Context, files []adapter.File) error {
	return s.fs().WriteFiles(ctx, files)
}

// Symlink creates a symbolic link in the workspace.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	return s.fs().Symlink(ctx, p, target)
}

// SetExecutable sets or clears a file's executable bits.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	return s.fs().SetExecutable(ctx, p, exec)
}

// copyWorkspace copies src's workspace into dst's (for Fork).
func copyWorkspace(ctx context.Context, src, dst *Sandbox) error {
	return shellfs.CopyWorkspace(ctx, src.fs(), dst.fs())
}

// OpenFile opens a regular file as a stream of any size (adapter.FileStreamer).
func (s *Sandbox) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	return s.fs().OpenFile(ctx, p)
}

// WriteFileFrom writes a stream as WriteFile writes data, framed so that a stream cut short is
// never committed (adapter.FileStreamer).
func (s *Sandbox) WriteFileFrom(ctx context.Context, p string, r io.Reader) (int64, error) {
	return s.fs().WriteFileFrom(ctx, p, r)
}

var _ adapter.FileStreamer = (*Sandbox)(nil)
