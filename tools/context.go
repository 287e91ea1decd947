package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// Defaults and upper bounds of the tool options (SPEC.md section 3).
const (
	DefaultMaxOutputBytes = 200000
	DefaultTimeout        = 60 * time.Second

	BashMaxCommandLength = 8192     // bytes of cmd, and of cmd and args joined by spaces
	BashMaxArgs          = 128      // entries in args
	BashMaxArgLength     = 8192     // bytes per arg
	BashMaxCwdLength     = 1024     // bytes of opts.cwd
	BashMaxOutputBytes   = 10485760 // upper bound of MaxOutputBytes
	BashMaxTimeout       = time.Hour
)

// Context is the runtime context of one tool call: where it runs, its limits, and its position in
// the task (run, node, iteration, attempt, seq), from which its idempotency key is derived.
//
// Build one with NewContext (which sets the defaults) and adjust fields; MaxOutputBytes and
// Timeout have no implicit default, so a zero value is rejected by Validate as the spec requires
// (a configuration saying maxOutputBytes 0 is an error, not "use the default").
//
// In-process callers that make many calls use a Session, which hands out Contexts with Seq
// incremented per call. A caller that keeps seq elsewhere (the CLI continues it across processes
// from its journal) sets Seq on each Context itself.
type Context struct {
	RunID     string
	NodeID    string
	Iteration int
	Attempt   int // 1 for the first attempt; not part of the idempotency key
	Seq       int // position of the call within (RunID, NodeID, Iteration)

	// ToolName is set by Tool.Call on the copy Execute receives.
	ToolName string

	// RootDir is the workspace root as commands see it (a host directory for local, "/workspace"
	// for docker and memory). Empty means the sandbox's adapter.Capabilities().Workspace. It is used
	// to turn absolute paths inside the root into relative ones (grep); paths themselves are always
	// jailed by the sandbox.
	RootDir string
	// AllowNetwork lets bash run network commands; when false, the policy package inspects argv
	// first and the adapter cuts the network where it can.
	AllowNetwork bool
	// AllowHosts is the allowlist of the sandbox's egress proxy (issue 16; egress.ParseAllowlist
	// syntax): the network stays cut, the proxy is the only way out, and command inspection lets
	// network commands through when every host they show is allowed (policy.CheckAllowlist).
	// The sandbox itself must have been made with the same AllowHosts in its adapter's Config
	// (it owns the proxy); a sandbox without one (the memory adapter has no network) is
	// errs.SandboxUnavailable. Exclusive with AllowNetwork.
	AllowHosts []string
	// MaxOutputBytes bounds each output stream, read and edit file sizes, write content and edit
	// patches. 1..BashMaxOutputBytes.
	MaxOutputBytes int
	// Timeout bounds bash and grep commands. (0, BashMaxTimeout].
	Timeout time.Duration
	// IdempotencyKey, when set, is the key of this call (an explicit key from the caller wins);
	// empty means derived by Key.
	IdempotencyKey string
	// Env is added to the command environment of bash and grep ("KEY=VALUE").
	Env []string
	// Stdout and Stderr, when set, receive a live copy of a foreground bash command's output
	// while it runs (the MCP server turns it into progress notifications); the result is the
	// same either way.
	Stdout, Stderr io.Writer
	// NoPathDiff turns off the stat listing of the workspace before and after each bash call
	// that fills Receipt.Paths (docs/receipts.md): for workspaces where two walks per call
	// cost too much, or callers that do not want the paths.
	NoPathDiff bool

	// Sandbox is where the tools run. Required.
	Sandbox adapter.Sandbox
}

// NewContext returns a Context over sb with the defaults: MaxOutputBytes DefaultMaxOutputBytes,
// Timeout DefaultTimeout, Attempt 1, network off, RootDir from sb's capabilities when it has them.
func NewContext(sb adapter.Sandbox) *Context {
	c := &Context{
		Attempt:        1,
		MaxOutputBytes: DefaultMaxOutputBytes,
		Timeout:        DefaultTimeout,
		Sandbox:        sb,
	}
	c.RootDir = adapter.WorkspaceOf(sb)
	return c
}

