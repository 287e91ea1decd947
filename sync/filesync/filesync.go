// Package filesync keeps a durable Store of named file collections and a sandbox workspace in
// step by SHA-256: Hydrate writes the store into the workspace, Flush walks the workspace and
// writes what changed back to the store, and Exec and WriteFile run an agent's bash or write
// call between the onBeforeCommand/onAfterCommand hooks and flush afterwards.
//
// The store is the source of truth; the sandbox is where work happens. Flush is base-aware: it
// remembers, per path, the hash the sandbox and the store last agreed on (at hydrate or at a
// flush), sends each change to the store as a compare-and-swap against that base, and reports a
// Conflict (errs.Conflict) instead of overwriting an entry that another writer changed meanwhile.
// It deletes only entries whose files the sandbox saw and then lost, never entries it never saw,
// and a walk that fails aborts the flush before anything is written or deleted.
//
// The Store interface lives here; sync/dirstore and sync/sqlitestore implement it, and
// sync/filesynctest holds the conformance suites for stores and for adapters.
package filesync

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Mode is how Flush decides which files to hash.
type Mode string

const (
	// ModeDiff (the default) re-hashes only files whose size, modification time or inode changed
	// since they were last hashed, like git's index.
	ModeDiff Mode = "diff"
	// ModeFull re-hashes every file on every flush.
	ModeFull Mode = "full"
)

// DefaultRacyWindow is the default Options.RacyWindow: ten times the coarsest kernel clock tick
// Linux stamps files with (10 ms at HZ=100). Files whose modification time has no sub-second
// part (a file system with one- or two-second timestamps) get a window of coarseRacyWindow.
const DefaultRacyWindow = 100 * time.Millisecond

const coarseRacyWindow = 2 * time.Second

// DefaultMaxFileBytes is the default Options.MaxFileBytes.
const DefaultMaxFileBytes = 100 << 20

// Options configure a Sync. Collections is required; the zero value of everything else is valid.
type Options struct {
	// Collections are the store's collections synced with the workspace, in priority order: a
	// path held by several collections belongs to the first one that holds it (Hydrate writes
	// that one's entry), and a new file goes to Collections[0].
	Collections []string
	// Mode is ModeDiff ("" means ModeDiff) or ModeFull.
	Mode Mode
	// Filter reports whether a workspace path (slash-separated, relative) takes part in Flush;
	// nil means every file does. A path it excludes is neither uploaded nor deleted from the
	// store. Hydrate writes every entry regardless.
	Filter func(path string) bool
	// StateFile, when set, is where the sync state (each path's base hash and stat cache) is kept
	// across processes, so that a sandbox found again by id resumes with base-aware flushes and a
	// warm cache. It is written atomically after each Hydrate and each Flush that changed it.
	// Keep it outside the workspace.
	StateFile string
	// RacyWindow: a file whose modification time is within this window of the walk that saw it
	// is hashed again at the next flush even if its stat is unchanged, because a later write in
	// the same timestamp tick would leave the stat unchanged. 0 means DefaultRacyWindow; raise it
	// when the sandbox's clock may lag this process's (a remote VM).
	RacyWindow time.Duration
	// Workers bounds the files read and hashed (or written, in Hydrate) at once; 0 means
	// max(GOMAXPROCS, 2).
	Workers int
	// MaxFileBytes is the largest file synced either way (0 means DefaultMaxFileBytes). A larger
	// workspace file is neither read nor uploaded nor deleted from the store, and a larger store
	// entry is not loaded nor hydrated; both are listed in Report.Skipped with the reason. The
	// size is checked on the stat of the file itself (or the store's own length of the content)
	// before anything is allocated, so no file makes a flush or a hydrate allocate more than
	// about Workers times this much.
	MaxFileBytes int64
	// OnBeforeCommand runs before each Exec. It may return a rewritten command, or an error to
	// refuse it (the command does not run and nothing is flushed).
	OnBeforeCommand func(ctx context.Context, cmd adapter.Command) (adapter.Command, error)
	// OnAfterCommand runs after each Exec, before the flush, and may replace the result and error.
	OnAfterCommand func(ctx context.Context, cmd adapter.Command, res adapter.Result, err error) (adapter.Result, error)
}

