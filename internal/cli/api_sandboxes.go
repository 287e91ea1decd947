package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// apiSandbox is one sandbox of the server: open for as long as it lives, owned by one token.
type apiSandbox struct {
	id, owner string
	s         Settings           // its settings: the server's with the create request's
	o         lifecycle.Options  // optionsOf(s)
	lasting   *lifecycle.Session // nil for a memory sandbox (it lives in the server's memory only)
	sb        adapter.Sandbox
	created   time.Time
	memory    int64 // what counts against the owner's memory quota
	forkOf    string

	pauseMu sync.Mutex // one pause or resume at a time

	mu       sync.Mutex
	paused   bool // refuses what runs in it (acquireRunning)
	expires  time.Time
	idle     time.Duration // 0: no idle timeout
	lastUsed time.Time
	busy     int // calls in progress: a busy sandbox is never idle
	// listeners are the sandbox's open port listeners by id (closed with it: Stop).
	listeners    map[string]net.Listener
	nextListener int

	acceptMu sync.Mutex // one accept at a time
	pending  net.Conn   // a connection accepted for a client that went away, for the next
}

// apiRegistry holds the server's sandboxes. Their records live in STATE_DIR/serve (not where the
// CLI's long-lived sandboxes are): a server that starts removes what an earlier one left, and a
// lock keeps two servers off one directory.
type apiRegistry struct {
	opt  apiOptions
	mgr  *lifecycle.Manager
	lock *os.File

	mu    sync.Mutex
	boxes map[string]*apiSandbox

	stop     chan struct{}
	reaped   chan struct{}
	closeOne sync.Once
}

// count is how many sandboxes the server holds (a metrics gauge).
func (r *apiRegistry) count() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(len(r.boxes))
}

// serveStateDir is where a server keeps its sandboxes' records.
func serveStateDir(s Settings) string { return filepath.Join(s.StateDir, "serve") }

func openRegistry(ctx context.Context, opt apiOptions) (*apiRegistry, error) {
	dir := serveStateDir(opt.Base)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("another sandboxerd serve uses %s (its lock is held): give this one its own --state-dir", dir)
	}
	reg := &apiRegistry{opt: opt, mgr: lifecycle.NewManager(dir), lock: lock, boxes: map[string]*apiSandbox{},
		stop: make(chan struct{}), reaped: make(chan struct{})}
	// What an earlier server left (it crashed, or was killed): nothing outlives its server.
	recs, err := reg.mgr.List()
	if err != nil {
		lock.Close()
		return nil, err
	}
	o := optionsOf(opt.Base)
	for _, rec := range recs {
		if err := reg.mgr.Remove(ctx, rec.ID, o); err != nil {
			opt.Log.Printf("sandbox %s left by an earlier server: %v", rec.ID, err)
			if err := reg.mgr.Forget(rec.ID); err != nil {
				continue
			}
		}
		opt.Log.Printf("removed sandbox %s (%s) left by an earlier server", rec.ID, rec.Adapter)
	}
	go reg.reap()
	return reg, nil
}

// reap removes the sandboxes whose lifetime or idle timeout has passed, every second.
func (reg *apiRegistry) reap() {
	defer close(reg.reaped)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-reg.stop:
			return
		case now := <-tick.C:
			for _, box := range reg.expired(now) {
				reg.opt.Log.Printf("sandbox %s expired: removing it", box.id)
				if err := reg.remove(context.Background(), box); err != nil {
					reg.opt.Log.Printf("sandbox %s: %v", box.id, err)
				}
			}
		}
	}
}

func (reg *apiRegistry) expired(now time.Time) []*apiSandbox {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var out []*apiSandbox
	for _, box := range reg.boxes {
		box.mu.Lock()
		idle := box.idle > 0 && box.busy == 0 && now.Sub(box.lastUsed) >= box.idle
		if now.After(box.expires) || idle {
			out = append(out, box)
		}
		box.mu.Unlock()
	}
	return out
}