// Validate checks the options. Errors are errs.InvalidInput naming the field: maxOutputBytes
// outside 1..BashMaxOutputBytes, timeout outside (0, BashMaxTimeout], a negative iteration,
// attempt or seq, no sandbox, AllowNetwork with AllowHosts, an invalid AllowHosts pattern.
func (c *Context) Validate() error {
	switch {
	case c.MaxOutputBytes <= 0 || c.MaxOutputBytes > BashMaxOutputBytes:
		return errs.New(errs.InvalidInput, "", "", "maxOutputBytes must be between 1 and %d, got %d", BashMaxOutputBytes, c.MaxOutputBytes)
	case c.Timeout <= 0 || c.Timeout > BashMaxTimeout:
		return errs.New(errs.InvalidInput, "", "", "timeout must be more than 0 and at most %s, got %s", BashMaxTimeout, c.Timeout)
	case c.Iteration < 0 || c.Attempt < 0 || c.Seq < 0:
		return errs.New(errs.InvalidInput, "", "", "iteration, attempt and seq must not be negative")
	case c.Sandbox == nil:
		return errs.New(errs.InvalidInput, "", "", "sandbox is nil")
	case c.AllowNetwork && len(c.AllowHosts) > 0:
		return errs.New(errs.InvalidInput, "", "", "allowNetwork and allowHosts exclude each other: allowNetwork opens every host")
	case len(c.AllowHosts) > 0:
		return egress.ValidateHosts(c.AllowHosts)
	}
	return nil
}

// Key returns the call's idempotency key: IdempotencyKey when set, otherwise
// IdempotencyKey(RunID, NodeID, Iteration, Seq).
func (c *Context) Key() string {
	if c.IdempotencyKey != "" {
		return c.IdempotencyKey
	}
	return IdempotencyKey(c.RunID, c.NodeID, c.Iteration, c.Seq)
}

// IdempotencyKey derives the key of the call at position seq of (runID, nodeID, iteration):
// "sbx-" and 32 hex digits of a SHA-256 over the four values. It does not depend on the attempt, so
// a retry or a resume that replays the same call position gets the same key, and different calls
// of one iteration (different seq) get different keys.
func IdempotencyKey(runID, nodeID string, iteration, seq int) string {
	b, _ := json.Marshal([]string{runID, nodeID, strconv.Itoa(iteration), strconv.Itoa(seq)})
	sum := sha256.Sum256(b)
	return "sbx-" + hex.EncodeToString(sum[:16])
}

func (c *Context) forCall(tool string) *Context {
	cc := *c
	cc.ToolName = tool
	cc.IdempotencyKey = c.Key()
	cc.Env = append([]string(nil), c.Env...)
	cc.AllowHosts = slices.Clone(c.AllowHosts)
	if cc.RootDir == "" && c.Sandbox != nil {
		cc.RootDir = adapter.WorkspaceOf(c.Sandbox)
	}
	return &cc
}

// Session hands out the Contexts of successive calls of one task iteration, with Seq incremented
// per call. It is safe for concurrent use.
type Session struct {
	mu   sync.Mutex
	base Context
	seq  int
}

// NewSession starts a session from base (copied). The first call gets Seq base.Seq+1, then +2, ...
// base.IdempotencyKey is ignored: one key for every call would make an API that dedupes drop
// the second call.
func NewSession(base *Context) *Session {
	s := &Session{base: *base, seq: base.Seq}
	s.base.IdempotencyKey = ""
	s.base.Env = append([]string(nil), base.Env...)
	s.base.AllowHosts = slices.Clone(base.AllowHosts)
	return s
}

// Next returns the Context of the next call.
func (s *Session) Next() *Context {
	s.mu.Lock()
	s.seq++
	c := s.base
	c.Seq = s.seq
	s.mu.Unlock()
	c.Env = append([]string(nil), c.Env...)
	c.AllowHosts = slices.Clone(c.AllowHosts)
	return &c
}

// Call runs t with the next Context of the session and returns the Context it used (for the
// journal) with its result.
func (s *Session) Call(ctx context.Context, t *Tool, input json.RawMessage) (*Context, *Result, error) {
	c := s.Next()
	res, err := t.Call(ctx, input, c)
	return c, res, err
}
