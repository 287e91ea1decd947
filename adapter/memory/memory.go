// Package memory is the adapter with no host at all: the workspace is an in-memory file tree
// (memfs) and commands are interpreted by mvdan.cc/sh/v3/interp with built-in Go utilities
// (coreutils). No host file, process or socket is touched by a command or a file call.
//
// The tree has /workspace (the workspace, also HOME and the default working directory), /tmp,
// /dev/null, /dev/zero and /dev/std{in,out,err}; nothing of the host is visible. Symlinks resolve
// inside the tree; file calls are jailed to /workspace as the other adapters' are.
//
// Every ExecuteCommand runs under execution limits (Config): commands, loop iterations, variable
// bytes, tree bytes and a time limit. A spent limit ends the call with errs.LimitExceeded (or
// errs.ProcessTimeout for time), never a hang or unbounded memory.
package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/procs"
	"github.com/sandboxer/sandboxer/adapter/memory/memfs"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
)

// Workspace is where the workspace lives in the tree.
const Workspace = adapter.DefaultWorkspace

// Defaults for the zero Config.
const (
	DefaultMaxCommands       = 100_000
	DefaultMaxLoopIterations = 100_000
	DefaultMaxTreeBytes      = 256 << 20
	DefaultMaxStringBytes    = 16 << 20
	DefaultTimeout           = 60 * time.Second
)

// DefaultPath is the PATH commands see.
const DefaultPath = "/usr/bin:/bin"

// Config configures a memory sandbox. The zero value is valid and means the defaults above:
// 100000 commands and 100000 loop iterations per call, 16 MiB of shell variables, a 256 MiB tree,
// adapter.DefaultMaxOutputBytes per stream and a 60 s time limit when neither the context nor
// the Command sets one.
type Config struct {
	// ID names the sandbox (adapter.Identified); empty means a random one.
	ID string `mapstructure:"id"`
	// MaxCommands bounds the simple commands (builtins, utilities, function calls) one
	// ExecuteCommand may run.
	MaxCommands int `mapstructure:"max_commands"`
	// MaxLoopIterations bounds the iterations of all while/until/for loops of one call together.
	MaxLoopIterations int `mapstructure:"max_loop_iterations"`
	// MaxOutputBytes is the per-stream capture budget when Command.MaxOutputBytes is 0.
	MaxOutputBytes int `mapstructure:"max_output_bytes"`
	// MaxTreeBytes bounds the bytes of all files (and symlink targets) in the tree.
	MaxTreeBytes int64 `mapstructure:"max_tree_bytes"`
	// MaxStringBytes bounds the bytes held by shell variables of one call (checked at every loop
	// iteration and every 64 commands).
	MaxStringBytes int64 `mapstructure:"max_string_bytes"`
	// Timeout ends a call when neither the context nor Command.Timeout bounds it.
	Timeout time.Duration `mapstructure:"timeout"`
	// Env is added to every command's environment ("KEY=VALUE"), before Command.Env.
	Env []string `mapstructure:"env"`
	// MaxProcesses bounds the background processes (Start) running at once; 0 means
	// adapter.DefaultMaxProcesses.
	MaxProcesses int `mapstructure:"max_processes"`
}

