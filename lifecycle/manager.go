package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// Manager keeps the records of long-lived sandboxes in a directory (STATE/sandboxes/ID), so that
// one process creates a sandbox and another attaches to it. Its methods are safe to call from
// several goroutines and processes; two removing one sandbox at once is for the caller to avoid.
type Manager struct{ rs records }

// NewManager returns the Manager of the records under dir (created by the first Create). dir is
// also where local sandboxes' workspaces live; the adapters' own state is Options.StateDir.
func NewManager(dir string) *Manager { return &Manager{rs: records{root: dir}} }

// Dir returns the records' directory.
func (m *Manager) Dir() string { return m.rs.root }

// Get returns the record of id. Errors: errs.InvalidInput for a malformed id (see CheckID),
// errs.NotFound when there is no such sandbox.
func (m *Manager) Get(id string) (Record, error) { return m.rs.get(id) }

// List returns every record, oldest first.
func (m *Manager) List() ([]Record, error) { return m.rs.list() }

// Create makes a long-lived sandbox of o.Adapter and saves its record. On failure nothing is left:
// no record, no workspace, no container. Errors: errs.InvalidInput for an unknown adapter or
// invalid options, ErrInProcess for an adapter whose sandboxes cannot outlive this process, or
// the adapter's (errs.SandboxUnavailable when it cannot run here).
func (m *Manager) Create(ctx context.Context, o Options) (Record, error) {
	a, err := lookup(o.Adapter)
	if err != nil {
		return Record{}, err
	}
	if err := o.resolveEgress(); err != nil {
		return Record{}, err
	}
	rec := Record{ID: NewID(), Adapter: a.Name, CreatedAt: time.Now().UTC(), Network: NetworkOf(o)}
	if a.InProcess || a.Name == "remote" {
		rec.Network = nil // the memory adapter refuses a network; a server keeps its own
	}
	return m.make(ctx, a, o, rec, func(rec *Record) error { return a.d.create(ctx, o, m.rs, rec) })
}

// make fills rec by fill and saves it; on failure it discards what fill made.
func (m *Manager) make(ctx context.Context, a Adapter, o Options, rec Record, fill func(*Record) error) (Record, error) {
	err := fill(&rec)
	if err == nil {
		err = m.rs.save(rec)
	}
	if err != nil {
		m.discard(ctx, a, o, rec)
		return Record{}, err
	}
	return rec, nil
}

// discard releases what a failed Create or Fork made of rec: its backing, when it got one, and
// its directory.
func (m *Manager) discard(ctx context.Context, a Adapter, o Options, rec Record) {
	if rec.Backend != "" {
		_ = a.d.destroy(context.WithoutCancel(ctx), o, rec)
	}
	_ = m.rs.delete(rec.ID)
}

// Session is this process's use of a long-lived sandbox (Manager.Attach). Detach or Close ends
// it and leaves the sandbox for the next Attach; Manager.Remove ends the sandbox.
type Session struct {
	Sandbox adapter.Sandbox
	Record  Record

	detach func(ctx context.Context) error
	follow func() // stops following the record's network policy
	once   sync.Once
	err    error
}

// Detach ends this process's use of the sandbox: its foreground commands are ended, the
// sandbox and its files stay. Idempotent and safe from two goroutines: later calls return the
// first one's result.
func (s *Session) Detach(ctx context.Context) error {
	s.once.Do(func() {
		if s.follow != nil {
			s.follow()
		}
		s.err = s.detach(ctx)
	})
	return s.err
}

// Close is Detach with at most 30 seconds.
func (s *Session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Detach(ctx)
}

// Attach reopens the long-lived sandbox id with o (whose Adapter is not used: the record's is).
// When o names no network (AllowNetwork, AllowHosts, Secrets), the sandbox gets the record's
// policy (Network), and this session follows its changes (SetNetwork) until Detach.
// Errors: errs.InvalidInput for a malformed id, errs.SandboxUnavailable when there is no such
// sandbox, its adapter is not in this build, or its backing (workspace, container, pod) is gone;
// ErrInProcess for a record of an in-process adapter.
func (m *Manager) Attach(ctx context.Context, id string, o Options) (*Session, error) {
	rec, err := m.rs.get(id)
	if errors.Is(err, errs.NotFound) {
		return nil, errs.New(errs.SandboxUnavailable, "sandbox", "", "no sandbox %q in %s", id, m.rs.root)
	}
	if err != nil {
		return nil, err
	}
	a, ok := Lookup(rec.Adapter)
	if !ok {
		return nil, errs.New(errs.SandboxUnavailable, "sandbox", "", "sandbox %s: adapter %q is not in this build", rec.ID, rec.Adapter)
	}
	o, recorded := withRecordNetwork(o, rec)
	if err := o.resolveEgress(); err != nil {
		return nil, err
	}
	sb, err := a.d.attach(ctx, o, rec)
	if err != nil {
		return nil, err
	}
	s := &Session{Sandbox: sb, Record: rec, detach: func(ctx context.Context) error { return a.d.detach(ctx, sb) }}
	if p := egress.Of(sb); recorded && p != nil {
		s.follow = m.follow(rec.ID, p, rec.Network, o.LookupEnv)
	}
	return s, nil
}

