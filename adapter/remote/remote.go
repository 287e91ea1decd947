// Package remote is the adapter whose sandboxes live on a sandboxer server (`sandboxerd serve`,
// docs/api.md): every call is a request of the HTTP API, and what the sandbox enforces is what
// the server's adapter enforces (Capabilities and each Result's Isolation are the server's).
//
// New creates a sandbox on the server and Stop deletes it; Attach opens one that exists and
// Detach leaves it. Commands are cancelled on the server when their context ends (the request is
// cancelled and the server kills the command's tree).
package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

// Config says which server to use and what sandbox to ask for.
type Config struct {
	// URL is the server: http://HOST:PORT, https://HOST:PORT or unix:PATH.
	URL string
	// Token is the bearer token, when the server has tokens.
	Token string
	// TLS configures an https server's connections (a private CA's pool); nil: the system's.
	TLS *tls.Config
	// Create is the sandbox New asks for (adapter, image, limits, network, lifetime).
	Create api.CreateRequest
}

// Sandbox is a sandbox on a server.
type Sandbox struct {
	c     *client
	id    string
	info  api.Sandbox
	owned bool // Stop deletes it (New, Fork); else Stop detaches (Attach)

	mu      sync.Mutex
	stopped bool
	stop    context.CancelFunc // ends the live copies of processes' output
	ctx     context.Context
}

var (
	_ adapter.Sandbox       = (*Sandbox)(nil)
	_ adapter.Capable       = (*Sandbox)(nil)
	_ adapter.Identified    = (*Sandbox)(nil)
	_ adapter.Lister        = (*Sandbox)(nil)
	_ adapter.Statter       = (*Sandbox)(nil)
	_ adapter.Remover       = (*Sandbox)(nil)
	_ adapter.ModeWriter    = (*Sandbox)(nil)
	_ adapter.Starter       = (*Sandbox)(nil)
	_ adapter.PortForwarder = (*Sandbox)(nil)
	_ adapter.Forker        = (*Sandbox)(nil)
)

// New creates a sandbox on the server.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	var info api.Sandbox
	if err := c.call(ctx, http.MethodPost, "/sandboxes", nil, cfg.Create, &info); err != nil {
		c.closer()
		return nil, err
	}
	return newSandbox(c, info, true), nil
}

// Attach opens the server's sandbox id (errs.SandboxUnavailable when the server has none of that
// id for this token). Stop then only detaches: the sandbox stays on the server.
func Attach(ctx context.Context, cfg Config, id string) (*Sandbox, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	var info api.Sandbox
	if err := c.call(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id), nil, nil, &info); err != nil {
		c.closer()
		return nil, err
	}
	return newSandbox(c, info, false), nil
}

func newSandbox(c *client, info api.Sandbox, owned bool) *Sandbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &Sandbox{c: c, id: info.ID, info: info, owned: owned, ctx: ctx, stop: cancel}
}

// ID is the sandbox's id on the server.
func (s *Sandbox) ID() string { return s.id }

// Info is the sandbox as the server showed it when it was opened.
func (s *Sandbox) Info() api.Sandbox { return s.info }

// Capabilities are those of the server's adapter, with the adapter named "remote:NAME".
func (s *Sandbox) Capabilities() adapter.Capabilities {
	var c adapter.Capabilities
	if s.info.Capabilities != nil {
		c = *s.info.Capabilities
	}
	c.Adapter = "remote:" + c.Adapter
	return c
}

// Workspace is the workspace root as the sandbox's commands see it.
func (s *Sandbox) Workspace() string {
	if s.info.Capabilities == nil {
		return ""
	}
	return s.info.Capabilities.Workspace
}

func (s *Sandbox) path(p string) string { return "/sandboxes/" + url.PathEscape(s.id) + p }

func (s *Sandbox) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errs.New(errs.SandboxUnavailable, "remote", "", "sandbox %s is stopped", s.id)
	}
	return nil
}

// Extend sets the sandbox's remaining lifetime on the server.
func (s *Sandbox) Extend(ctx context.Context, ttl time.Duration) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.c.call(ctx, http.MethodPost, s.path("/extend"), nil, api.ExtendRequest{TTLSeconds: int64(ttl / time.Second)}, &s.info)
}