// Close removes every sandbox and releases the state directory. Idempotent.
func (reg *apiRegistry) Close() error {
	var err error
	reg.closeOne.Do(func() {
		close(reg.stop)
		<-reg.reaped
		reg.mu.Lock()
		boxes := make([]*apiSandbox, 0, len(reg.boxes))
		for _, b := range reg.boxes {
			boxes = append(boxes, b)
		}
		reg.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		var emu sync.Mutex
		for _, box := range boxes {
			wg.Go(func() {
				if e := reg.remove(ctx, box); e != nil {
					emu.Lock()
					err = errors.Join(err, fmt.Errorf("sandbox %s: %w", box.id, e))
					emu.Unlock()
				}
			})
		}
		wg.Wait()
		reg.lock.Close()
	})
	return err
}

// remove takes box out of the registry (later calls do not find it), stops it (ending its
// running commands) and destroys what it holds. A box already removed is not an error.
func (reg *apiRegistry) remove(ctx context.Context, box *apiSandbox) error {
	reg.mu.Lock()
	if reg.boxes[box.id] != box {
		reg.mu.Unlock()
		return nil
	}
	delete(reg.boxes, box.id)
	reg.mu.Unlock()
	box.resumeForRemoval(ctx)
	err := box.sb.Stop(ctx)
	box.acceptMu.Lock()
	if box.pending != nil {
		box.pending.Close()
		box.pending = nil
	}
	box.acceptMu.Unlock()
	if box.lasting != nil {
		if e := reg.mgr.Remove(ctx, box.id, box.o); e != nil {
			_ = reg.mgr.Forget(box.id) // nothing outlives its server: what could not be destroyed is in the error
			err = errors.Join(err, e)
		}
	}
	return err
}

// add registers a new sandbox, checking the owner's quotas again under the lock (two creates
// racing for the last place).
func (reg *apiRegistry) add(box *apiSandbox, t *token) error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if err := reg.quotaLocked(t, box.memory); err != nil {
		return err
	}
	reg.boxes[box.id] = box
	return nil
}

// quotaLocked refuses one more sandbox of memory bytes for t when its quotas are full.
func (reg *apiRegistry) quotaLocked(t *token, memory int64) error {
	n, mem := 0, int64(0)
	for _, b := range reg.boxes {
		if b.owner == t.Name {
			n++
			mem += b.memory
		}
	}
	if t.MaxSandboxes > 0 && n+1 > t.MaxSandboxes {
		e := errs.New(errs.LimitExceeded, "", "", "token %q has %d sandboxes, its quota: delete one first", t.Name, n)
		e.Details = map[string]any{"quota": "maxSandboxes", "limit": t.MaxSandboxes}
		return e
	}
	if t.MaxMemoryBytes > 0 && mem+memory > t.MaxMemoryBytes {
		e := errs.New(errs.LimitExceeded, "", "", "token %q: %d bytes of memory in use and %d asked, more than its quota of %d", t.Name, mem, memory, t.MaxMemoryBytes)
		e.Details = map[string]any{"quota": "maxMemoryBytes", "limit": t.MaxMemoryBytes}
		return e
	}
	return nil
}

// acquire finds the caller's sandbox id and marks it in use until release. Another token's
// sandbox is reported exactly as a missing one.
func (reg *apiRegistry) acquire(r *http.Request, id string) (*apiSandbox, func(), error) {
	t := principal(r)
	reg.mu.Lock()
	box := reg.boxes[id]
	reg.mu.Unlock()
	if box == nil || box.owner != t.Name {
		return nil, nil, errs.New(errs.SandboxUnavailable, "", "", "no sandbox %q (it never existed, expired or was deleted)", id)
	}
	box.mu.Lock()
	box.busy++
	box.lastUsed = time.Now()
	box.mu.Unlock()
	return box, func() {
		box.mu.Lock()
		box.busy--
		box.lastUsed = time.Now()
		box.mu.Unlock()
	}, nil
}