// Remove destroys the long-lived sandbox id (its container or pod; a local workspace) and
// deletes its record. A sandbox whose backing is already gone is removed without error; one of
// an adapter not in this build loses its record only. Errors: as Get, or the adapter's when it
// could not destroy the backing (the record is kept, to try again).
func (m *Manager) Remove(ctx context.Context, id string, o Options) error {
	rec, err := m.rs.get(id)
	if err != nil {
		return err
	}
	if a, ok := Lookup(rec.Adapter); ok {
		if err := a.d.destroy(ctx, o, rec); err != nil && !errors.Is(err, errs.NotFound) {
			return fmt.Errorf("sandbox %s: %w", id, err)
		}
	}
	return m.rs.delete(id)
}

// Pause freezes the processes of the long-lived sandbox id where they are (adapter.Pauser: the
// cgroup freezer of docker, runc and crun, gVisor's own under runsc) until Resume; meanwhile it
// costs no CPU and cannot be attached to (errs.SandboxUnavailable says it is paused). Pause of a
// paused sandbox and Resume of a running one are no-ops. A remote sandbox is paused by its server
// (docker and oci there). Errors: as Get; errs.InvalidInput for an adapter without pause (local:
// its processes live with the process that runs them; memory, kubernetes); the adapter's.
func (m *Manager) Pause(ctx context.Context, id string, o Options) error {
	return m.setPaused(ctx, id, o, true)
}

// Resume lets a paused sandbox's processes go on where they were.
func (m *Manager) Resume(ctx context.Context, id string, o Options) error {
	return m.setPaused(ctx, id, o, false)
}

func (m *Manager) setPaused(ctx context.Context, id string, o Options, paused bool) error {
	rec, err := m.rs.get(id)
	if err != nil {
		return err
	}
	a, ok := Lookup(rec.Adapter)
	if !ok || a.d.setPaused == nil {
		return errs.New(errs.InvalidInput, "sandbox", "", "sandbox %s: the %s adapter cannot pause a sandbox (docker and oci can)", id, rec.Adapter)
	}
	return a.d.setPaused(ctx, o, rec, paused)
}

// Forget deletes the record of id (and the local workspace in its directory) without touching
// its backing: for a caller that released it otherwise, or gave up on it. Errors: as Get.
func (m *Manager) Forget(id string) error { return m.rs.delete(id) }

// Alive reports whether the backing of rec (its workspace, container or pod) still exists.
// Errors: the adapter's (its daemon or cluster does not answer), or an adapter not in this build.
func (m *Manager) Alive(ctx context.Context, rec Record, o Options) (bool, error) {
	a, ok := Lookup(rec.Adapter)
	if !ok {
		return false, errs.New(errs.SandboxUnavailable, "sandbox", "", "sandbox %s: adapter %q is not in this build", rec.ID, rec.Adapter)
	}
	return a.d.alive(ctx, o, rec)
}

// PruneReport is what Prune removed.
type PruneReport struct {
	// Leftovers are what crashed processes left behind (ephemeral containers and pods, never a
	// long-lived sandbox), by adapter.
	Leftovers []Leftover
	// Warnings say which adapters answered but could not list or remove their leftovers; an
	// adapter that cannot run here (no daemon, no cluster) is not one.
	Warnings []error
	// Removed are the ids of the records whose backing was gone.
	Removed []string
}

// Leftover is one sandbox a crashed process left behind.
type Leftover struct {
	Adapter string
	ID      string // the adapter's id
}

