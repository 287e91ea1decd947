package cli

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/snapshot"
)

// Pause, resume and file system snapshots over the API (issue 38; docs/snapshots.md, "Over the
// API"). A paused sandbox takes no commands (409 SANDBOX_UNAVAILABLE, details.paused) but can
// be snapshotted: its files do not change meanwhile. Each token has a catalog of its own.

// apiCatalogs are the server's snapshot catalogs, one per token: STATE_DIR/serve/snapshots/NAME
// (token names are file names: tokenNamePattern), "_" for a server without tokens. They outlive
// the server, unlike its sandboxes.
type apiCatalogs struct {
	dir  string
	mu   sync.Mutex
	cats map[string]*snapshot.Catalog
}

// anonymousCatalog is the catalog of a server without tokens: no token name starts with "_".
const anonymousCatalog = "_"

func newCatalogs(base Settings) *apiCatalogs {
	return &apiCatalogs{dir: filepath.Join(serveStateDir(base), "snapshots"), cats: map[string]*snapshot.Catalog{}}
}

// of returns t's catalog, opened on first use.
func (c *apiCatalogs) of(t *token) (*snapshot.Catalog, error) {
	name := t.Name
	if name == "" {
		name = anonymousCatalog
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cat := c.cats[name]; cat != nil {
		return cat, nil
	}
	cat, err := snapshot.Open(filepath.Join(c.dir, name), snapshot.Options{})
	if err != nil {
		return nil, err
	}
	c.cats[name] = cat
	return cat, nil
}

// close closes every catalog opened.
func (c *apiCatalogs) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for name, cat := range c.cats {
		err = errors.Join(err, cat.Close())
		delete(c.cats, name)
	}
	return err
}

// errPaused is the refusal of a command to a paused sandbox: 409 (writeErrorWith).
func errPaused(id string) error {
	e := errs.New(errs.SandboxUnavailable, "", "", "sandbox %s is paused; resume it first (POST /v1/sandboxes/%s/resume)", id, id)
	e.Details = map[string]any{"paused": true}
	return e
}

// isPausedRefusal reports whether a refusal is errPaused's.
func isPausedRefusal(code errs.Code, details map[string]any) bool {
	paused, _ := details["paused"].(bool)
	return code == errs.SandboxUnavailable && paused
}

func (box *apiSandbox) isPaused() bool {
	box.mu.Lock()
	defer box.mu.Unlock()
	return box.paused
}

// acquireRunning is acquire for calls that run something in the sandbox: refused while it is
// paused (its processes, the agent's included, are frozen: the call would wait for the resume).
func (reg *apiRegistry) acquireRunning(r *http.Request, id string) (*apiSandbox, func(), error) {
	box, release, err := reg.acquire(r, id)
	if err != nil {
		return nil, nil, err
	}
	if box.isPaused() {
		release()
		return nil, nil, errPaused(box.id)
	}
	return box, release, nil
}

// setPaused is the handler of POST .../pause (paused true) and .../resume: the adapter's
// Pauser; pausing a paused sandbox and resuming a running one are no-ops.
func (a *apiServer) setPaused(paused bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, box, release, err := fileOp[adapter.Pauser](a, r, "pause a sandbox (docker and oci can)")
		if err != nil {
			return err
		}
		defer release()
		box.pauseMu.Lock()
		defer box.pauseMu.Unlock()
		if paused {
			// Refuse new commands first: one let in now would freeze with the rest.
			box.setPausedFlag(true)
			if err := p.Pause(r.Context()); err != nil {
				box.setPausedFlag(false)
				return err
			}
		} else {
			if err := p.Resume(r.Context()); err != nil {
				return err
			}
			box.setPausedFlag(false)
		}
		writeJSON(w, http.StatusOK, box.view())
		return nil
	}
}

func (box *apiSandbox) setPausedFlag(paused bool) {
	box.mu.Lock()
	box.paused = paused
	box.mu.Unlock()
}

// resumeForRemoval thaws a paused sandbox before it is stopped (a frozen container's processes
// are not all killable while frozen). Best effort: the removal reports what fails after.
func (box *apiSandbox) resumeForRemoval(ctx context.Context) {
	if p, ok := box.sb.(adapter.Pauser); ok && box.isPaused() {
		_ = p.Resume(ctx)
		box.setPausedFlag(false)
	}
}

