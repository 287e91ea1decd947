package filesync

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// applyBudget bounds the content a flush holds in memory before it applies a batch to the store
// (a variable only so that a test can lower it).
var applyBudget = 64 << 20

// hashed is one file read and hashed by a flush.
type hashed struct {
	f    adapter.FileInfo
	hash string
	data []byte // kept only when the content differs from the base
	err  error
	// again: the content differs but was not kept (over applyBudget during a one-pass walk);
	// the file is read once more after the walk.
	again bool
	// unread: the one-pass walk passed the file without content (over the read limit, or a
	// symbolic link); the flush decides what it is.
	unread bool
	// walked: read by the one-pass walk, which also looked the path up while nothing writes
	// the maps (the walk runs on several goroutines, what follows on one): its base (base,
	// isKnown) and whether the stat cache holds it.
	walked, isKnown, isCached bool
	base                      known
}

// pending is one change a flush will send to the store.
type pending struct {
	path string
	hash string // content hash; "" for a delete
	kind string // KindFile or KindSymlink
	exec bool
	keep bool // the store keeps its content: only the executable bit changes (data is nil)
	data []byte
	coll string // owning collection; "" until resolveOwners picks one for a new path
	base string // the agreed hash, or Absent when the sandbox never saw a store entry here
	del  bool
}