// Stop deletes the sandbox on the server (one New or Fork made) or detaches from it (Attach).
// Idempotent.
func (s *Sandbox) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	s.stop()
	defer s.c.closer()
	if !s.owned {
		return nil
	}
	err := s.c.call(ctx, http.MethodDelete, s.path(""), nil, nil, nil)
	if errs.CodeOf(err) == errs.SandboxUnavailable {
		return nil // expired, or deleted by another client
	}
	return err
}

// Detach ends this handle's use of the sandbox and leaves it on the server.
func (s *Sandbox) Detach() {
	s.mu.Lock()
	s.owned = false
	s.mu.Unlock()
	s.Stop(context.Background())
}

// Fork makes a new sandbox on the server from a copy of this one's workspace; its Stop deletes it.
func (s *Sandbox) Fork(ctx context.Context) (adapter.Sandbox, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var info api.Sandbox
	if err := s.c.call(ctx, http.MethodPost, s.path("/fork"), nil, nil, &info); err != nil {
		return nil, err
	}
	return newSandbox(s.c, info, true), nil
}

// ExecuteCommand runs cmd on the server. Stdin is sent whole with the request; with cmd.Stdout
// or cmd.Stderr set, the output is streamed (NDJSON) and copied to them as it comes.
func (s *Sandbox) ExecuteCommand(ctx context.Context, cmd adapter.Command) (adapter.Result, error) {
	if err := s.check(); err != nil {
		return adapter.Result{}, err
	}
	req := api.ExecRequest{Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Env, TimeoutMs: cmd.Timeout.Milliseconds(),
		MaxOutputBytes: cmd.MaxOutputBytes, Encoding: api.EncodingBase64, Stream: cmd.Stdout != nil || cmd.Stderr != nil}
	if len(cmd.Args) == 0 {
		return adapter.Result{}, errs.New(errs.InvalidInput, "exec", "", "empty argv")
	}
	if cmd.Timeout < 0 || cmd.MaxOutputBytes < 0 {
		return adapter.Result{}, errs.New(errs.InvalidInput, "exec", "", "negative timeout or output limit")
	}
	if cmd.Timeout > 0 && req.TimeoutMs == 0 {
		req.TimeoutMs = 1
	}
	if cmd.Stdin != nil {
		data, err := io.ReadAll(cmd.Stdin)
		if err != nil {
			return adapter.Result{}, errs.Wrap(errs.InvalidInput, "exec", "", fmt.Errorf("reading stdin: %w", err))
		}
		in := base64.StdEncoding.EncodeToString(data)
		req.StdinBase64 = &in
	}
	hreq, err := s.c.request(ctx, http.MethodPost, s.path("/exec"), nil, req)
	if err != nil {
		return adapter.Result{}, err
	}
	resp, partial, err := s.c.do(hreq)
	if err != nil {
		var res adapter.Result
		if partial != nil {
			res, _ = partial.Result()
		}
		return res, deadline(ctx, err)
	}
	defer resp.Body.Close()
	if !req.Stream {
		var out api.ExecResult
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return adapter.Result{}, deadline(ctx, s.readErr(ctx, err))
		}
		res, err := out.Result()
		if err != nil {
			return adapter.Result{}, errs.Wrap(errs.Internal, "exec", "", err)
		}
		return res, nil
	}
	res, err := s.readStream(ctx, resp.Body, cmd)
	return res, deadline(ctx, err)
}

// deadline makes the error of a command whose context's deadline passed a timeout, as every
// adapter reports it (errs.ProcessTimeout, still matching context.DeadlineExceeded).
func deadline(ctx context.Context, err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == context.DeadlineExceeded {
		return errs.Wrap(errs.ProcessTimeout, "exec", "", err)
	}
	return err
}

// readErr is the error of an answer that could not be read whole: the context's when it ended.
func (s *Sandbox) readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return noAnswer(fmt.Errorf("reading the answer: %w", err))
}