func snapshotOf(m snapshot.Manifest) api.Snapshot {
	return api.Snapshot{Name: m.Name, Created: m.Created, Source: m.Source, Adapter: m.Adapter, Files: m.Files, Bytes: m.Bytes,
		Read: m.Read, Stored: m.Stored, Skipped: m.Skipped}
}

// takeSnapshot is POST .../snapshots: the workspace into the token's catalog as req.Name (its
// source is the sandbox's id). A paused sandbox is snapshotted as it stands.
func (a *apiServer) takeSnapshot(w http.ResponseWriter, r *http.Request) error {
	var req api.SnapshotRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := snapshot.CheckName(req.Name); err != nil {
		return err
	}
	cat, err := a.cats.of(principal(r))
	if err != nil {
		return err
	}
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	m, err := cat.TakeAs(r.Context(), box.sb, req.Name, box.id)
	if err != nil {
		return err
	}
	a.opt.Log.Printf("snapshot %s of sandbox %s taken: %d files, %d bytes", m.Name, box.id, m.Files, m.Bytes)
	writeJSON(w, http.StatusCreated, snapshotOf(m))
	return nil
}

// restoreSnapshot is POST .../restore: the snapshot into the sandbox's workspace, verified
// (VERIFY_FAILED names the paths otherwise). Refused while the sandbox is paused.
func (a *apiServer) restoreSnapshot(w http.ResponseWriter, r *http.Request) error {
	var req api.RestoreRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	cat, err := a.cats.of(principal(r))
	if err != nil {
		return err
	}
	m, err := cat.Get(r.Context(), req.Snapshot)
	if err != nil {
		return err
	}
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	if err := cat.Restore(r.Context(), req.Snapshot, box.sb, snapshot.RestoreOptions{Replace: req.Replace}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Restored{Snapshot: m.Name, Sandbox: box.id, Files: m.Files, Bytes: m.Bytes})
	return nil
}

// restoreNew restores the token's snapshot name into a sandbox being created (not registered
// yet, so nobody else uses it).
func (a *apiServer) restoreNew(ctx context.Context, t *token, name string, box *apiSandbox) error {
	cat, err := a.cats.of(t)
	if err != nil {
		return err
	}
	return cat.Restore(ctx, name, box.sb, snapshot.RestoreOptions{})
}

// checkSnapshot refuses a create from a snapshot the token's catalog does not have, before any
// sandbox is made.
func (a *apiServer) checkSnapshot(ctx context.Context, t *token, name string) error {
	cat, err := a.cats.of(t)
	if err != nil {
		return err
	}
	_, err = cat.Get(ctx, name)
	return err
}

func (a *apiServer) listSnapshots(w http.ResponseWriter, r *http.Request) error {
	cat, err := a.cats.of(principal(r))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	list, err := cat.List(r.Context(), snapshot.Filter{Prefix: q.Get("prefix"), Source: q.Get("source")})
	if err != nil {
		return err
	}
	out := api.SnapshotList{Snapshots: make([]api.Snapshot, 0, len(list))}
	for _, in := range list {
		out.Snapshots = append(out.Snapshots, api.Snapshot{Name: in.Name, Created: in.Created, Source: in.Source,
			Adapter: in.Adapter, Files: in.Files, Bytes: in.Bytes})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *apiServer) getSnapshot(w http.ResponseWriter, r *http.Request) error {
	cat, err := a.cats.of(principal(r))
	if err != nil {
		return err
	}
	m, err := cat.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	v := snapshotOf(m)
	v.Read, v.Stored = 0, 0 // figures of the take, not of the snapshot
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (a *apiServer) deleteSnapshot(w http.ResponseWriter, r *http.Request) error {
	cat, err := a.cats.of(principal(r))
	if err != nil {
		return err
	}
	if err := cat.Delete(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	a.opt.Log.Printf("snapshot %s deleted", r.PathValue("name"))
	w.WriteHeader(http.StatusNoContent)
	return nil
}