func (s *Sync) flush(ctx context.Context) (Report, error) {
	start := time.Now()
	rep := Report{Mode: s.opts.Mode}
	var (
		files   []adapter.FileInfo
		statted bool
		err     error
		walked  []hashed // files read and hashed by the walk itself
	)
	if tr, ok := s.sb.(adapter.TreeReader); ok && s.opts.Mode == ModeFull {
		files, walked, err = s.readTree(ctx, tr)
		statted = true
	} else {
		files, statted, err = s.listAll(ctx)
	}
	if err != nil {
		return rep, walkErr(err) // nothing written, nothing deleted
	}
	// Decide from the stat cache what needs reading.
	var (
		toHash   []adapter.FileInfo
		links    []adapter.FileInfo // symbolic links: their target text is their content
		modeOnly []pending          // files whose executable bit alone changed
		tooLarge []string
	)
	seenKnown, seenCached := 0, 0
	if walked != nil { // read already, filtered and looked up by the walk
		n := 0
		for _, r := range walked {
			if r.isKnown {
				seenKnown++
			}
			if r.isCached {
				seenCached++
			}
			switch {
			case r.f.IsLink():
				links = append(links, r.f)
			case r.unread || r.f.Size > s.opts.MaxFileBytes:
				tooLarge = append(tooLarge, r.f.Path)
			default:
				walked[n] = r
				n++
			}
		}
		walked = walked[:n]
	} else {
		n := 0
		for _, f := range files {
			if !s.filtered(f.Path) {
				continue
			}
			files[n] = f
			n++
			k, isKnown := s.known[f.Path]
			if isKnown {
				seenKnown++
			}
			c, isCached := s.cache[f.Path]
			if isCached {
				seenCached++
			}
			if f.IsLink() {
				links = append(links, f)
				continue
			}
			if f.Size > s.opts.MaxFileBytes {
				tooLarge = append(tooLarge, f.Path) // never read
				continue
			}
			if s.opts.Mode == ModeDiff && statted && isCached && c.matches(f) && isKnown {
				v := Version(KindFile, f.Executable(), c.Hash)
				if k.Hash == v {
					continue // unchanged since it was last hashed, and the store agreed then
				}
				if kk, _, h := SplitVersion(k.Hash); kk == KindFile && h == c.Hash {
					// The content is the one agreed on: the executable bit alone changed.
					modeOnly = append(modeOnly, pending{path: f.Path, hash: c.Hash, kind: KindFile, exec: f.Executable(), keep: true, coll: k.Coll, base: k.Hash})
					continue
				}
			}
			toHash = append(toHash, f)
		}
		files = files[:n]
	}
	rep.Listed = len(files)
	var present map[string]struct{}
	if seenKnown < len(s.known) || seenCached < len(s.cache) {
		present = make(map[string]struct{}, len(files))
		for _, f := range files {
			present[f.Path] = struct{}{}
		}
	}

	tooBig := fmt.Sprintf(reasonTooLarge, s.opts.MaxFileBytes)
	for _, p := range tooLarge {
		rep.skip(p, tooBig)
		delete(s.cache, p)
	}
	// Symbolic links: stored with their target text when it leads inside the workspace.
	batch := modeOnly
	if len(links) > 0 {
		all := make(map[string]string, len(links))
		for _, f := range links {
			all[f.Path] = f.Link
		}
		for _, f := range links {
			delete(s.cache, f.Path)
			if !LinkInside(f.Path, f.Link, all) || CheckLinkText("", f.Path, []byte(f.Link)) != nil {
				rep.skip(f.Path, reasonLinkOutside)
				continue
			}
			data := []byte(f.Link)
			h := Hash(data)
			k, ok := s.known[f.Path]
			if ok && k.Hash == Version(KindSymlink, false, h) {
				continue
			}
			pc := pending{path: f.Path, hash: h, kind: KindSymlink, data: data, coll: k.Coll, base: k.Hash}
			if !ok {
				pc.base = Absent
			}
			batch = append(batch, pc)
		}
	}

	// Read and hash; apply in batches bounded by applyBudget.
	var batchBytes int
	var applyErr error
	handle := func(r hashed, stop func()) {
		if r.err != nil {
			switch errs.CodeOf(r.err) {
			case errs.NotFound:
				rep.skip(r.f.Path, "") // vanished since the walk
				delete(s.cache, r.f.Path)
				return
			case errs.FileTooLarge: // grew past the limit since the walk
				rep.skip(r.f.Path, tooBig)
				delete(s.cache, r.f.Path)
				return
			}
			applyErr = r.err
			stop()
			return
		}
		rep.Hashed++
		if statted {
			s.cache[r.f.Path] = s.cacheEntry(r.f, r.hash, start)
		} else {
			delete(s.cache, r.f.Path)
		}
		s.dirty = true
		k, ok := r.base, r.isKnown // still current: a path is handled once, and applied after
		if !r.walked {
			k, ok = s.known[r.f.Path]
		}
		exec := r.f.Executable()
		if ok && k.Hash == Version(KindFile, exec, r.hash) {
			return
		}
		pc := pending{path: r.f.Path, hash: r.hash, kind: KindFile, exec: exec, data: r.data, coll: k.Coll, base: k.Hash}
		if !ok {
			pc.base = Absent
		}
		if r.data == nil && ok && hashOfVersion(k.Hash) == r.hash {
			pc.keep = true // the agreed content: the executable bit alone changed
		}
		batch = append(batch, pc)
		batchBytes += len(r.data)
		if batchBytes >= applyBudget {
			applyErr = s.apply(ctx, batch, &rep)
			batch, batchBytes = nil, 0
			if applyErr != nil {
				stop()
			}
		}
	}
	// The one-pass walk is complete here: its results may now be applied.
	for _, r := range walked {
		if applyErr != nil {
			break
		}
		if r.again {
			toHash = append(toHash, r.f)
			continue
		}
		handle(r, func() {})
	}
	if applyErr != nil {
		toHash = nil
	}
	slices.SortFunc(toHash, func(a, b adapter.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	results, stop := s.hashAll(ctx, toHash)
	for r := range results {
		if applyErr != nil {
			continue // drain
		}
		handle(r, stop)
	}
	stop()
	if applyErr != nil {
		s.saveState()
		return rep.finish(start), applyErr
	}

	// Deletions: files the sandbox saw (hydrated or flushed) that are gone from a complete walk.
	if present != nil {
		skipped := map[string]bool{}
		for _, p := range rep.Skipped {
			skipped[p] = true
		}
		for p, k := range s.known {
			if _, ok := present[p]; ok || skipped[p] || !s.filtered(p) {
				continue
			}
			kind, _, _ := SplitVersion(k.Hash)
			batch = append(batch, pending{path: p, kind: kind, coll: k.Coll, base: k.Hash, del: true})
		}
		for p := range s.cache {
			if _, ok := present[p]; !ok {
				delete(s.cache, p)
				s.dirty = true
			}
		}
	}
	if len(batch) > 0 {
		if err := s.apply(ctx, batch, &rep); err != nil {
			s.saveState()
			return rep.finish(start), err
		}
	}
	rep.finish(start)
	if err := s.saveState(); err != nil {
		return rep, err
	}
	if len(rep.Conflicts) > 0 {
		return rep, conflictErr(rep.Conflicts)
	}
	return rep, nil
}

func (r *Report) finish(start time.Time) Report {
	slices.Sort(r.Added)
	slices.Sort(r.Updated)
	slices.Sort(r.Deleted)
	slices.Sort(r.Skipped)
	slices.SortFunc(r.Conflicts, func(a, b Conflict) int { return strings.Compare(a.Path, b.Path) })
	r.Duration = time.Since(start)
	return *r
}

// apply sends one batch to the store and records the outcome.
func (s *Sync) apply(ctx context.Context, batch []pending, rep *Report) error {
	if err := s.resolveOwners(ctx, batch); err != nil {
		return err
	}
	changes := make([]Change, len(batch))
	for i, p := range batch {
		changes[i] = Change{Collection: p.coll, Path: p.path, Delete: p.del, Content: p.data, Hash: p.hash, Base: p.base,
			Kind: p.kind, Exec: p.exec, KeepContent: p.keep}
	}
	conflicts, err := s.store.Apply(ctx, changes)
	if err != nil {
		return err
	}
	lost := make(map[string]Conflict, len(conflicts))
	for _, c := range conflicts {
		lost[c.Path] = c
	}
	s.dirty = true
	for i, p := range batch {
		ch := changes[i]
		if c, ok := lost[p.path]; ok {
			c.Ours = ch.Version()
			if ch.Base == Absent {
				c.Base = ""
			}
			switch {
			case p.del || c.Theirs == "":
				c.Kind = "delete"
			case c.Base == "":
				c.Kind = "add"
			default:
				c.Kind = "modify"
			}
			rep.Conflicts = append(rep.Conflicts, c)
			continue
		}
		switch {
		case p.del:
			delete(s.known, p.path)
			rep.Deleted = append(rep.Deleted, p.path)
		case ch.Base == Absent:
			s.known[p.path] = known{Coll: ch.Collection, Hash: ch.Version()}
			rep.Added = append(rep.Added, p.path)
		default:
			s.known[p.path] = known{Coll: ch.Collection, Hash: ch.Version()}
			rep.Updated = append(rep.Updated, p.path)
		}
	}
	return nil
}

// resolveOwners picks the collection of each new path: the first collection that already holds
// the path (an entry without content, or one the sandbox never saw), else the first collection.
func (s *Sync) resolveOwners(ctx context.Context, batch []pending) error {
	var unknown []int
	for i := range batch {
		if batch[i].coll == "" {
			unknown = append(unknown, i)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	if len(s.opts.Collections) > 1 {
		for _, c := range s.opts.Collections {
			var holds func(p string) (bool, error)
			if len(unknown) > 64 {
				entries, err := s.store.List(ctx, c)
				if err != nil {
					return err
				}
				held := make(map[string]bool, len(entries))
				for _, e := range entries {
					held[e.Path] = true
				}
				holds = func(p string) (bool, error) { return held[p], nil }
			} else {
				holds = func(p string) (bool, error) {
					_, err := s.store.Get(ctx, c, p)
					if errs.CodeOf(err) == errs.NotFound {
						return false, nil
					}
					return err == nil, err
				}
			}
			for _, i := range unknown {
				if batch[i].coll != "" {
					continue
				}
				ok, err := holds(batch[i].path)
				if err != nil {
					return err
				}
				if ok {
					batch[i].coll = c
				}
			}
		}
	}
	for _, i := range unknown {
		if batch[i].coll == "" {
			batch[i].coll = s.opts.Collections[0]
		}
	}
	return nil
}

// readTree walks and reads the workspace in one pass (adapter.TreeReader), for a full flush, and
// returns the files (filtered) and their hashes. Nothing is applied until the walk completed, so
// the content of changed files is kept only up to applyBudget; past it a result is marked again,
// to be read once more after the walk.
func (s *Sync) readTree(ctx context.Context, tr adapter.TreeReader) ([]adapter.FileInfo, []hashed, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// The workers claim result slots with an atomic counter rather than appending under a lock:
	// a worker that finds the lock taken is parked, and on two cores it then waits for the
	// other worker's time slice to end.
	var (
		mu    sync.Mutex // guards extra and serialises Filter, which need not be concurrency-safe
		slots = make([]hashed, len(s.known)+len(s.known)/8+16)
		used  atomic.Int64
		extra []hashed // results past slots
		kept  atomic.Int64
	)
	want := func(p string) bool {
		if CheckPath("", p) != nil {
			return false
		}
		if s.opts.Filter == nil {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		return s.opts.Filter(p)
	}
	// s.known and s.cache are only read while the walk runs: nothing is applied before it
	// returns.
	err := tr.ReadTree(adapter.WithReadLimit(ctx, s.opts.MaxFileBytes), "", s.opts.Workers, want, func(f adapter.FileInfo, data []byte) error {
		k, isKnown := s.known[f.Path]
		_, isCached := s.cache[f.Path]
		r := hashed{f: f, walked: true, isKnown: isKnown, isCached: isCached, base: k}
		if data == nil && (f.IsLink() || f.Size > 0) {
			r.unread = true
		} else {
			var same bool
			r.hash, same = hashAgainst(data, hashOfVersion(k.Hash))
			if !isKnown || !same {
				if kept.Add(int64(len(data))) <= int64(applyBudget) {
					r.data = append(make([]byte, 0, len(data)), data...)
				} else {
					r.again = true
				}
			}
		}
		if i := used.Add(1) - 1; i < int64(len(slots)) {
			slots[i] = r
		} else {
			mu.Lock()
			extra = append(extra, r)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	results := append(slots[:min(used.Load(), int64(len(slots)))], extra...) // non-nil: the walk read the files
	files := make([]adapter.FileInfo, len(results))
	for i, r := range results {
		files[i] = r.f
	}
	return files, results, nil
}

// hashAll reads and hashes files with Options.Workers workers, through the sandbox's BulkReader
// when it has one. stop cancels the outstanding work; the channel is closed when all is done.
func (s *Sync) hashAll(ctx context.Context, files []adapter.FileInfo) (<-chan hashed, func()) {
	ctx, cancel := context.WithCancel(adapter.WithReadLimit(ctx, s.opts.MaxFileBytes))
	out := make(chan hashed, 64)
	if len(files) == 0 {
		close(out)
		return out, cancel
	}
	workers := min(s.opts.Workers, len(files))
	var wg sync.WaitGroup
	// Workers decide whether to keep a file's content from a snapshot of the bases: the consumer
	// updates s.known while they run.
	bases := make(map[string]string, len(files))
	for _, f := range files {
		if k, ok := s.known[f.Path]; ok {
			bases[f.Path] = k.Hash
		}
	}
	keep := func(p, h string) bool { // content other than the agreed one (a mode change needs none)
		b, ok := bases[p]
		return !ok || hashOfVersion(b) != h
	}
	send := func(r hashed) bool {
		select {
		case out <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if br, ok := s.sb.(adapter.BulkReader); ok {
		byPath := make(map[string]adapter.FileInfo, len(files))
		for _, f := range files {
			byPath[f.Path] = f
		}
		per := (len(files) + workers - 1) / workers
		for lo := 0; lo < len(files); lo += per {
			part := files[lo:min(lo+per, len(files))]
			wg.Add(1)
			go func() {
				defer wg.Done()
				done := make(map[string]bool, len(part))
				paths := make([]string, len(part))
				for i, f := range part {
					paths[i] = f.Path
				}
				err := br.ReadFiles(ctx, paths, func(p string, data []byte) error {
					f, ok := byPath[p]
					if !ok || done[p] {
						return nil
					}
					done[p] = true
					r := hashed{f: f, hash: hashOf(data)}
					if keep(p, r.hash) {
						r.data = bytes.Clone(data)
						if r.data == nil {
							r.data = []byte{}
						}
					}
					if !send(r) {
						return ctx.Err()
					}
					return nil
				})
				if err == nil || ctx.Err() != nil {
					if err != nil {
						send(hashed{f: part[0], err: err})
					}
					return
				}
				if c := errs.CodeOf(err); c != errs.NotFound && c != errs.FileTooLarge {
					send(hashed{f: part[0], err: err})
					return
				}
				// A file vanished or grew past the limit, which stops a bulk read: finish this
				// part file by file.
				for _, f := range part {
					if done[f.Path] {
						continue
					}
					if !send(s.readOne(ctx, f, keep)) {
						return
					}
				}
			}()
		}
	} else {
		next := make(chan adapter.FileInfo)
		go func() {
			defer close(next)
			for _, f := range files {
				select {
				case next <- f:
				case <-ctx.Done():
					return
				}
			}
		}()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for f := range next {
					if !send(s.readOne(ctx, f, keep)) {
						return
					}
				}
			}()
		}
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, cancel
}

func (s *Sync) readOne(ctx context.Context, f adapter.FileInfo, keep func(p, h string) bool) hashed {
	data, err := s.sb.ReadFile(ctx, f.Path)
	if err != nil {
		return hashed{f: f, err: err}
	}
	r := hashed{f: f, hash: hashOf(data)}
	if keep(f.Path, r.hash) {
		r.data = data
		if r.data == nil {
			r.data = []byte{}
		}
	}
	return r
}

// hashOfVersion is the content hash of a version.
func hashOfVersion(v string) string {
	_, _, h := SplitVersion(v)
	return h
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// hashAgainst is hashOf that returns base itself when the hash equals it, so that a file that did
// not change costs no new string.
func hashAgainst(data []byte, base string) (hash string, same bool) {
	sum := sha256.Sum256(data)
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], sum[:])
	if string(hx[:]) == base {
		return base, true
	}
	return string(hx[:]), false
}

// listAll lists the workspace's regular files. statted says whether the list carries stat data
// (size, mtime, inode) the cache can trust.
func (s *Sync) listAll(ctx context.Context) ([]adapter.FileInfo, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if l, ok := s.sb.(adapter.Lister); ok {
		files, err := l.ListFiles(ctx, "")
		if err != nil {
			return nil, false, err
		}
		return validPaths(files), true, nil
	}
	files, err := s.listByFind(ctx)
	return files, false, err
}

func (s *Sync) list(ctx context.Context) ([]adapter.FileInfo, error) {
	files, statted, err := s.listAll(ctx)
	if err != nil || !statted {
		return nil, errors.New("no stat data")
	}
	return files, nil
}

// validPaths drops what no store can hold (paths CheckPath rejects).
func validPaths(files []adapter.FileInfo) []adapter.FileInfo {
	n := 0
	for _, f := range files {
		if CheckPath("", f.Path) == nil {
			files[n] = f
			n++
		}
	}
	return files[:n]
}

// listByFind lists files with one `find` command, for sandboxes without adapter.Lister. It has no
// stat data, so every flush hashes every file. Any failure (non-zero exit, cut output) is an error.
func (s *Sync) listByFind(ctx context.Context) ([]adapter.FileInfo, error) {
	res, err := s.sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"find", ".", "-type", "f", "-print0"}, MaxOutputBytes: 10 << 20})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, errs.New(errs.Internal, "flush", "", "find exited with %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	if res.StdoutTruncated {
		return nil, errs.New(errs.LimitExceeded, "flush", "", "the workspace listing is larger than 10 MB")
	}
	var out []adapter.FileInfo
	for _, p := range bytes.Split(res.Stdout, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		out = append(out, adapter.FileInfo{Path: strings.TrimPrefix(string(p), "./")})
	}
	return validPaths(out), nil
}