// Validate reports a configuration that cannot work (negative limits, malformed Env).
func (c Config) Validate() error {
	if c.MaxCommands < 0 || c.MaxLoopIterations < 0 || c.MaxOutputBytes < 0 || c.MaxTreeBytes < 0 ||
		c.MaxStringBytes < 0 || c.Timeout < 0 || c.MaxProcesses < 0 {
		return errs.New(errs.InvalidInput, "memory", "", "limits must not be negative")
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return errs.New(errs.InvalidInput, "memory", "", "env entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxCommands == 0 {
		c.MaxCommands = DefaultMaxCommands
	}
	if c.MaxLoopIterations == 0 {
		c.MaxLoopIterations = DefaultMaxLoopIterations
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = adapter.DefaultMaxOutputBytes
	}
	if c.MaxTreeBytes == 0 {
		c.MaxTreeBytes = DefaultMaxTreeBytes
	}
	if c.MaxStringBytes == 0 {
		c.MaxStringBytes = DefaultMaxStringBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Sandbox is an in-memory sandbox. It is safe for concurrent use.
type Sandbox struct {
	cfg     Config
	id      string
	fs      *memfs.FS
	baseEnv []string
	envList expand.Environ // baseEnv as an Environ, for calls without Command.Env

	procs *procs.Table // background processes (Start)

	mu      sync.RWMutex
	stopped bool
	running map[*call]struct{} // calls in flight, ended by Stop
}

var (
	_ adapter.Sandbox    = (*Sandbox)(nil)
	_ adapter.Capable    = (*Sandbox)(nil)
	_ adapter.Identified = (*Sandbox)(nil)
	_ adapter.Lister     = (*Sandbox)(nil)
	_ adapter.Statter    = (*Sandbox)(nil)
	_ adapter.Remover    = (*Sandbox)(nil)
	_ adapter.BulkReader = (*Sandbox)(nil)
	_ adapter.BulkWriter = (*Sandbox)(nil)
	_ adapter.Forker     = (*Sandbox)(nil)
	_ fs.StatFS          = (*Sandbox)(nil)
	_ fs.ReadDirFS       = (*Sandbox)(nil)
	_ fs.ReadLinkFS      = (*Sandbox)(nil)
)

// New returns a sandbox with an empty workspace. Errors: errs.InvalidInput for a bad Config.
func New(cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := memfs.New(cfg.MaxTreeBytes)
	for _, d := range []string{Workspace, "/tmp", "/dev", "/usr/bin", "/bin", "/etc", procSubstDir} {
		if err := t.MkdirAll(d, 0o755); err != nil {
			return nil, errs.Wrap(errs.Internal, "memory", d, err)
		}
	}
	_ = t.Chmod("/tmp", fs.ModeSticky|0o777)
	_ = t.Mknod("/dev/null", func() memfs.Device { return eofDevice{} })
	_ = t.Mknod("/dev/zero", func() memfs.Device { return zeroDevice{} })
	_ = t.Mknod("/dev/urandom", func() memfs.Device { return randDevice{} })
	_ = t.Mknod("/dev/random", func() memfs.Device { return randDevice{} })
	return newSandbox(cfg, t), nil
}

func newSandbox(cfg Config, t *memfs.FS) *Sandbox {
	id := cfg.ID
	if id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = "mem-" + hex.EncodeToString(b[:])
	}
	base := []string{"PATH=" + DefaultPath, "HOME=" + Workspace, "LANG=C.UTF-8", "TZ=UTC",
		"USER=sandbox", "LOGNAME=sandbox", "SHELL=/bin/sh", "TMPDIR=/tmp"}
	base = append(base, cfg.Env...)
	return &Sandbox{cfg: cfg, id: id, fs: t, baseEnv: base, envList: shellEnv(base), procs: procs.NewTable(cfg.MaxProcesses)}
}

// identity are the shell's own variables: the user ids, set and read-only but not exported, as
// in bash, so that the interpreter does not fill them from the host process; and BASH_VERSION,
// the bash release whose behaviour the interpreter follows (scripts test it to know they run in
// bash).
var identity = map[string]expand.Variable{
	"UID":          {Set: true, ReadOnly: true, Kind: expand.String, Str: "1000"},
	"EUID":         {Set: true, ReadOnly: true, Kind: expand.String, Str: "1000"},
	"GID":          {Set: true, ReadOnly: true, Kind: expand.String, Str: "1000"},
	"BASH_VERSION": {Set: true, Kind: expand.String, Str: "5.2.15(1)-release"},
}

type sandboxEnviron struct{ expand.Environ }

func (e sandboxEnviron) Get(name string) expand.Variable {
	if v, ok := identity[name]; ok {
		return v
	}
	return e.Environ.Get(name)
}

func (e sandboxEnviron) Each(fn func(name string, vr expand.Variable) bool) {
	for name, v := range identity {
		if !fn(name, v) {
			return
		}
	}
	e.Environ.Each(fn)
}

// shellEnv is the environment a shell of this sandbox starts with.
func shellEnv(pairs []string) expand.Environ {
	return sandboxEnviron{expand.ListEnviron(pairs...)}
}

type eofDevice struct{}

func (eofDevice) Read([]byte) (int, error) { return 0, io.EOF }

type zeroDevice struct{}

func (zeroDevice) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type randDevice struct{}

func (randDevice) Read(p []byte) (int, error) { return rand.Read(p) }

// ID returns the sandbox's id.
func (s *Sandbox) ID() string { return s.id }

// Capabilities: a virtual file system and network, interpreted commands, symlinks, and signals in
// the one form the interpreter can honour: a script can kill its own shell ($$), which then
// reports 128+signo.
func (s *Sandbox) Capabilities() adapter.Capabilities {
	return adapter.Capabilities{
		Adapter:     "memory",
		FSIsolation: adapter.FSVirtual,
		Network:     adapter.NetVirtual,
		Exec:        adapter.ExecInterpreted,
		Signals:     true,
		Symlinks:    true,
		Workspace:   Workspace,
		Processes:   true,
	}
}

// Config returns the configuration with defaults filled in.
func (s *Sandbox) Config() Config { return s.cfg }

// Tree returns the sandbox's file tree (the whole namespace commands see, not only the workspace).
func (s *Sandbox) Tree() *memfs.FS { return s.fs }

// FS returns the workspace as an io/fs file system (symlinks leaving it read as missing).
func (s *Sandbox) FS() fs.FS { return s.fs.Sub(Workspace) }

// Open implements fs.FS over the workspace (with fs.StatFS, fs.ReadDirFS and fs.ReadLinkFS below);
// names are fs.ValidPath names relative to the workspace, and a symlink that leads out of it reads
// as fs.ErrNotExist.
func (s *Sandbox) Open(name string) (fs.File, error) { return s.fs.Sub(Workspace).Open(name) }

// Stat implements fs.StatFS over the workspace.
func (s *Sandbox) Stat(name string) (fs.FileInfo, error) { return s.fs.Sub(Workspace).Stat(name) }

// Lstat implements fs.ReadLinkFS over the workspace.
func (s *Sandbox) Lstat(name string) (fs.FileInfo, error) { return s.fs.Sub(Workspace).Lstat(name) }

// ReadLink implements fs.ReadLinkFS over the workspace.
func (s *Sandbox) ReadLink(name string) (string, error) { return s.fs.Sub(Workspace).ReadLink(name) }

// ReadDir implements fs.ReadDirFS over the workspace.
func (s *Sandbox) ReadDir(name string) ([]fs.DirEntry, error) {
	return s.fs.Sub(Workspace).ReadDir(name)
}

func (s *Sandbox) checkOpen(op string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.stopped {
		return errs.New(errs.SandboxUnavailable, op, "", "sandbox %s is stopped", s.id)
	}
	return nil
}

// Stop ends the commands in flight (background processes too, which it waits for, bounded by
// ctx) and refuses every later call. It is idempotent.
func (s *Sandbox) Stop(ctx context.Context) error {
	bg := s.procs.Close()
	s.mu.Lock()
	s.stopped = true
	for c := range s.running {
		c.stop()
	}
	s.mu.Unlock()
	return procs.WaitAll(ctx, bg)
}

// track registers a call so that Stop can end it; false when the sandbox is stopped.
func (s *Sandbox) track(c *call) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	if s.running == nil {
		s.running = map[*call]struct{}{}
	}
	s.running[c] = struct{}{}
	return true
}

func (s *Sandbox) untrack(c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, c)
}