func (box *apiSandbox) view() api.Sandbox {
	box.mu.Lock()
	defer box.mu.Unlock()
	v := api.Sandbox{ID: box.id, Adapter: box.s.Adapter, Owner: box.owner, ForkOf: box.forkOf, CreatedAt: box.created,
		ExpiresAt: box.expires, IdleTimeoutSeconds: int64(box.idle / time.Second), LastUsedAt: box.lastUsed,
		MemoryBytes: box.memory, AllowNetwork: box.s.AllowNetwork, AllowHosts: box.s.AllowHosts, Paused: box.paused}
	if v.AllowHosts == nil {
		v.AllowHosts = []string{}
	}
	if box.s.Adapter != "local" && box.s.Adapter != "memory" {
		v.Image = box.s.Image
	}
	if c, ok := box.sb.(adapter.Capable); ok {
		caps := c.Capabilities()
		v.Capabilities = &caps
	}
	return v
}

func badRequest(format string, args ...any) error {
	return errs.New(errs.InvalidInput, "", "", format, args...)
}

// settings applies the request to the server's settings.
func createSettings(req api.CreateRequest, base Settings) (Settings, error) {
	s := base
	s.Root, s.Sandbox, s.Store = "", "", ""
	if req.Adapter != "" {
		s.Adapter = req.Adapter
	}
	if !knownAdapter(s.Adapter) {
		return s, errs.Wrap(errs.InvalidInput, "", "", unknownAdapter(s.Adapter))
	}
	if !served(s.Adapter) {
		return s, badRequest("adapter %q is not served: a server runs its sandboxes itself (it serves %v)", s.Adapter, servedAdapters())
	}
	if req.Image != "" {
		// An image is a name of the local daemon's images: the oci adapter's archive forms
		// read a path of the server's host, which a caller must not name.
		if strings.HasPrefix(req.Image, "oci-layout:") || strings.HasPrefix(req.Image, "docker-archive:") || strings.ContainsAny(req.Image, " \t\n") {
			return s, badRequest("image %q: over the API an image is a name of the local docker daemon's images (no oci-layout: or docker-archive: paths)", req.Image)
		}
		s.Image, s.KubernetesImage = req.Image, req.Image
	}
	if req.Runtime != "" {
		if !slices.Contains(oci.Runtimes, req.Runtime) {
			return s, badRequest("runtime %q: want one of %v", req.Runtime, oci.Runtimes)
		}
		s.Runtime = req.Runtime
	}
	if req.MemoryBytes != nil {
		if *req.MemoryBytes < 0 {
			return s, badRequest("memoryBytes must not be negative")
		}
		s.Memory = *req.MemoryBytes
	}
	if req.CPUs != nil {
		if *req.CPUs < 0 {
			return s, badRequest("cpus must not be negative")
		}
		s.CPUs = *req.CPUs
	}
	if req.Pids != nil {
		if *req.Pids < 0 {
			return s, badRequest("pids must not be negative")
		}
		s.Pids = *req.Pids
	}
	if req.DiskBytes != nil {
		if *req.DiskBytes < -1 {
			return s, badRequest("diskBytes must be -1 (no cap), 0 (the adapter's default) or more")
		}
		s.Disk = *req.DiskBytes
	}
	if req.AllowNetwork || req.AllowHosts != nil {
		// The server's secrets (serve --secret) are bound to the server's hosts and rules: a
		// sandbox that names a network of its own gets none of them.
		s.AllowNetwork, s.AllowHosts, s.Secrets, s.Inject = req.AllowNetwork, req.AllowHosts, nil, nil
	}
	if s.AllowNetwork && len(s.AllowHosts) > 0 {
		return s, badRequest("allowNetwork and allowHosts exclude each other: allowNetwork opens every host")
	}
	if len(s.AllowHosts) > 0 {
		if err := egress.ValidateHosts(s.AllowHosts); err != nil {
			return s, err
		}
	}
	if req.TTLSeconds < 0 {
		return s, badRequest("ttlSeconds must not be negative")
	}
	if req.IdleTimeoutSeconds != nil && *req.IdleTimeoutSeconds < 0 {
		return s, badRequest("idleTimeoutSeconds must not be negative (0: none)")
	}
	return s, nil
}

