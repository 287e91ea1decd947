// Package api holds the wire types of sandboxer's HTTP API (`sandboxerd serve`, docs/api.md):
// what the server (internal/cli) answers and the remote adapter (adapter/remote) sends, one
// definition for both, and the OpenAPI document of the API (OpenAPI, embedded), which a test
// checks against the server's routes.
package api

import (
	_ "embed"
	"encoding/base64"
	"io/fs"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// OpenAPI is the API's OpenAPI 3.1 document (api/openapi.json).
//
//go:embed openapi.json
var OpenAPI []byte

// Version prefixes every path.
const Version = "/v1"

// Headers of a tool call's journal position (docs/api.md, "Tool calls").
const (
	HeaderRunID          = "Sandboxer-Run-Id"
	HeaderNodeID         = "Sandboxer-Node-Id"
	HeaderIteration      = "Sandboxer-Iteration"
	HeaderAttempt        = "Sandboxer-Attempt"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// TrailerUpload, a trailer of a chunked upload (PUT .../files), set to UploadAborted by a
// client whose source failed part way: the server then discards what it received and answers
// only once the temporary file is gone, instead of learning of the cut from a closed connection
// some time after the client has moved on.
const (
	TrailerUpload = "Sandboxer-Upload"
	UploadAborted = "aborted"
)

// Codes of the API's own refusals, in the tools' error shape.
const (
	CodeUnauthorized     errs.Code = "UNAUTHORIZED"       // 401: no token, or one the server does not know
	CodeForbidden        errs.Code = "FORBIDDEN"          // 403: the token may not do this
	CodeMethodNotAllowed errs.Code = "METHOD_NOT_ALLOWED" // 405
)

// Error is the "error" member of a refusal (and of a failed tool call's reply).
type Error struct {
	Code    errs.Code      `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// Refusal is the body of every answer that is not a success: the tools' error shape, with the
// partial result of a command that timed out.
type Refusal struct {
	OK     bool        `json:"ok"`
	Error  *Error      `json:"error"`
	Result *ExecResult `json:"result,omitempty"`
}

// CreateRequest is the body of POST /v1/sandboxes; every member is optional (the server's flags
// give the rest).
type CreateRequest struct {
	Adapter            string   `json:"adapter,omitempty"`
	Image              string   `json:"image,omitempty"`
	Runtime            string   `json:"runtime,omitempty"`
	MemoryBytes        *int64   `json:"memoryBytes,omitempty"`
	CPUs               *float64 `json:"cpus,omitempty"`
	Pids               *int     `json:"pids,omitempty"`
	DiskBytes          *int64   `json:"diskBytes,omitempty"`
	AllowNetwork       bool     `json:"allowNetwork,omitempty"`
	AllowHosts         []string `json:"allowHosts,omitempty"`
	TTLSeconds         int64    `json:"ttlSeconds,omitempty"`
	IdleTimeoutSeconds *int64   `json:"idleTimeoutSeconds,omitempty"`
	// FromSnapshot names a snapshot of the token's catalog to restore into the new sandbox
	// (verified); the create fails, and nothing is left, when the restore does.
	FromSnapshot string `json:"fromSnapshot,omitempty"`
}

// ExtendRequest sets a sandbox's remaining lifetime and, optionally, its idle timeout (the body
// of /extend, and optionally of /fork for the fork's).
type ExtendRequest struct {
	TTLSeconds         int64  `json:"ttlSeconds,omitempty"`
	IdleTimeoutSeconds *int64 `json:"idleTimeoutSeconds,omitempty"`
}

// Sandbox is a sandbox as the API shows it.
type Sandbox struct {
	ID                 string                `json:"id"`
	Adapter            string                `json:"adapter"`
	Image              string                `json:"image,omitempty"`
	Owner              string                `json:"owner,omitempty"`
	ForkOf             string                `json:"forkOf,omitempty"`
	CreatedAt          time.Time             `json:"createdAt"`
	ExpiresAt          time.Time             `json:"expiresAt"`
	IdleTimeoutSeconds int64                 `json:"idleTimeoutSeconds"`
	LastUsedAt         time.Time             `json:"lastUsedAt"`
	MemoryBytes        int64                 `json:"memoryBytes"`
	AllowNetwork       bool                  `json:"allowNetwork"`
	AllowHosts         []string              `json:"allowHosts"`
	Capabilities       *adapter.Capabilities `json:"capabilities,omitempty"`
	// Paused: its processes are frozen (POST .../pause) until POST .../resume; commands are
	// refused meanwhile (409 SANDBOX_UNAVAILABLE, details.paused).
	Paused bool `json:"paused"`
}

// SandboxList is the answer of GET /v1/sandboxes.
type SandboxList struct {
	Sandboxes []Sandbox `json:"sandboxes"`
}

// Encodings of command output in answers.
const (
	EncodingUTF8   = "utf8"   // text; bytes that are not UTF-8 become U+FFFD
	EncodingBase64 = "base64" // the exact bytes
)

// ExecRequest is a command of POST /exec and POST /processes.
type ExecRequest struct {
	Args           []string `json:"args"`
	Dir            string   `json:"dir,omitempty"`
	Env            []string `json:"env,omitempty"`
	Stdin          *string  `json:"stdin,omitempty"`       // exec only: the whole standard input, as text
	StdinBase64    *string  `json:"stdinBase64,omitempty"` // or as base64
	TimeoutMs      int64    `json:"timeoutMs,omitempty"`
	MaxOutputBytes int      `json:"maxOutputBytes,omitempty"`
	Encoding       string   `json:"encoding,omitempty"`
	// Stream answers NDJSON: StreamChunk lines as the output comes, then a StreamEnd.
	Stream bool `json:"stream,omitempty"`
}

// ExecResult is a finished (or timed-out) command.
type ExecResult struct {
	ExitCode        int               `json:"exitCode"`
	Stdout          string            `json:"stdout"`
	Stderr          string            `json:"stderr"`
	StdoutTruncated bool              `json:"stdoutTruncated"`
	StderrTruncated bool              `json:"stderrTruncated"`
	StdoutDropped   int64             `json:"stdoutDropped"`
	StderrDropped   int64             `json:"stderrDropped"`
	DurationMs      int64             `json:"durationMs"`
	Isolation       adapter.Isolation `json:"isolation"`
	Limit           string            `json:"limit,omitempty"`
	Encoding        string            `json:"encoding"`
	// Receipt is what the command cost as the server's adapter measured it (docs/receipts.md);
	// absent from servers older than receipts.
	Receipt *adapter.Receipt `json:"receipt,omitempty"`
}

// StreamLine is one line of a streamed exec: a chunk of output (Stream and Data), or the end
// (Result, and Error when the command did not finish).
type StreamLine struct {
	Stream string      `json:"stream,omitempty"` // "stdout" or "stderr"
	Data   string      `json:"data,omitempty"`
	Result *ExecResult `json:"result,omitempty"`
	Error  *Error      `json:"error,omitempty"`
}

// ProcessList is the answer of GET .../processes.
type ProcessList struct {
	Processes []adapter.ProcessState `json:"processes"`
}

// ProcessChunk is one read of a process's output (adapter.ProcessOutput, encoded); a followed
// output may end with a line holding only Error.
type ProcessChunk struct {
	Stdout   string               `json:"stdout"`
	Stderr   string               `json:"stderr"`
	Offset   int64                `json:"offset"`
	Dropped  int64                `json:"dropped"`
	State    adapter.ProcessState `json:"state"`
	Encoding string               `json:"encoding"`
	Error    *Error               `json:"error,omitempty"`
}

// SignalRequest is the body of POST .../signal.
type SignalRequest struct {
	Signal string `json:"signal"`
}

// File is a workspace entry.
type File struct {
	Path       string    `json:"path"`
	Type       string    `json:"type"` // file, symlink, dir or other
	Size       int64     `json:"size"`
	Mode       uint32    `json:"mode"` // Go's fs.FileMode bits: type and permissions
	ModTime    time.Time `json:"modTime"`
	Link       string    `json:"link,omitempty"`
	Executable bool      `json:"executable"`
}

// FileList is the answer of GET .../files/list.
type FileList struct {
	Files []File `json:"files"`
}

// SymlinkRequest is the body of POST .../files/symlink.
type SymlinkRequest struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// ExecutableRequest is the body of POST .../files/executable.
type ExecutableRequest struct {
	Path       string `json:"path"`
	Executable bool   `json:"executable"`
}

// Health is the answer of GET /v1/health.
type Health struct {
	OK       bool     `json:"ok"`
	Version  string   `json:"version"`
	Adapters []string `json:"adapters"`
}

// FileOf is the wire form of a workspace entry.
func FileOf(fi adapter.FileInfo) File {
	typ := "other"
	switch {
	case fi.Mode.IsRegular():
		typ = "file"
	case fi.IsLink():
		typ = "symlink"
	case fi.Mode.IsDir():
		typ = "dir"
	}
	return File{Path: fi.Path, Type: typ, Size: fi.Size, Mode: uint32(fi.Mode), ModTime: fi.ModTime, Link: fi.Link, Executable: fi.Executable()}
}

// Info is the adapter's form of a workspace entry.
func (f File) Info() adapter.FileInfo {
	return adapter.FileInfo{Path: f.Path, Size: f.Size, Mode: fs.FileMode(f.Mode), ModTime: f.ModTime, Link: f.Link}
}

// Encode is output bytes as an answer carries them.
func Encode(b []byte, encoding string) string {
	if encoding == EncodingBase64 {
		return base64.StdEncoding.EncodeToString(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Decode is the bytes of an answer's output.
func Decode(s, encoding string) ([]byte, error) {
	if encoding == EncodingBase64 {
		return base64.StdEncoding.DecodeString(s)
	}
	return []byte(s), nil
}

// ResultOf is the wire form of a command's result; withOutput false leaves the streams empty
// (a streamed exec sent them as chunks).
func ResultOf(res adapter.Result, encoding string, withOutput bool) ExecResult {
	if encoding == "" {
		encoding = EncodingUTF8
	}
	out := ExecResult{ExitCode: res.ExitCode, StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		StdoutDropped: res.StdoutDropped, StderrDropped: res.StderrDropped, DurationMs: res.Duration.Milliseconds(),
		Isolation: res.Isolation, Limit: res.Limit, Encoding: encoding, Receipt: &res.Receipt}
	if withOutput {
		out.Stdout, out.Stderr = Encode(res.Stdout, encoding), Encode(res.Stderr, encoding)
	}
	return out
}

// Result is the adapter's form of a command's result.
func (r ExecResult) Result() (adapter.Result, error) {
	stdout, err := Decode(r.Stdout, r.Encoding)
	if err != nil {
		return adapter.Result{}, err
	}
	stderr, err := Decode(r.Stderr, r.Encoding)
	if err != nil {
		return adapter.Result{}, err
	}
	res := adapter.Result{Stdout: stdout, Stderr: stderr, ExitCode: r.ExitCode, StdoutTruncated: r.StdoutTruncated,
		StderrTruncated: r.StderrTruncated, StdoutDropped: r.StdoutDropped, StderrDropped: r.StderrDropped,
		Duration: time.Duration(r.DurationMs) * time.Millisecond, Isolation: r.Isolation, Limit: r.Limit}
	if r.Receipt != nil { // the server's measurement passes through
		res.Receipt = *r.Receipt
	} else {
		res.Receipt.WallUs = res.Duration.Microseconds()
		res.Receipt.StdoutBytes = int64(len(stdout)) + r.StdoutDropped
		res.Receipt.StderrBytes = int64(len(stderr)) + r.StderrDropped
	}
	return res, nil
}

// Err is the error of a refusal's Error: an *errs.Error with its code, message and details.
func (e *Error) Err() error {
	return &errs.Error{Code: e.Code, Msg: e.Message, Details: e.Details}
}

// ListenRequest is the body of POST .../listeners.
type ListenRequest struct {
	Port int `json:"port"`
}

// Listener is a port listener of a sandbox.
type Listener struct {
	ID   string `json:"id"`
	Port int    `json:"port"`
}

// SnapshotRequest is the body of POST .../snapshots: the new snapshot's name (1-128 characters
// of [A-Za-z0-9._-], not starting with a dot).
type SnapshotRequest struct {
	Name string `json:"name"`
}

// RestoreRequest is the body of POST .../restore. Replace restores into a workspace that holds
// files (what the snapshot does not list is removed); without it such a workspace is refused
// (SYNC_CONFLICT).
type RestoreRequest struct {
	Snapshot string `json:"snapshot"`
	Replace  bool   `json:"replace,omitempty"`
}

// Snapshot is a file system snapshot of the token's catalog (docs/snapshots.md). Read, Stored
// and Skipped are figures of the take that made it, in its answer only.
type Snapshot struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Source  string    `json:"source,omitempty"`  // the sandbox it was taken of
	Adapter string    `json:"adapter,omitempty"` // that sandbox's adapter
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes"`
	Read    int       `json:"read,omitempty"`
	Stored  int       `json:"stored,omitempty"`
	Skipped []string  `json:"skipped,omitempty"`
}

// SnapshotList is the answer of GET /v1/snapshots, oldest first.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// Restored is the answer of POST .../restore: the snapshot now in the sandbox's workspace,
// verified.
type Restored struct {
	Snapshot string `json:"snapshot"`
	Sandbox  string `json:"sandbox"`
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
}