// abs validates a caller's path and returns it absolute in the tree (lexically inside the
// workspace; symlinks are checked by the jailed memfs calls).
func (s *Sandbox) abs(op, p string) (string, error) {
	rel, err := adapter.Rel(op, Workspace, p)
	if err != nil {
		return "", err
	}
	return path.Join(Workspace, rel), nil
}

// fsErr maps a memfs error to a sandboxer error code.
func fsErr(op, p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, memfs.ErrEscape):
		return errs.Wrap(errs.PathEscape, op, p, err)
	case errors.Is(err, memfs.ErrNoSpace):
		return errs.Wrap(errs.LimitExceeded, op, p, err)
	case errors.Is(err, fs.ErrNotExist):
		return errs.Wrap(errs.NotFound, op, p, err)
	case errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrExist),
		errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.ELOOP):
		return errs.Wrap(errs.InvalidInput, op, p, err)
	}
	return errs.Wrap(errs.Internal, op, p, err)
}

// ReadFile returns a regular file's content. Errors: errs.PathInvalid, errs.PathEscape (also
// through a symlink), errs.NotFound (missing or not a regular file), errs.SandboxUnavailable.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := s.checkOpen("read"); err != nil {
		return nil, err
	}
	a, err := s.abs("read", p)
	if err != nil {
		return nil, err
	}
	info, resolved, err := s.fs.StatJailed(a, Workspace, true)
	if err != nil {
		return nil, fsErr("read", p, err)
	}
	if !info.Mode().IsRegular() {
		return nil, errs.New(errs.NotFound, "read", p, "not a regular file")
	}
	if limit := adapter.ReadLimit(ctx); info.Size() > limit {
		return nil, adapter.FileTooLarge("read", p, info.Size(), limit)
	}
	data, err := s.fs.ReadFile(resolved)
	return data, fsErr("read", p, err)
}