// lifetime is a sandbox's TTL: the request's, else the server's default, never more than the
// server's and the token's maximum (a request asking more is refused; the default is cut).
func (a *apiServer) lifetime(t *token, seconds int64) (time.Duration, error) {
	ttl := a.opt.TTL
	if seconds > 0 {
		ttl = time.Duration(seconds) * time.Second
	}
	max := a.opt.MaxTTL
	if t.MaxTTLSeconds > 0 && (max == 0 || time.Duration(t.MaxTTLSeconds)*time.Second < max) {
		max = time.Duration(t.MaxTTLSeconds) * time.Second
	}
	if max > 0 && ttl > max && seconds == 0 {
		ttl = max // the default, cut to what the token may have
	}
	if max > 0 && ttl > max {
		e := errs.New(api.CodeForbidden, "", "", "ttlSeconds %d is more than the %d this token may ask", int64(ttl/time.Second), int64(max/time.Second))
		e.Details = map[string]any{"quota": "maxTTLSeconds", "limit": int64(max / time.Second)}
		return 0, e
	}
	return ttl, nil
}

func (a *apiServer) createSandbox(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	t := principal(r)
	s, err := createSettings(req, a.opt.Base)
	if err != nil {
		return err
	}
	if !t.mayUse(s.Adapter) {
		return errs.New(api.CodeForbidden, "", "", "token %q may not use the %s adapter (it may use %v)", t.Name, s.Adapter, t.Adapters)
	}
	ttl, err := a.lifetime(t, req.TTLSeconds)
	if err != nil {
		return err
	}
	idle := a.opt.Idle
	if req.IdleTimeoutSeconds != nil {
		idle = time.Duration(*req.IdleTimeoutSeconds) * time.Second
	}
	a.reg.mu.Lock()
	err = a.reg.quotaLocked(t, s.Memory)
	a.reg.mu.Unlock()
	if err != nil {
		return err
	}
	if req.FromSnapshot != "" {
		if err := a.checkSnapshot(r.Context(), t, req.FromSnapshot); err != nil {
			return err
		}
	}
	box, err := a.reg.open(r.Context(), s, t)
	if err != nil {
		return err
	}
	if req.FromSnapshot != "" {
		if err := a.restoreNew(r.Context(), t, req.FromSnapshot, box); err != nil {
			a.reg.discard(box)
			return err
		}
	}
	box.expires, box.idle = box.created.Add(ttl), idle
	if err := a.reg.add(box, t); err != nil {
		a.reg.discard(box)
		return err
	}
	a.opt.Log.Printf("sandbox %s (%s) created for %q", box.id, s.Adapter, t.Name)
	writeJSON(w, http.StatusCreated, box.view())
	return nil
}

// open makes a sandbox of s: a record and a live handle (memory: a handle only).
func (reg *apiRegistry) open(ctx context.Context, s Settings, t *token) (*apiSandbox, error) {
	now := time.Now()
	box := &apiSandbox{owner: t.Name, s: s, o: optionsOf(s), created: now, lastUsed: now, memory: s.Memory}
	if a, ok := lifecycle.Lookup(s.Adapter); !ok || a.InProcess { // !ok: a test binary's adapter
		sb, err := openEphemeral(ctx, s)
		if err != nil {
			return nil, err
		}
		box.id, box.sb = lifecycle.NewID(), sb
		return box, nil
	}
	rec, err := reg.mgr.Create(ctx, box.o)
	if err != nil {
		return nil, inCLIWords(err)
	}
	box.id = rec.ID
	return box, reg.attach(ctx, box)
}

// attach opens the live handle of box's recorded sandbox; on failure nothing of it is left.
func (reg *apiRegistry) attach(ctx context.Context, box *apiSandbox) error {
	ls, err := reg.mgr.Attach(ctx, box.id, box.o)
	if err != nil {
		discardSandbox(ctx, reg.mgr, box.id, box.o)
		return err
	}
	box.lasting, box.sb = ls, ls.Sandbox
	return nil
}