// Prune removes what crashed processes left behind, on every adapter of this build that is
// reachable, and the records whose backing is gone (those of adapters not in this build are left
// alone). The report says what it removed until the error, if any.
func (m *Manager) Prune(ctx context.Context, o Options) (PruneReport, error) {
	var rep PruneReport
	recs, err := m.rs.list()
	if err != nil {
		return rep, err
	}
	for _, a := range Adapters() {
		if a.d.prune == nil {
			continue
		}
		ids, err := a.d.prune(ctx, o)
		if err != nil && !errors.Is(err, errs.SandboxUnavailable) {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("%s prune: %w", a.Name, err))
		}
		for _, id := range ids {
			rep.Leftovers = append(rep.Leftovers, Leftover{Adapter: a.Name, ID: id})
		}
	}
	for _, r := range recs {
		if _, ok := Lookup(r.Adapter); !ok {
			continue
		}
		if alive, err := m.Alive(ctx, r, o); err != nil || alive {
			continue
		}
		if err := m.Remove(ctx, r.ID, o); err != nil {
			return rep, err
		}
		rep.Removed = append(rep.Removed, r.ID)
	}
	return rep, nil
}

// Fork makes a new long-lived sandbox from a copy of src's workspace (files, and for containers
// what the image holds), records it (ForkOf names src) and returns its record, with what the copy
// left out (FIFOs, sockets, devices: the adapters that copy on the host, local and oci). On
// failure nothing of the fork is left. The copy is bounded by the ForkMaxFileBytes of the Options
// src was attached with. Errors: the adapter's (a file over the bound fails the fork),
// ErrInProcess for an in-process adapter.
func (m *Manager) Fork(ctx context.Context, src *Session, o Options) (Record, adapter.CopyReport, error) {
	a, ok := Lookup(src.Record.Adapter)
	if !ok {
		return Record{}, adapter.CopyReport{}, errs.New(errs.SandboxUnavailable, "fork", "", "sandbox %s: adapter %q is not in this build", src.Record.ID, src.Record.Adapter)
	}
	if err := o.resolveEgress(); err != nil {
		return Record{}, adapter.CopyReport{}, err
	}
	rec := src.Record
	rec.ID, rec.ForkOf, rec.CreatedAt, rec.Workspace, rec.Backend = NewID(), src.Record.ID, time.Now().UTC(), "", ""
	rep, err := a.d.fork(ctx, o, m.rs, src.Sandbox, &rec)
	if err == nil {
		err = m.rs.save(rec)
	}
	if err != nil {
		m.discard(ctx, a, o, rec)
		return Record{}, adapter.CopyReport{}, err
	}
	return rec, rep, nil
}

// Checkpoint saves the attached sandbox src with its processes' memory in dir, a directory it
// makes (adapter.Checkpointer: oci under gVisor); src goes on where it was. Restore makes new
// sandboxes from dir. Errors: errs.InvalidInput for an adapter that cannot checkpoint or an
// existing dir; the adapter's (errs.SandboxUnavailable where the runtime cannot).
func (m *Manager) Checkpoint(ctx context.Context, src *Session, dir string) error {
	c, ok := src.Sandbox.(adapter.Checkpointer)
	if !ok {
		return errs.New(errs.InvalidInput, "checkpoint", "", "sandbox %s: the %s adapter cannot checkpoint a sandbox with its memory (oci with --runtime runsc can; a file system snapshot works everywhere: sandboxer snapshot take)", src.Record.ID, src.Record.Adapter)
	}
	return c.Checkpoint(ctx, dir)
}

// Restore makes a new long-lived sandbox of o.Adapter from the checkpoint in dir (Checkpoint),
// its processes going on with the checkpoint's memory, records it (RestoredFrom names dir) and
// returns its record. A checkpoint may be restored any number of times, each sandbox
// independent. On failure nothing of it is left. Errors: errs.InvalidInput for an adapter that
// cannot restore, or a dir that is not a whole checkpoint; errs.VerifyFailed when its memory
// image is not what was saved; the adapter's.
func (m *Manager) Restore(ctx context.Context, dir string, o Options) (Record, error) {
	a, err := lookup(o.Adapter)
	if err != nil {
		return Record{}, err
	}
	if a.d.restore == nil {
		return Record{}, errs.New(errs.InvalidInput, "restore", "", "the %s adapter cannot restore a checkpoint (oci can)", a.Name)
	}
	rec := Record{ID: NewID(), Adapter: a.Name, CreatedAt: time.Now().UTC(), RestoredFrom: dir}
	return m.make(ctx, a, o, rec, func(rec *Record) error { return a.d.restore(ctx, o, dir, rec) })
}
