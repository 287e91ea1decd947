package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/telemetry"
	"github.com/sandboxer/sandboxer/journal"
)

// The HTTP API of `sandboxerd serve` (issue 36; docs/api.md, api/openapi.json). One apiServer
// owns the sandboxes it made (apiRegistry), the journal its tool calls are recorded in, and the
// tokens its callers present.

// apiOptions configure an apiServer.
type apiOptions struct {
	Base   Settings   // the defaults of every sandbox (the serve command's flags)
	Tokens *tokenFile // nil: no tokens (loopback or a unix socket only)
	// MaxRequestBytes bounds a JSON request body (tool inputs, exec with its stdin).
	MaxRequestBytes int64
	// MaxFileBytes bounds one file uploaded or downloaded.
	MaxFileBytes int64
	// TTL and Idle are a sandbox's lifetime and idle timeout when its create request gives none;
	// MaxTTL caps what any request asks.
	TTL, Idle, MaxTTL time.Duration
	Log               *log.Logger
	// Metrics, when served (--metrics-listen), get the server's gauges.
	Metrics *telemetry.Metrics
}

type apiServer struct {
	opt  apiOptions
	reg  *apiRegistry
	cats *apiCatalogs
	j    *journal.Journal // nil: journal off
	jw   *journalWriter
	mux  *http.ServeMux
	// methodless are the paths given a 405 answer for their other methods.
	methodless map[string]bool
	patterns   []string // "METHOD PATH" of every route, as api.Routes lists them
	closeMu    sync.Once
	closeErr   error
}

// principalKey is the context key of the calling token's name.
type principalKey struct{}

// newAPIServer opens the journal and the registry (removing what an earlier server of the same
// state directory left) and routes the API.
func newAPIServer(ctx context.Context, opt apiOptions) (*apiServer, error) {
	a := &apiServer{opt: opt, mux: http.NewServeMux(), cats: newCatalogs(opt.Base)}
	if opt.Base.Journal != "" {
		j, err := journal.Open(ctx, opt.Base.Journal, opt.Base.journalOptions())
		if err != nil {
			return nil, err
		}
		a.j, a.jw = j, newJournalWriter()
	}
	reg, err := openRegistry(ctx, opt)
	if err != nil {
		a.closeJournal()
		return nil, err
	}
	a.reg = reg
	if opt.Metrics != nil {
		opt.Metrics.Gauge(telemetry.MetricSandboxes, "Sandboxes this process holds open.", nil, reg.count)
	}
	a.routes()
	return a, nil
}

func (a *apiServer) closeJournal() {
	if a.j != nil {
		a.jw.close()
		a.j.Close()
	}
}

// Close removes every sandbox of the server and closes the journal and the snapshot catalogs.
// Idempotent.
func (a *apiServer) Close() error {
	a.closeMu.Do(func() {
		a.closeErr = errors.Join(a.reg.Close(), a.cats.close())
		a.closeJournal()
	})
	return a.closeErr
}

// route registers h for "METHOD PATH" behind the token check, and answers other methods of the
// path with a 405 in the API's error shape.
func (a *apiServer) route(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
	a.patterns = append(a.patterns, pattern)
	a.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := a.authenticate(r); err != nil {
			writeError(w, err)
			return
		}
		if err := h(w, r); err != nil {
			writeError(w, err)
		}
	})
	_, path, _ := strings.Cut(pattern, " ")
	if !a.methodless[path] {
		if a.methodless == nil {
			a.methodless = map[string]bool{}
		}
		a.methodless[path] = true
		a.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, errs.New(api.CodeMethodNotAllowed, "", "", "%s %s: method not allowed", r.Method, r.URL.Path))
		})
	}
}

func (a *apiServer) routes() {
	a.mux.HandleFunc("GET /v1/health", a.health)
	a.patterns = append(a.patterns, "GET /v1/health")
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errs.New(errs.NotFound, "", "", "%s %s: no such endpoint (see docs/api.md)", r.Method, r.URL.Path))
	})
	a.route("POST /v1/sandboxes", a.createSandbox)
	a.route("GET /v1/sandboxes", a.listSandboxes)
	a.route("GET /v1/sandboxes/{id}", a.getSandbox)
	a.route("DELETE /v1/sandboxes/{id}", a.deleteSandbox)
	a.route("POST /v1/sandboxes/{id}/fork", a.forkSandbox)
	a.route("POST /v1/sandboxes/{id}/extend", a.extendSandbox)
	a.route("POST /v1/sandboxes/{id}/pause", a.setPaused(true))
	a.route("POST /v1/sandboxes/{id}/resume", a.setPaused(false))
	a.route("POST /v1/sandboxes/{id}/snapshots", a.takeSnapshot)
	a.route("POST /v1/sandboxes/{id}/restore", a.restoreSnapshot)
	a.route("GET /v1/snapshots", a.listSnapshots)
	a.route("GET /v1/snapshots/{name}", a.getSnapshot)
	a.route("DELETE /v1/snapshots/{name}", a.deleteSnapshot)
	a.route("POST /v1/sandboxes/{id}/tools/{tool}", a.callTool)
	a.route("POST /v1/sandboxes/{id}/exec", a.exec)
	a.route("POST /v1/sandboxes/{id}/processes", a.startProcess)
	a.route("GET /v1/sandboxes/{id}/processes", a.listProcesses)
	a.route("GET /v1/sandboxes/{id}/processes/{pid}", a.getProcess)
	a.route("GET /v1/sandboxes/{id}/processes/{pid}/output", a.processOutput)
	a.route("POST /v1/sandboxes/{id}/processes/{pid}/stdin", a.processStdin)
	a.route("POST /v1/sandboxes/{id}/processes/{pid}/signal", a.processSignal)
	a.route("POST /v1/sandboxes/{id}/processes/{pid}/wait", a.processWait)
	a.route("GET /v1/sandboxes/{id}/files", a.readFile)
	a.route("PUT /v1/sandboxes/{id}/files", a.writeFile)
	a.route("DELETE /v1/sandboxes/{id}/files", a.removeFile)
	a.route("GET /v1/sandboxes/{id}/files/stat", a.statFile)
	a.route("GET /v1/sandboxes/{id}/files/list", a.listFiles)
	a.route("POST /v1/sandboxes/{id}/files/symlink", a.symlink)
	a.route("POST /v1/sandboxes/{id}/files/executable", a.setExecutable)
	a.route("GET /v1/sandboxes/{id}/ports/{port}", a.dialPort)
	a.route("POST /v1/sandboxes/{id}/listeners", a.listen)
	a.route("GET /v1/sandboxes/{id}/listeners/{lid}/accept", a.accept)
	a.route("DELETE /v1/sandboxes/{id}/listeners/{lid}", a.closeListener)
}

