// Package adapter owns the Sandbox interface that every backend implements, the Command and Result
// types, capabilities as data, and the optional interfaces that FileSync and the CLI use.
//
// It holds only types and small helpers shared by every adapter (path normalisation, capped output
// buffers); the adapters live in adapter/local, adapter/docker and adapter/memory, and
// adapter/adaptertest is the conformance suite each of them runs.
package adapter

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// DefaultMaxOutputBytes bounds each output stream when Command.MaxOutputBytes is 0.
const DefaultMaxOutputBytes = 200000

// DefaultWorkspace is where the workspace is mounted in adapters that have their own file system
// namespace (docker, memory).
const DefaultWorkspace = "/workspace"

// DefaultHome is the HOME of commands in the container adapters (docker, oci, kubernetes): a
// directory of the sandbox's own outside the workspace (what toolchains keep there, Go's build
// cache, never lands in the project), writable by the sandbox user, on the same capped storage as
// the workspace where there is one, kept as long as the sandbox.
const DefaultHome = "/home/sandbox"

// Sandbox runs commands and moves files inside one isolated workspace.
//
// Paths are relative to the workspace root, or absolute inside it. Every method fails with
// errs.SandboxUnavailable once Stop has been called or when the backend cannot be reached.
type Sandbox interface {
	// ExecuteCommand runs cmd.Args (argv, never a joined string) and waits for it.
	//
	// A non-zero exit is data: it is in Result.ExitCode and the error is nil. A process killed by a
	// signal reports 128+signo. The error means the command could not run or did not finish:
	//   - errs.InvalidInput: empty Args or a negative limit;
	//   - errs.PathEscape / errs.PathInvalid / errs.NotFound: a bad Dir;
	//   - errs.ProcessFailed: the executable could not be started (not found, not executable);
	//   - errs.ProcessTimeout: cmd.Timeout or the context's deadline passed; the whole process tree
	//     was killed and the returned Result holds the partial output;
	//   - an error matching context.Canceled when ctx was cancelled (the tree is killed too);
	//   - errs.SandboxUnavailable: the sandbox is stopped or its backend is gone.
	// When the main process exits, whatever it left running in the background is killed, and a
	// descendant holding stdout or stderr open cannot stall the call.
	ExecuteCommand(ctx context.Context, cmd Command) (Result, error)

	// ReadFile returns the content of a regular file. Errors: errs.PathInvalid (empty path),
	// errs.PathEscape (outside the workspace, also through a symlink), errs.NotFound (missing or
	// not a regular file), errs.SandboxUnavailable.
	ReadFile(ctx context.Context, path string) ([]byte, error)

	// WriteFile creates or replaces a file atomically (a reader never sees a torn file), creating
	// parent directories as needed. Errors as ReadFile; a symlink that leads outside, dangling or
	// not, is errs.PathEscape and nothing is written.
	WriteFile(ctx context.Context, path string, data []byte) error

	// Stop releases everything the sandbox holds (processes, containers, temporary directories).
	// It is idempotent: a second call returns nil.
	Stop(ctx context.Context) error
}

// Command is one program to run. Only Args is required.
type Command struct {
	Args []string // argv; Args[0] is looked up on the sandbox's PATH unless it contains a slash
	Dir  string   // working directory, relative to the workspace (or absolute inside it); "" is the root
	// Env is added to the adapter's minimal environment (PATH, HOME, LANG, TZ) as "KEY=VALUE"
	// entries. The server's own environment is never passed on.
	Env []string
	// Stdin is the command's standard input; nil means none (reads see end of file).
	Stdin io.Reader
	// Timeout ends the command and its whole process tree; 0 means only the context bounds it.
	Timeout time.Duration
	// MaxOutputBytes is the capture budget of each stream; 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int
	// AllowNetwork lets the command reach the network where the adapter can cut it off per command.
	AllowNetwork bool
	// Stdout and Stderr, when set, receive a live copy of each stream as it is produced (for a
	// terminal); the captured Result is capped all the same.
	Stdout, Stderr io.Writer
}

// Limit returns the per-stream capture budget of c.
func (c Command) Limit() int {
	if c.MaxOutputBytes <= 0 {
		return DefaultMaxOutputBytes
	}
	return c.MaxOutputBytes
}

// Result is what a finished (or timed-out) command produced.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int // 128+signo for a process killed by a signal
	// StdoutTruncated and StderrTruncated say the stream went over its budget; the kept part is
	// the head, cut on a UTF-8 boundary, and the Dropped counts say how many bytes were left out.
	StdoutTruncated, StderrTruncated bool
	StdoutDropped, StderrDropped     int64
	Duration                         time.Duration
	// Isolation says what was enforced for this command, as opposed to merely inspected.
	Isolation Isolation
	// Limit names the resource limit that ended the command ("memory": the kernel's OOM killer
	// in the sandbox's memory limit), or is empty.
	Limit string
	// Receipt is what the command cost, as far as the adapter can count it (docs/receipts.md).
	Receipt Receipt
}