// WriteFile replaces or creates a file atomically, creating parent directories. Errors as
// ReadFile; errs.LimitExceeded when the tree would exceed Config.MaxTreeBytes; a directory in the
// way is errs.InvalidInput.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := s.checkOpen("write"); err != nil {
		return err
	}
	a, err := s.abs("write", p)
	if err != nil {
		return err
	}
	return fsErr("write", p, s.fs.WriteFileJailed(a, Workspace, data, 0o644))
}

// WriteFiles writes each file as WriteFile does, stopping at the first error.
func (s *Sandbox) WriteFiles(ctx context.Context, files []adapter.File) error {
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.WriteFile(ctx, f.Path, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// ReadFiles calls fn for each path; a missing path is errs.NotFound and stops the call.
func (s *Sandbox) ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte) error) error {
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := s.ReadFile(ctx, p)
		if err != nil {
			return err
		}
		if err := fn(p, data); err != nil {
			return err
		}
	}
	return nil
}

// StatFile describes one entry without following a final symlink. Errors: errs.PathInvalid,
// errs.PathEscape, errs.NotFound, errs.SandboxUnavailable.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	if err := s.checkOpen("stat"); err != nil {
		return adapter.FileInfo{}, err
	}
	a, err := s.abs("stat", p)
	if err != nil {
		return adapter.FileInfo{}, err
	}
	info, resolved, err := s.fs.StatJailed(a, Workspace, false)
	if err != nil {
		return adapter.FileInfo{}, fsErr("stat", p, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		// The link is described, but one that leads out of the workspace is refused like any
		// other path through it.
		if _, err := s.fs.Resolve(a, Workspace, true); errors.Is(err, memfs.ErrEscape) {
			return adapter.FileInfo{}, fsErr("stat", p, err)
		}
	}
	fi := fileInfo(resolved, info)
	if fi.IsLink() {
		if fi.Link, err = s.fs.Readlink(resolved); err != nil {
			return adapter.FileInfo{}, fsErr("stat", p, err)
		}
	}
	return fi, nil
}

func fileInfo(abs string, info fs.FileInfo) adapter.FileInfo {
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, Workspace), "/")
	if rel == "" {
		rel = "."
	}
	return adapter.FileInfo{Path: rel, Size: info.Size(), Mode: info.Mode(), ModTime: info.ModTime(), Inode: memfs.Inode(info)}
}

// RemoveFile deletes one file, symlink or empty directory. Errors as StatFile; a non-empty
// directory is errs.InvalidInput.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error {
	if err := s.checkOpen("remove"); err != nil {
		return err
	}
	a, err := s.abs("remove", p)
	if err != nil {
		return err
	}
	if a == Workspace {
		return errs.New(errs.InvalidInput, "remove", p, "cannot remove the workspace root")
	}
	return fsErr("remove", p, s.fs.RemoveJailed(a, Workspace))
}

// ListFiles returns every regular file and symlink under dir (symlinks are not followed), with
// the inode number and modification time FileSync's stat cache keys on. The list is one
// consistent snapshot. Errors as StatFile.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	if err := s.checkOpen("list"); err != nil {
		return nil, err
	}
	if dir == "" {
		dir = "."
	}
	a, err := s.abs("list", dir)
	if err != nil {
		return nil, err
	}
	resolved, err := s.fs.Resolve(a, Workspace, true)
	if err != nil {
		return nil, fsErr("list", dir, err)
	}
	entries, err := s.fs.Walk(resolved)
	if err != nil {
		return nil, fsErr("list", dir, err)
	}
	out := make([]adapter.FileInfo, 0, len(entries))
	for _, e := range entries {
		switch {
		case e.Info.Mode().IsRegular():
			out = append(out, fileInfo(e.Path, e.Info))
		case e.Info.Mode()&fs.ModeSymlink != 0:
			fi := fileInfo(e.Path, e.Info)
			if fi.Link, err = s.fs.Readlink(e.Path); err != nil {
				continue // removed since the walk
			}
			out = append(out, fi)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Fork returns a new sandbox whose tree is a copy-on-write clone of this one's at this moment:
// file contents are shared until either side writes. The source is never changed. Errors:
// errs.SandboxUnavailable when s is stopped.
func (s *Sandbox) Fork(ctx context.Context) (adapter.Sandbox, error) {
	if err := s.checkOpen("fork"); err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.ID = ""
	return newSandbox(cfg, s.fs.Clone()), nil
}
