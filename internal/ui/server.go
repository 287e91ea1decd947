// Package ui owns `sandboxer ui`: a local web page over the tool-call journal. It serves the
// page (plain HTML, CSS and JavaScript embedded in the binary: no build step, nothing loaded from
// the network) and the JSON endpoints the page reads, on a loopback address only, behind a
// random token. It reads the journal read-only (SQLite mode=ro and query_only) and never writes.
//
// Endpoints (every one needs the token, as ?token= or the cookie the page gets on its first load):
//
//	GET /                  the page
//	GET /api/runs          the runs, most recently active first (?limit=, default 500)
//	GET /api/tasks?run=R   a run's task attempts (node, iteration, attempt)
//	GET /api/calls         calls in recorded order: ?run=&tool=&status=&q=&after=&limit= (default
//	                       100, at most 1000); "next" is the cursor of the following page, and
//	                       polling with it brings the calls recorded since (live updates)
//	GET /api/calls/{id}    one call whole, with the retry warning of its attempt
package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"time"
)

//go:embed static
var static embed.FS

// cookieName holds the token in the browser after the first visit.
const cookieName = "sandboxer_ui_token"

// Page sizes of /api/calls.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// Server serves the page and the API over one journal. Close releases the journal.
type Server struct {
	store *store
	token string
	mux   *http.ServeMux
}

// New opens the journal at path read-only and makes a server with a fresh random token.
// Errors: the journal cannot be opened or is not a journal.
func New(ctx context.Context, path string) (*Server, error) {
	st, err := openStore(ctx, path)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	s := &Server{store: st, token: hex.EncodeToString(b), mux: http.NewServeMux()}
	files, _ := fs.Sub(static, "static")
	s.mux.Handle("GET /", http.FileServerFS(files))
	s.mux.HandleFunc("GET /api/runs", s.apiRuns)
	s.mux.HandleFunc("GET /api/tasks", s.apiTasks)
	s.mux.HandleFunc("GET /api/calls", s.apiCalls)
	s.mux.HandleFunc("GET /api/calls/{id}", s.apiCall)
	return s, nil
}

// Token is the secret every request must carry.
func (s *Server) Token() string { return s.token }

// Close closes the journal.
func (s *Server) Close() error { return s.store.Close() }

// ServeHTTP checks the token (the ?token= parameter or the cookie, compared in constant time)
// and answers 403 without it. A request whose ?token= is right gets the cookie (HttpOnly,
// SameSite=Strict), so the page's own requests carry the token without it in their URLs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query().Get("token"); q != "" && s.valid(q) {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.token, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode})
	} else if c, err := r.Cookie(cookieName); err != nil || !s.valid(c.Value) {
		http.Error(w, "forbidden: open the URL that sandboxer ui printed (it carries the token)", http.StatusForbidden)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	s.mux.ServeHTTP(w, r)
}

func (s *Server) valid(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) == 1
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	limit, ok := intParam(w, r, "limit", 500)
	if !ok {
		return
	}
	runs, err := s.store.listRuns(r.Context(), limit)
	reply(w, map[string]any{"runs": runs}, err)
}

func (s *Server) apiTasks(w http.ResponseWriter, r *http.Request) {
	tasks, err := s.store.listTasks(r.Context(), r.URL.Query().Get("run"))
	reply(w, map[string]any{"tasks": tasks}, err)
}

func (s *Server) apiCalls(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	limit, ok := intParam(w, r, "limit", defaultLimit)
	if !ok {
		return
	}
	after, ok := intParam(w, r, "after", 0)
	if !ok {
		return
	}
	q := Query{RunID: v.Get("run"), Tool: v.Get("tool"), Status: v.Get("status"), Text: v.Get("q"),
		After: int64(after), Limit: min(max(limit, 1), maxLimit)}
	calls, err := s.store.calls(r.Context(), q)
	next := q.After
	if len(calls) > 0 {
		next = calls[len(calls)-1].ID
	}
	// more: a full page came back, so there may be another one already.
	reply(w, map[string]any{"calls": calls, "next": next, "more": len(calls) == q.Limit}, err)
}

func (s *Server) apiCall(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "bad call id", http.StatusBadRequest)
		return
	}
	c, err := s.store.call(r.Context(), id)
	if errors.Is(err, errNoCall) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	reply(w, c, err)
}

// intParam reads a non-negative integer query parameter (def when absent); a bad one is a 400.
func intParam(w http.ResponseWriter, r *http.Request, name string, def int) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		http.Error(w, fmt.Sprintf("%s=%q: want a non-negative integer", name, s), http.StatusBadRequest)
		return 0, false
	}
	return n, true
}

// reply writes v as JSON, or a 500 for err.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// CheckListen refuses an address that is not host:port with a loopback host (127.0.0.0/8, ::1
// or localhost): the journal holds what agents read and ran, and the page is for this machine.
func CheckListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %q: not a loopback address (127.0.0.1, [::1] or localhost): the journal stays on this machine", addr)
	}
	return nil
}

// Serve serves s on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(shut)
	}()
	if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// URL is the address to open in a browser for a server listening on l.
func (s *Server) URL(l net.Listener) string {
	return "http://" + l.Addr().String() + "/?token=" + s.token
}