// Receipt is what one command cost and what it changed in the workspace. A field the adapter
// cannot count is missing (nil, or omitted in JSON), never a guessed zero; docs/receipts.md says
// per adapter which fields are exact, which estimated and which missing.
type Receipt struct {
	WallUs int64 `json:"wallUs"` // the command's wall time, microseconds
	// CPUUs is the user and system CPU time, microseconds, of the command and everything it started.
	CPUUs *int64 `json:"cpuUs,omitempty"`
	// PeakMemoryBytes is the highest memory use during the command (of its cgroup, or the
	// sandbox's where the command has none of its own).
	PeakMemoryBytes *int64 `json:"peakMemoryBytes,omitempty"`
	// Processes is how many processes the command started, itself included (memory: commands
	// run; see docs/receipts.md for what each adapter counts).
	Processes *int64 `json:"processes,omitempty"`
	// StdoutBytes and StderrBytes count everything the command wrote, bytes past the capture
	// budget (the Dropped counts) included.
	StdoutBytes int64 `json:"stdoutBytes"`
	StderrBytes int64 `json:"stderrBytes"`
	// DiskReadBytes and DiskWriteBytes are the block I/O of the command's cgroup (memory: bytes
	// its commands read from and wrote to files).
	DiskReadBytes  *int64 `json:"diskReadBytes,omitempty"`
	DiskWriteBytes *int64 `json:"diskWriteBytes,omitempty"`
	// NetSentBytes and NetReceivedBytes are what went through the sandbox's egress proxy during
	// the command (missing without a proxy).
	NetSentBytes     *int64 `json:"netSentBytes,omitempty"`
	NetReceivedBytes *int64 `json:"netReceivedBytes,omitempty"`
	// Paths are the workspace paths the call created, changed and deleted, filled by the tool
	// layer (a stat-based diff of the workspace around the call); nil when it was not taken.
	Paths *PathChanges `json:"paths,omitempty"`
}