// discard removes a sandbox that was never registered.
func (reg *apiRegistry) discard(box *apiSandbox) {
	ctx := context.Background()
	box.sb.Stop(ctx)
	if box.lasting != nil {
		discardSandbox(ctx, reg.mgr, box.id, box.o)
	}
}

func (a *apiServer) listSandboxes(w http.ResponseWriter, r *http.Request) error {
	t := principal(r)
	a.reg.mu.Lock()
	var boxes []*apiSandbox
	for _, b := range a.reg.boxes {
		if b.owner == t.Name {
			boxes = append(boxes, b)
		}
	}
	a.reg.mu.Unlock()
	sort.Slice(boxes, func(i, j int) bool { return boxes[i].created.Before(boxes[j].created) })
	views := make([]api.Sandbox, 0, len(boxes))
	for _, b := range boxes {
		views = append(views, b.view())
	}
	writeJSON(w, http.StatusOK, api.SandboxList{Sandboxes: views})
	return nil
}

func (a *apiServer) getSandbox(w http.ResponseWriter, r *http.Request) error {
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	writeJSON(w, http.StatusOK, box.view())
	return nil
}

func (a *apiServer) deleteSandbox(w http.ResponseWriter, r *http.Request) error {
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	release()
	if err := a.reg.remove(r.Context(), box); err != nil {
		return err
	}
	a.opt.Log.Printf("sandbox %s deleted", box.id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *apiServer) extendSandbox(w http.ResponseWriter, r *http.Request) error {
	var req api.ExtendRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.TTLSeconds <= 0 {
		return badRequest("ttlSeconds must be more than 0: the sandbox's lifetime from now")
	}
	if req.IdleTimeoutSeconds != nil && *req.IdleTimeoutSeconds < 0 {
		return badRequest("idleTimeoutSeconds must not be negative (0: none)")
	}
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	ttl, err := a.lifetime(principal(r), req.TTLSeconds)
	if err != nil {
		return err
	}
	box.mu.Lock()
	box.expires = time.Now().Add(ttl)
	if req.IdleTimeoutSeconds != nil {
		box.idle = time.Duration(*req.IdleTimeoutSeconds) * time.Second
	}
	box.mu.Unlock()
	writeJSON(w, http.StatusOK, box.view())
	return nil
}

func (a *apiServer) forkSandbox(w http.ResponseWriter, r *http.Request) error {
	var req api.ExtendRequest // optional lifetime of the fork
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	src, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	t := principal(r)
	ttl, err := a.lifetime(t, req.TTLSeconds)
	if err != nil {
		return err
	}
	a.reg.mu.Lock()
	err = a.reg.quotaLocked(t, src.memory)
	a.reg.mu.Unlock()
	if err != nil {
		return err
	}
	now := time.Now()
	box := &apiSandbox{owner: t.Name, s: src.s, o: src.o, created: now, lastUsed: now, memory: src.memory, forkOf: src.id}
	src.mu.Lock()
	box.idle = src.idle
	src.mu.Unlock()
	if req.IdleTimeoutSeconds != nil {
		box.idle = time.Duration(*req.IdleTimeoutSeconds) * time.Second
	}
	box.expires = now.Add(ttl)
	if src.lasting == nil {
		f, ok := src.sb.(adapter.Forker)
		if !ok {
			return errs.New(errs.InvalidInput, "", "", "a %s sandbox cannot be forked", src.s.Adapter)
		}
		box.id = lifecycle.NewID()
		if box.sb, err = f.Fork(r.Context()); err != nil {
			return err
		}
	} else {
		rec, _, err := a.reg.mgr.Fork(r.Context(), src.lasting, src.o)
		if err != nil {
			return inCLIWords(err)
		}
		box.id = rec.ID
		if err := a.reg.attach(r.Context(), box); err != nil {
			return err
		}
	}
	if err := a.reg.add(box, t); err != nil {
		a.reg.discard(box)
		return err
	}
	writeJSON(w, http.StatusCreated, box.view())
	return nil
}