// ServeHTTP routes a request. A path that is not clean ("..", "//") is refused here: the mux
// would answer it with a redirect in HTML.
func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The escaped path: "%2F" inside a segment (an id a client escaped) is not a separator.
	if p := r.URL.EscapedPath(); p == "" || path.Clean(p) != p {
		writeError(w, errs.New(errs.NotFound, "", "", "%s %q: no such endpoint (paths are clean: no \"..\", \"//\" or trailing \"/\")", r.Method, p))
		return
	}
	a.mux.ServeHTTP(w, r)
}

// health answers without a token: liveness and the version, nothing about sandboxes.
func (a *apiServer) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.Health{OK: true, Version: Version, Adapters: servedAdapters()})
}

// authenticate checks the bearer token (when the server has tokens) and puts its name in the
// request's context.
func (a *apiServer) authenticate(r *http.Request) error {
	if a.opt.Tokens == nil {
		*r = *r.WithContext(context.WithValue(r.Context(), principalKey{}, &token{}))
		return nil
	}
	h := r.Header.Get("Authorization")
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || secret == "" {
		return errs.New(api.CodeUnauthorized, "", "", "missing bearer token (Authorization: Bearer TOKEN)")
	}
	t := a.opt.Tokens.lookup(secret)
	if t == nil {
		return errs.New(api.CodeUnauthorized, "", "", "unknown token")
	}
	*r = *r.WithContext(context.WithValue(r.Context(), principalKey{}, t))
	return nil
}

// principal is the token of an authenticated request.
func principal(r *http.Request) *token {
	t, _ := r.Context().Value(principalKey{}).(*token)
	if t == nil {
		return &token{}
	}
	return t
}

// httpStatus is the status of an error by its code.
func httpStatus(code errs.Code) int {
	switch code {
	case api.CodeUnauthorized:
		return http.StatusUnauthorized
	case api.CodeForbidden:
		return http.StatusForbidden
	case api.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case errs.LimitExceeded:
		return http.StatusTooManyRequests
	case errs.InvalidInput, errs.PathInvalid, errs.PathEscape, errs.ContentTooLarge, errs.PatchTooLarge, errs.PatchFailed:
		return http.StatusBadRequest
	case errs.FileTooLarge:
		return http.StatusRequestEntityTooLarge
	case errs.NotFound, errs.SandboxUnavailable:
		return http.StatusNotFound
	case errs.Conflict:
		return http.StatusConflict
	case errs.ProcessTimeout, errs.ProcessFailed, errs.CommandFailed, errs.NetworkDisabled, errs.GitRemoteDisabled, errs.GrepFailed, errs.VerifyFailed:
		return http.StatusUnprocessableEntity
	case errs.IsolationUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, err error) {
	writeErrorWith(w, err, nil)
}

func writeErrorWith(w http.ResponseWriter, err error, result *api.ExecResult) {
	if errors.Is(err, context.Canceled) {
		err = errs.Wrap(errs.ProcessTimeout, "", "", err)
	}
	reply := errorReply(err)
	status := httpStatus(reply.Error.Code)
	if isPausedRefusal(reply.Error.Code, reply.Error.Details) {
		status = http.StatusConflict // the sandbox is there, in a state that refuses the call
	}
	writeJSON(w, status, api.Refusal{Error: reply.Error, Result: result})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		fmt.Fprintf(&b, `{"ok":false,"error":{"code":"INTERNAL","message":%q,"details":{}}}`+"\n", err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// decodeJSON reads a JSON request body into dst: one object, no unknown fields, at most
// MaxRequestBytes. An empty body is an empty object.
func (a *apiServer) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return errs.New(errs.InvalidInput, "", "", "request body: %v", err)
	}
	if dec.More() {
		return errs.New(errs.InvalidInput, "", "", "request body: more than one JSON value")
	}
	return nil
}

// readBody reads a JSON request body whole, at most MaxRequestBytes.
func (a *apiServer) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.opt.MaxRequestBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		e := errs.New(errs.ContentTooLarge, "", "", "request body is larger than %d bytes", a.opt.MaxRequestBytes)
		e.Details = map[string]any{"limit": a.opt.MaxRequestBytes}
		return nil, e
	}
	if err != nil {
		return nil, errs.Wrap(errs.InvalidInput, "", "", fmt.Errorf("request body: %w", err))
	}
	return body, nil
}

// queryInt reads an optional integer query parameter.
func queryInt(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errs.New(errs.InvalidInput, "", "", "query parameter %s: want a non-negative integer, got %q", name, v)
	}
	return n, nil
}