// PathChanges lists workspace paths (relative, slash-separated, sorted) a call created, changed
// (size, modification time, mode or link target) and deleted.
type PathChanges struct {
	Created []string `json:"created,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
	// Skipped says why no diff was taken ("too many files": more than the tool layer's bound;
	// "unsupported": the sandbox cannot list its files; "error": the listing failed); the lists
	// are then empty.
	Skipped string `json:"skipped,omitempty"`
}

// Empty reports whether nothing was created, changed or deleted.
func (p PathChanges) Empty() bool {
	return len(p.Created) == 0 && len(p.Changed) == 0 && len(p.Deleted) == 0
}

// Int64 returns a pointer to v, for the optional fields of a Receipt.
func Int64(v int64) *int64 { return &v }

// Truncated reports whether either stream was cut.
func (r Result) Truncated() bool { return r.StdoutTruncated || r.StderrTruncated }

// Isolation lists the enforcement layers that were in force for one command.
type Isolation struct {
	Network     bool     `json:"network"`     // no route out: container network "none", network namespace, or no network at all
	Filesystem  bool     `json:"filesystem"`  // writes confined by the kernel or by construction, not only by the path jail of file calls
	ProcessTree bool     `json:"processTree"` // every descendant dies with the command, even one that left the process group
	Limits      bool     `json:"limits"`      // memory, process count (and CPU, where set) are bounded by the kernel
	Layers      []string `json:"layers,omitempty"`
}

// FSIsolation says how file access of commands is confined.
type FSIsolation string

const (
	FSNone    FSIsolation = "none"    // commands see the host file system; file calls are jailed by os.Root
	FSJail    FSIsolation = "jail"    // commands are confined to the workspace by the kernel (Landlock)
	FSImage   FSIsolation = "image"   // commands see a container's own root file system
	FSVirtual FSIsolation = "virtual" // there is no host file system at all (in-memory tree)
)

// NetworkIsolation says how the adapter can cut commands off the network.
type NetworkIsolation string

const (
	NetHost      NetworkIsolation = "host"      // cannot enforce: only command inspection applies
	NetNamespace NetworkIsolation = "namespace" // a network namespace per command
	NetContainer NetworkIsolation = "container" // the container's network mode
	NetVirtual   NetworkIsolation = "virtual"   // no network exists in the sandbox
)

// NetworkEnforcer is implemented by sandboxes that can say whether the kernel cuts a command
// without AllowNetwork off every network but the sandbox's own loopback (a network namespace of
// its own, a container in network mode none). Command inspection then lets network clients reach
// that loopback (a dev server a command started): the enforcement, not the inspection, keeps them in.
type NetworkEnforcer interface {
	EnforcesNetworkOff() bool
}

// ExecSupport says what runs a command.
type ExecSupport string

const (
	ExecHost        ExecSupport = "host"        // a host process
	ExecContainer   ExecSupport = "container"   // a process in a container
	ExecInterpreted ExecSupport = "interpreted" // a Go shell interpreter with built-in utilities
)

// Capabilities describe an adapter as data; the conformance suite and the CLI branch on them.
type Capabilities struct {
	Adapter     string           `json:"adapter"`
	FSIsolation FSIsolation      `json:"fsIsolation"`
	Network     NetworkIsolation `json:"network"`
	Exec        ExecSupport      `json:"exec"`
	// Signals: a process can be killed by a signal, and then reports 128+signo.
	Signals bool `json:"signals"`
	// Symlinks: commands can create symbolic links in the workspace.
	Symlinks bool `json:"symlinks"`
	// Workspace is the workspace root as commands see it (a host directory or "/workspace").
	Workspace string `json:"workspace"`
	// Ports: the sandbox has a loopback that adapter.PortForwarder and adapter.PortListener reach.
	Ports bool `json:"ports"`
	// Processes: adapter.Starter works (background processes).
	Processes bool `json:"processes"`
}

// Capable is implemented by every adapter of this module.
type Capable interface {
	Capabilities() Capabilities
}

// Workspaced is a sandbox that knows its Capabilities().Workspace without computing the rest of
// its capabilities (which the local adapter learns by probing the kernel): the tool layer asks it
// first, so a file call costs no probe.
type Workspaced interface {
	Workspace() string
}

// WorkspaceOf is sb's workspace: Workspace() where it has it, else Capabilities().Workspace, else "".
func WorkspaceOf(sb Sandbox) string {
	if w, ok := sb.(Workspaced); ok {
		return w.Workspace()
	}
	if cp, ok := sb.(Capable); ok {
		return cp.Capabilities().Workspace
	}
	return ""
}

// Warmer is a sandbox that can start ahead what its first command will need (the local adapter's
// isolation helper), so that a caller overlaps it with its own set-up (a one-shot CLI call opens
// its journal meanwhile). Warm returns at once; the first command waits for what it started.
type Warmer interface {
	Warm(allowNetwork bool)
}

// Identified is a sandbox that can be found again by its id (CLI --sandbox, persist).
type Identified interface {
	ID() string
}

// FileInfo describes one workspace entry.
type FileInfo struct {
	Path    string      // slash-separated, relative to the workspace root
	Size    int64       // bytes
	Mode    fs.FileMode // type bits and permissions
	ModTime time.Time
	Inode   uint64 // 0 where the adapter has no inodes
	// Link is a symbolic link's target text, as stored (not resolved); "" for anything else.
	Link string
}

// IsLink reports whether the entry is a symbolic link.
func (f FileInfo) IsLink() bool { return f.Mode&fs.ModeSymlink != 0 }

// Executable reports whether a regular file has its owner's executable bit (git's model: the
// file is 0755, else 0644).
func (f FileInfo) Executable() bool { return f.Mode.IsRegular() && f.Mode&0o100 != 0 }

// Lister walks the workspace.
type Lister interface {
	// ListFiles returns every regular file and every symbolic link under dir ("" or "." for the
	// whole workspace), with paths relative to the workspace root. Symbolic links are never
	// followed: each is listed with fs.ModeSymlink in Mode and its target text in Link, wherever
	// it points. Directories, devices, FIFOs and sockets are not listed. Mode carries the
	// permission bits (the executable bit: FileInfo.Executable).
	// A walk that cannot complete returns an error and no partial list: callers such as FileSync
	// must never mistake an unreadable directory for deleted files.
	ListFiles(ctx context.Context, dir string) ([]FileInfo, error)
}

// DirLister lists directories without running anything in the sandbox: on the host, where the
// adapter keeps the workspace there (local, oci, docker on its capped disk). A snapshot finds
// empty directories with it, so a paused sandbox, whose processes cannot run a find, can be
// snapshotted.
type DirLister interface {
	// ListDirs returns every directory under dir ("" or "." for the whole workspace; dir
	// itself is not listed), with paths relative to the workspace root, never following a
	// symbolic link. errors.ErrUnsupported when the workspace is not on the host now (the
	// caller then runs a command instead); otherwise errors as ListFiles's.
	ListDirs(ctx context.Context, dir string) ([]string, error)
}

// Statter reports one entry without following a final symlink.
type Statter interface {
	// StatFile reports the kind and permission bits in Mode and, for a symbolic link, its
	// target text in Link. Errors: errs.PathInvalid, errs.PathEscape (also a final symlink
	// that leads outside the workspace), errs.NotFound, errs.SandboxUnavailable.
	StatFile(ctx context.Context, path string) (FileInfo, error)
}

// Remover deletes files.
type Remover interface {
	// RemoveFile deletes one file or empty directory. A missing file is errs.NotFound; other
	// errors as ReadFile.
	RemoveFile(ctx context.Context, path string) error
}

// File is a path and its content, for bulk transfers.
type File struct {
	Path string
	Data []byte
}

// BulkReader reads many files in one round trip (one archive stream, one walk), for adapters where a
// call per file is expensive.
type BulkReader interface {
	// ReadFiles calls fn for each of paths in an unspecified order; data is valid only during the
	// call (copy it to keep it). A missing path is errs.NotFound
	// and stops the call; an error from fn stops it and is returned.
	ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte) error) error
}

// TreeReader walks the workspace and reads the files it finds in the same pass, for callers
// that read every file anyway (FileSync's full flush): no separate listing, and the work spread
// over several goroutines.
type TreeReader interface {
	// ReadTree walks dir ("" or "." for the whole workspace) as Lister.ListFiles does (files
	// that vanish during the walk are skipped) and calls fn with each file's stat and content.
	// A symbolic link is passed with its FileInfo (Link set) and nil data, never followed; a
	// regular file larger than ReadLimit(ctx) is passed with nil data, unread. Files for which
	// want(path) is false are not read and fn is not called for them (want nil: every file). want and fn may
	// be called from up to workers goroutines at once (workers < 1 means 1); data is valid only
	// during the call. Errors: a walk or read that cannot complete returns an error (errs.* as
	// ListFiles and ReadFile, or a context error), and the caller must then treat the files fn
	// saw as an incomplete list; an error from fn stops the walk and is returned.
	ReadTree(ctx context.Context, dir string, workers int, want func(path string) bool, fn func(info FileInfo, data []byte) error) error
}

// ModeWriter makes what FileSync keeps besides content: symbolic links and the executable bit.
type ModeWriter interface {
	// Symlink makes path a symbolic link whose target text is target, replacing a file or a
	// link there (atomically where the backend can), and creating parent directories as needed.
	// The parent is resolved as WriteFile resolves it (a parent leading outside is
	// errs.PathEscape); target is stored as given, not resolved: the caller decides whether it
	// may be made. Errors: errs.InvalidInput (empty target or NUL), errs.PathInvalid,
	// errs.PathEscape, errs.SandboxUnavailable; a directory at path is errs.InvalidInput.
	Symlink(ctx context.Context, path, target string) error
	// SetExecutable makes the regular file at path 0755 (exec) or 0644, not following a final
	// symlink. Errors as StatFile; anything but a regular file is errs.NotFound.
	SetExecutable(ctx context.Context, path string, exec bool) error
}

// BulkWriter writes many files in one round trip. Each file is written atomically; the set as a
// whole is not.
type BulkWriter interface {
	WriteFiles(ctx context.Context, files []File) error
}

// Forker can start a new, independent sandbox from a copy of its workspace at this moment.
type Forker interface {
	// Fork never changes the source; several forks are independent; a fork can be forked.
	Fork(ctx context.Context) (Sandbox, error)
}

// FileStreamer moves one file's content as a stream, for files too large to hold in memory (the
// HTTP API's uploads and downloads). Adapters without it are served through ReadFile and
// WriteFile, bounded by the caller.
type FileStreamer interface {
	// OpenFile opens a regular file for reading and returns it with its size. No read limit
	// applies: the caller bounds what it reads. Errors as ReadFile's.
	OpenFile(ctx context.Context, path string) (io.ReadCloser, int64, error)
	// WriteFileFrom writes what r yields to path as WriteFile writes data: a temporary file
	// renamed over the target once r ends, so a reader never sees a torn file and a failed read
	// of r leaves the target as it was (the error is r's). It returns the bytes written.
	WriteFileFrom(ctx context.Context, path string, r io.Reader) (int64, error)
}

// Pauser is a sandbox whose processes can be frozen and thawed (issue 38): Pause stops every
// process of the sandbox where it is (no CPU, memory kept) until Resume lets them go on. A paused
// sandbox takes no commands (errs.SandboxUnavailable, or a command waits for Resume where the
// runtime cannot tell) and cannot be attached to; its files stay readable on the host where the
// adapter keeps them there. Pause of a paused sandbox and Resume of a running one are no-ops.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Checkpointer is a sandbox whose processes can be saved with their memory (issue 38): Checkpoint
// writes the sandbox's memory, workspace and HOME into dir, a directory it creates (an existing
// one is errs.InvalidInput), and the sandbox goes on running where it was. The adapter's Restore
// makes a new sandbox from dir whose processes continue with that memory; open TCP connections
// are reset. errs.SandboxUnavailable when the runtime cannot checkpoint on this machine.
type Checkpointer interface {
	Checkpoint(ctx context.Context, dir string) error
}