// Validate reports an unusable configuration (errs.InvalidInput).
func (o Options) Validate() error {
	const op = "filesync"
	if len(o.Collections) == 0 {
		return errs.New(errs.InvalidInput, op, "", "at least one collection is required")
	}
	seen := map[string]bool{}
	for _, c := range o.Collections {
		if err := CheckCollection(op, c); err != nil {
			return err
		}
		if seen[c] {
			return errs.New(errs.InvalidInput, op, c, "collection listed twice")
		}
		seen[c] = true
	}
	if o.Mode != "" && o.Mode != ModeDiff && o.Mode != ModeFull {
		return errs.New(errs.InvalidInput, op, "", "syncMode must be %q or %q, not %q", ModeDiff, ModeFull, o.Mode)
	}
	if o.RacyWindow < 0 || o.Workers < 0 || o.MaxFileBytes < 0 {
		return errs.New(errs.InvalidInput, op, "", "racyWindow, workers and maxFileBytes must not be negative")
	}
	return nil
}

// Report says what a Hydrate or a Flush did. Paths are workspace paths, sorted.
type Report struct {
	Mode Mode `json:"mode,omitempty"`
	// Listed is the number of workspace files the flush walked (after the filter).
	Listed int `json:"listed"`
	// Hashed is the number of files read and hashed (the rest were vouched for by the stat cache).
	Hashed int `json:"hashed"`
	// Written is the number of files Hydrate wrote into the workspace.
	Written int      `json:"written"`
	Added   []string `json:"added,omitempty"`
	Updated []string `json:"updated,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
	// Skipped: Hydrate's entries without content, shadowed by an earlier collection, over
	// MaxFileBytes, or symbolic links that would leave the workspace; Flush's files that vanished
	// between the walk and the read (they are looked at again next time), files over
	// MaxFileBytes, and symbolic links that are absolute or lead outside the workspace (never
	// followed, never stored).
	Skipped []string `json:"skipped,omitempty"`
	// Reasons says why, for the skipped paths that were refused (too large, a link leading
	// outside); paths skipped for the ordinary reasons above have none.
	Reasons   map[string]string `json:"reasons,omitempty"`
	Conflicts []Conflict        `json:"conflicts,omitempty"`
	Duration  time.Duration     `json:"durationNs"`
}

// skip lists p in Skipped with a reason ("" for none).
func (r *Report) skip(p, reason string) {
	r.Skipped = append(r.Skipped, p)
	if reason != "" {
		if r.Reasons == nil {
			r.Reasons = map[string]string{}
		}
		r.Reasons[p] = reason
	}
}

// Reasons of skipped paths.
const (
	reasonLinkOutside = "symbolic link leads outside the workspace (absolute, above the root, through another link, or a loop): not followed, not synced"
	reasonTooLarge    = "larger than the %d-byte limit (MaxFileBytes): not synced"
	reasonNoModes     = "the sandbox cannot make symbolic links or set the executable bit (no adapter.ModeWriter)"
)

// known is what the sandbox and the store last agreed on for one path.
type known struct {
	Coll string `json:"c"`
	Hash string `json:"h"` // the entry's version (see Version): its hash, "+x" or "+l"
}

// cached is the stat cache entry of one workspace file: its stat when it was hashed, and the hash.
type cached struct {
	Size  int64  `json:"s"`
	MTime int64  `json:"m"` // Unix nanoseconds
	Ino   uint64 `json:"i"`
	Hash  string `json:"h"`
	Racy  bool   `json:"r,omitempty"` // modified too close to the walk: hash again next time
}

// cacheEntry is the stat cache entry of f, hashed as hash, seen by a walk that started at walk.
func (s *Sync) cacheEntry(f adapter.FileInfo, hash string, walk time.Time) cached {
	w := s.opts.RacyWindow
	if f.ModTime.Nanosecond() == 0 {
		w = max(w, coarseRacyWindow)
	}
	m := f.ModTime.UnixNano()
	return cached{Size: f.Size, MTime: m, Ino: f.Inode, Hash: hash, Racy: m >= walk.Add(-w).UnixNano()}
}

func (c cached) matches(f adapter.FileInfo) bool {
	return !c.Racy && c.Size == f.Size && c.MTime == f.ModTime.UnixNano() && c.Ino == f.Inode
}

// Sync keeps one sandbox's workspace and a store in step. Its methods are safe for concurrent
// use; hydrates and flushes run one at a time.
type Sync struct {
	sb    adapter.Sandbox
	store Store
	opts  Options

	mu    sync.Mutex
	known map[string]known
	cache map[string]cached
	dirty bool // state changed since it was saved
}

// New returns a Sync of sb and store. It does not touch the workspace; call Hydrate to fill it.
// With Options.StateFile set and present, the saved state is loaded (a corrupt state file is
// errs.Internal). Errors: errs.InvalidInput for bad options.
func New(sb adapter.Sandbox, store Store, opts Options) (*Sync, error) {
	if sb == nil || store == nil {
		return nil, errs.New(errs.InvalidInput, "filesync", "", "a sandbox and a store are required")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Mode == "" {
		opts.Mode = ModeDiff
	}
	if opts.RacyWindow == 0 {
		opts.RacyWindow = DefaultRacyWindow
	}
	if opts.Workers == 0 {
		opts.Workers = max(runtime.GOMAXPROCS(0), 2)
	}
	if opts.MaxFileBytes == 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	s := &Sync{sb: sb, store: store, opts: opts, known: map[string]known{}, cache: map[string]cached{}}
	if opts.StateFile != "" {
		if err := s.loadState(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Hydrate writes every entry of every collection into the workspace (entries without content
// are skipped; a path held by several collections is written from the first) and records each
// entry's version as the base for later flushes. A file gets the entry's executable bit; a
// symbolic link is made only when its target, resolved through the links of the store and of the
// workspace, stays inside the workspace: one that would leave it is not made, is listed in
// Report.Skipped with the reason, and Hydrate then returns errs.PathEscape after writing
// everything else. Hydrate replaces what is at each path (a link where a file goes is removed,
// not written through) and leaves other files alone. Entries over Options.MaxFileBytes are
// skipped with the reason, never loaded. Errors: the store's, and the sandbox's WriteFile
// errors; files written before an error stay written and are recorded.
func (s *Sync) Hydrate(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	rep := Report{Mode: s.opts.Mode}
	// What is in the workspace now: links to replace rather than write through, executable bits
	// to clear, links a hydrated link may lead through.
	before := map[string]adapter.FileInfo{}
	if files, err := s.list(ctx); err == nil {
		for _, f := range files {
			before[f.Path] = f
		}
	}
	mw, _ := s.sb.(adapter.ModeWriter)
	rm, _ := s.sb.(adapter.Remover)
	w := newWriter(ctx, s.sb, s.opts.Workers)
	hydrated := map[string]Entry{}
	var links []Entry
	targets := map[string]string{}
	var scanErr error
	limitCtx := adapter.WithReadLimit(ctx, s.opts.MaxFileBytes)
	for _, c := range s.opts.Collections {
		scanErr = s.store.Scan(limitCtx, c, func(e Entry, content []byte) error {
			if _, dup := hydrated[e.Path]; dup {
				rep.skip(e.Path, "")
				return nil
			}
			if e.Size > s.opts.MaxFileBytes || content == nil && e.HasContent() {
				rep.skip(e.Path, fmt.Sprintf(reasonTooLarge, s.opts.MaxFileBytes))
				hydrated[e.Path] = Entry{} // shadows later collections, written nowhere
				return nil
			}
			if content == nil {
				rep.skip(e.Path, "")
				return nil
			}
			hydrated[e.Path] = e
			if e.Kind == KindSymlink || e.Exec {
				if mw == nil {
					rep.skip(e.Path, reasonNoModes)
					hydrated[e.Path] = Entry{}
					return nil
				}
			}
			if e.Kind == KindSymlink {
				links = append(links, e)
				targets[e.Path] = string(content)
				return nil
			}
			if f, ok := before[e.Path]; ok && f.IsLink() && rm != nil {
				// Replace the link itself: WriteFile would write through it.
				if err := rm.RemoveFile(ctx, e.Path); err != nil && errs.CodeOf(err) != errs.NotFound {
					return err
				}
			}
			return w.write(e.Path, content)
		})
		if scanErr != nil {
			break
		}
	}
	written, werr := w.close()
	var modeErr error
	for _, p := range written {
		e := hydrated[p]
		// A replaced file keeps its mode in some adapters: set the bit whenever it may differ.
		if f, was := before[p]; e.Exec || was && f.Executable() {
			if mw == nil { // an executable file was replaced and kept its bit: no base to trust
				delete(s.known, p)
				continue
			}
			if err := mw.SetExecutable(ctx, p, e.Exec); err != nil {
				modeErr = errors.Join(modeErr, err)
				delete(s.known, p) // the file is there, its mode unknown: no base
				continue
			}
		}
		s.known[p] = known{Coll: e.Collection, Hash: e.Version()}
		delete(s.cache, p)
		s.dirty = true
	}
	rep.Written = len(written)
	if err := errors.Join(scanErr, werr, modeErr); err != nil {
		s.saveState()
		return rep, err
	}
	// Links last, once every link they may lead through is known: the workspace's own, except
	// where the store puts something else, and the store's.
	all := map[string]string{}
	for p, f := range before {
		if _, replaced := hydrated[p]; !replaced && f.IsLink() {
			all[p] = f.Link
		}
	}
	for p, t := range targets {
		all[p] = t
	}
	var escapes []string
	for _, e := range links {
		t := targets[e.Path]
		if !LinkInside(e.Path, t, all) {
			rep.skip(e.Path, reasonLinkOutside)
			escapes = append(escapes, e.Path)
			continue
		}
		if err := mw.Symlink(ctx, e.Path, t); err != nil {
			s.saveState()
			return rep, err
		}
		s.known[e.Path] = known{Coll: e.Collection, Hash: e.Version()}
		delete(s.cache, e.Path)
		s.dirty = true
		rep.Written++
	}
	// Prime the stat cache with one walk, so that the first flush does not hash everything again.
	// This assumes nothing else writes the workspace while Hydrate runs.
	listStart := time.Now()
	if files, err := s.list(ctx); err == nil {
		for _, f := range files {
			e, ok := hydrated[f.Path]
			if !ok || f.IsLink() || e.Kind != KindFile || f.Size != e.Size || f.Executable() != e.Exec {
				continue
			}
			s.cache[f.Path] = s.cacheEntry(f, e.Hash, listStart)
		}
	}
	slices.Sort(rep.Skipped)
	rep.Duration = time.Since(start)
	if err := s.saveState(); err != nil {
		return rep, err
	}
	if len(escapes) > 0 {
		slices.Sort(escapes)
		e := errs.New(errs.PathEscape, "hydrate", escapes[0], "%d symbolic links of the store would lead outside the workspace; not made", len(escapes))
		e.Details = map[string]any{"paths": escapes}
		return rep, e
	}
	return rep, nil
}

// Flush walks the workspace and brings the store in line with it: new and changed files are
// written to their owning collection, entries whose files were deleted are removed. A change
// whose store entry moved since the sandbox last saw it is not applied and is reported in
// Report.Conflicts; Flush then returns the full report and an errs.Conflict error whose details
// hold the conflicts ("conflicts"). Other errors: a walk that fails (errs.* from the sandbox, or
// a context error) aborts before anything is written or deleted; store errors. Changes applied
// before a later error stay applied and recorded.
func (s *Sync) Flush(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flush(ctx)
}

// Exec runs cmd through the hooks and the sandbox, then flushes. The result and error are the
// command's (as the hooks left them); a flush error is joined to it, so errs.CodeOf gives the
// command's code first. A command refused by OnBeforeCommand is not run and nothing is flushed.
// A command that fails to run (timeout, cancellation) is still followed by a flush, with ctx.
func (s *Sync) Exec(ctx context.Context, cmd adapter.Command) (adapter.Result, Report, error) {
	if s.opts.OnBeforeCommand != nil {
		c, err := s.opts.OnBeforeCommand(ctx, cmd)
		if err != nil {
			return adapter.Result{}, Report{}, err
		}
		cmd = c
	}
	res, err := s.sb.ExecuteCommand(ctx, cmd)
	if s.opts.OnAfterCommand != nil {
		res, err = s.opts.OnAfterCommand(ctx, cmd, res, err)
	}
	rep, ferr := s.Flush(ctx)
	return res, rep, errors.Join(err, ferr)
}

// WriteFile writes one file into the workspace through the sandbox and flushes.
func (s *Sync) WriteFile(ctx context.Context, path string, data []byte) (Report, error) {
	if err := s.sb.WriteFile(ctx, path, data); err != nil {
		return Report{}, err
	}
	return s.Flush(ctx)
}

// Base returns the collection and hash the sandbox and the store last agreed on for a workspace
// path (ok is false when the sandbox has never seen a store entry there).
func (s *Sync) Base(path string) (collection, hash string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.known[path]
	return k.Coll, k.Hash, ok
}

// Forget drops the sandbox's base for path, resolving a conflict in the store's favour without
// touching the store: the next flush treats the workspace file, if any, as new (so it conflicts
// again unless it matches the store), and never deletes the entry. Hydrate again to take the
// store's content.
func (s *Sync) Forget(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, path)
	s.dirty = true
}

func (s *Sync) filtered(p string) bool { return s.opts.Filter == nil || s.opts.Filter(p) }

// conflictErr builds the errs.Conflict error of a report.
func conflictErr(cs []Conflict) error {
	e := errs.New(errs.Conflict, "flush", cs[0].Path, "%d store entries changed since the sandbox saw them; not overwritten", len(cs))
	e.Details = map[string]any{"conflicts": cs}
	return e
}

func walkErr(err error) error {
	if err == nil || errs.CodeOf(err) != "" || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return errs.Wrap(errs.Internal, "flush", "", fmt.Errorf("walking the workspace: %w", err))
}