// readStream reads a streamed exec: chunks to the live writers, captured within the command's
// limit as an adapter does, until the end line.
func (s *Sandbox) readStream(ctx context.Context, body io.Reader, cmd adapter.Command) (adapter.Result, error) {
	stdout, stderr := adapter.NewCappedBuffer(cmd.Limit()), adapter.NewCappedBuffer(cmd.Limit())
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var line api.StreamLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return adapter.Result{}, errs.Wrap(errs.Internal, "exec", "", err)
		}
		if line.Result != nil {
			res, err := line.Result.Result()
			if err != nil {
				return adapter.Result{}, errs.Wrap(errs.Internal, "exec", "", err)
			}
			res.Stdout, res.StdoutTruncated, res.StdoutDropped = stdout.Result()
			res.Stderr, res.StderrTruncated, res.StderrDropped = stderr.Result()
			if line.Error != nil {
				return res, line.Error.Err()
			}
			return res, nil
		}
		data, err := api.Decode(line.Data, api.EncodingBase64)
		if err != nil {
			return adapter.Result{}, errs.Wrap(errs.Internal, "exec", "", err)
		}
		capture, live := stdout, cmd.Stdout
		if line.Stream == "stderr" {
			capture, live = stderr, cmd.Stderr
		}
		capture.Write(data)
		if live != nil {
			live.Write(data)
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return adapter.Result{}, s.readErr(ctx, err)
}

// ReadFile downloads a file, refusing one larger than adapter.ReadLimit(ctx).
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if p == "" {
		return nil, errs.New(errs.PathInvalid, "read", p, "empty path")
	}
	limit := adapter.ReadLimit(ctx)
	req, err := s.c.request(ctx, http.MethodGet, s.path("/files"), url.Values{"path": {p}}, nil)
	if err != nil {
		return nil, err
	}
	resp, _, err := s.c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return nil, adapter.FileTooLarge("read", p, resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, s.readErr(ctx, err)
	}
	if int64(len(data)) > limit {
		return nil, adapter.FileTooLarge("read", p, int64(len(data)), limit)
	}
	return data, nil
}

// WriteFile uploads a file (the server replaces it atomically).
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	if p == "" {
		return errs.New(errs.PathInvalid, "write", p, "empty path")
	}
	return s.c.call(ctx, http.MethodPut, s.path("/files"), url.Values{"path": {p}}, bytes.NewReader(data), nil)
}

// ListFiles lists every file and symlink under dir.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]adapter.FileInfo, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var list api.FileList
	if err := s.c.call(ctx, http.MethodGet, s.path("/files/list"), url.Values{"dir": {dir}}, nil, &list); err != nil {
		return nil, err
	}
	out := make([]adapter.FileInfo, 0, len(list.Files))
	for _, f := range list.Files {
		out = append(out, f.Info())
	}
	return out, nil
}

// StatFile reports one entry, not following a final symlink.
func (s *Sandbox) StatFile(ctx context.Context, p string) (adapter.FileInfo, error) {
	if err := s.check(); err != nil {
		return adapter.FileInfo{}, err
	}
	if p == "" {
		return adapter.FileInfo{}, errs.New(errs.PathInvalid, "stat", p, "empty path")
	}
	var f api.File
	if err := s.c.call(ctx, http.MethodGet, s.path("/files/stat"), url.Values{"path": {p}}, nil, &f); err != nil {
		return adapter.FileInfo{}, err
	}
	return f.Info(), nil
}

// RemoveFile deletes a file or an empty directory.
func (s *Sandbox) RemoveFile(ctx context.Context, p string) error {
	if err := s.check(); err != nil {
		return err
	}
	if p == "" {
		return errs.New(errs.PathInvalid, "remove", p, "empty path")
	}
	return s.c.call(ctx, http.MethodDelete, s.path("/files"), url.Values{"path": {p}}, nil, nil)
}

// Symlink makes path a symbolic link to target.
func (s *Sandbox) Symlink(ctx context.Context, p, target string) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.c.call(ctx, http.MethodPost, s.path("/files/symlink"), nil, api.SymlinkRequest{Path: p, Target: target}, nil)
}

// SetExecutable makes a regular file 0755 or 0644.
func (s *Sandbox) SetExecutable(ctx context.Context, p string, exec bool) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.c.call(ctx, http.MethodPost, s.path("/files/executable"), nil, api.ExecutableRequest{Path: p, Executable: exec}, nil)
}

// DialPort connects to 127.0.0.1:port inside the sandbox through the server.
func (s *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if port < 1 || port > 65535 {
		return nil, errs.New(errs.InvalidInput, "port", "", "port %d: want 1..65535", port)
	}
	return s.c.upgrade(ctx, s.path("/ports/"+strconv.Itoa(port)))
}
