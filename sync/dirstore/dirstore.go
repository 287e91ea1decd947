// Package dirstore is a filesync.Store kept as plain files a person can read: each collection is a
// directory holding the files themselves under files/ and a manifest.json listing every entry's
// path, kind, executable bit, SHA-256, size and update time.
//
// Layout of a store rooted at DIR:
//
//	DIR/.format                       marker and format version
//	DIR/.lock                         flock(2) taken by every operation (several processes may share a store)
//	DIR/<collection>/manifest.json    {"version":2,"entries":[{"path":...,"hash":...,"size":...,"updatedAt":...}, ...]}
//	                                  plus "kind":"symlink" for a link and "exec":true for an executable file
//	DIR/<collection>/files/<path>     the content, byte for byte: mode 0755 for an executable file,
//	                                  0644 otherwise; a symbolic link is a regular file (0644) holding
//	                                  its target text, never a link (nothing reading the store follows it)
//	DIR/.journal, DIR/.staging/       only while a batch is being committed
//
// Crash safety: Apply writes the new contents to .staging (fsynced), then commits by renaming a
// fully written and fsynced redo journal into place. Only then are the staged files renamed over
// the old ones and the manifests rewritten (temp file, fsync, rename). A process killed before
// the journal exists leaves the old state (the staging leftovers are removed on the next
// operation); one killed after it leaves a journal that the next operation replays, idempotently,
// to the new state. Either way every entry is old or new as a whole, content and manifest alike.
package dirstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"golang.org/x/sys/unix"
)

const (
	formatFile   = ".format"
	lockFile     = ".lock"
	journalFile  = ".journal"
	stagingDir   = ".staging"
	manifestFile = "manifest.json"
	filesDir     = "files"
	formatText   = "sandboxer-dirstore 1\n"
)

// testHook, when set by a test, is called at named points of a commit ("staged", "committed",
// "renamed <n>", "manifest <collection>"). The crash tests kill the process there.
var testHook func(point string)

// Store is a directory store. It is safe for concurrent use, also by several processes.
type Store struct {
	dir  string
	mu   sync.Mutex // serialises this process's operations; the flock serialises processes
	lock *os.File
	// manifests caches each collection's manifest, valid while manifest.json keeps its stamp.
	manifests map[string]*manifest
	closed    bool
}

// Open opens the store rooted at dir, creating it when missing, and finishes any commit that a
// killed process left half done. Errors: errs.InvalidInput when dir holds something that is not a
// directory store (a non-empty directory without the marker), errs.Internal on I/O errors.
func Open(dir string) (*Store, error) {
	const op = "dirstore.open"
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, errs.Wrap(errs.Internal, op, dir, err)
	}
	marker := filepath.Join(abs, formatFile)
	switch b, err := os.ReadFile(marker); {
	case err == nil:
		if string(b) != formatText {
			return nil, errs.New(errs.InvalidInput, op, dir, "unsupported directory store format %q", strings.TrimSpace(string(b)))
		}
	case errors.Is(err, fs.ErrNotExist):
		ents, err := os.ReadDir(abs)
		if err != nil {
			return nil, errs.Wrap(errs.Internal, op, dir, err)
		}
		if len(ents) > 0 {
			return nil, errs.New(errs.InvalidInput, op, dir, "directory is not empty and is not a directory store")
		}
		if err := writeFileSync(marker, []byte(formatText)); err != nil {
			return nil, errs.Wrap(errs.Internal, op, dir, err)
		}
		if err := syncDir(abs); err != nil {
			return nil, errs.Wrap(errs.Internal, op, dir, err)
		}
	default:
		return nil, errs.Wrap(errs.Internal, op, dir, err)
	}
	lf, err := os.OpenFile(filepath.Join(abs, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, dir, err)
	}
	s := &Store{dir: abs, lock: lf, manifests: map[string]*manifest{}}
	err = s.locked(context.Background(), op, func() error { return nil })
	if err != nil {
		lf.Close()
		return nil, err
	}
	return s, nil
}

// Dir returns the store's root directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the lock file. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.lock.Close()
}

// locked runs fn holding both locks, after replaying or discarding what a killed commit left.
func (s *Store) locked(ctx context.Context, op string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errs.New(errs.SandboxUnavailable, op, s.dir, "store is closed")
	}
	for {
		err := unix.Flock(int(s.lock.Fd()), unix.LOCK_EX)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			return errs.Wrap(errs.Internal, op, s.dir, err)
		}
	}
	defer unix.Flock(int(s.lock.Fd()), unix.LOCK_UN)
	if err := s.recover(); err != nil {
		return errs.Wrap(errs.Internal, op, s.dir, fmt.Errorf("recovering an interrupted commit: %w", err))
	}
	return fn()
}

// manifest is one collection's entries, with the count of entries below each directory.
type manifest struct {
	stamp   stamp
	entries map[string]filesync.Entry
	dirs    map[string]int
}

type stamp struct {
	ino, size int64
	mtime     int64
}

func stampOf(fi fs.FileInfo) stamp {
	st, _ := fi.Sys().(*syscall.Stat_t)
	var ino int64
	if st != nil {
		ino = int64(st.Ino)
	}
	return stamp{ino: ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// manifestVersion is the manifest format written: 2 added kind and exec (a version-1 manifest is
// read as plain files; a reader that knows only version 1 refuses version 2 rather than take
// links for files).
const manifestVersion = 2

type manifestDoc struct {
	Version int             `json:"version"`
	Entries []manifestEntry `json:"entries"`
}

type manifestEntry struct {
	Path      string    `json:"path"`
	Kind      string    `json:"kind,omitempty"` // omitted for a file
	Exec      bool      `json:"exec,omitempty"`
	Hash      string    `json:"hash"`
	Size      int64     `json:"size"`
	UpdatedAt time.Time `json:"updatedAt"`
}

func (s *Store) collDir(c string) string { return filepath.Join(s.dir, c) }

func (s *Store) filePath(c, p string) string {
	return filepath.Join(s.dir, c, filesDir, filepath.FromSlash(p))
}

// load returns the collection's manifest, re-reading it when another process changed it.
func (s *Store) load(c string) (*manifest, error) {
	mp := filepath.Join(s.collDir(c), manifestFile)
	fi, err := os.Stat(mp)
	if errors.Is(err, fs.ErrNotExist) {
		m := &manifest{entries: map[string]filesync.Entry{}, dirs: map[string]int{}}
		delete(s.manifests, c)
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	st := stampOf(fi)
	if m, ok := s.manifests[c]; ok && m.stamp == st {
		return m, nil
	}
	b, err := os.ReadFile(mp)
	if err != nil {
		return nil, err
	}
	var mf manifestDoc
	if err := json.Unmarshal(b, &mf); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", mp, err)
	}
	if mf.Version != 1 && mf.Version != manifestVersion {
		return nil, fmt.Errorf("manifest %s: unsupported version %d", mp, mf.Version)
	}
	m := &manifest{stamp: st, entries: make(map[string]filesync.Entry, len(mf.Entries)), dirs: map[string]int{}}
	for _, e := range mf.Entries {
		kind := e.Kind
		if kind == "" {
			kind = filesync.KindFile
		}
		if kind != filesync.KindFile && kind != filesync.KindSymlink {
			return nil, fmt.Errorf("manifest %s: entry %s has unknown kind %q", mp, e.Path, e.Kind)
		}
		m.put(filesync.Entry{Collection: c, Path: e.Path, Kind: kind, Exec: e.Exec && kind == filesync.KindFile, Hash: e.Hash, Size: e.Size, UpdatedAt: e.UpdatedAt})
	}
	s.manifests[c] = m
	return m, nil
}

func (m *manifest) put(e filesync.Entry) {
	if _, ok := m.entries[e.Path]; !ok {
		forParents(e.Path, func(d string) { m.dirs[d]++ })
	}
	m.entries[e.Path] = e
}

func (m *manifest) remove(p string) {
	if _, ok := m.entries[p]; !ok {
		return
	}
	delete(m.entries, p)
	forParents(p, func(d string) {
		if m.dirs[d]--; m.dirs[d] <= 0 {
			delete(m.dirs, d)
		}
	})
}

// forParents calls fn with every proper parent directory of p ("a" and "a/b" for "a/b/c").
func forParents(p string, fn func(string)) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			fn(p[:i])
		}
	}
}

func (m *manifest) sorted() []filesync.Entry {
	out := make([]filesync.Entry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b filesync.Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// write replaces the collection's manifest.json atomically and durably.
func (s *Store) writeManifest(c string, m *manifest) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{\"version\":%d,\"entries\":[", manifestVersion)
	for i, e := range m.sorted() {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n")
		kind := e.Kind
		if kind == filesync.KindFile {
			kind = "" // the default: the manifest stays as small as version 1's for plain files
		}
		b, err := json.Marshal(manifestEntry{Path: e.Path, Kind: kind, Exec: e.Exec, Hash: e.Hash, Size: e.Size, UpdatedAt: e.UpdatedAt})
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteString("\n]}\n")
	cd := s.collDir(c)
	if err := os.MkdirAll(cd, 0o755); err != nil {
		return err
	}
	mp := filepath.Join(cd, manifestFile)
	tmp := mp + ".tmp"
	if err := writeFileSync(tmp, buf.Bytes()); err != nil {
		return err
	}
	if err := os.Rename(tmp, mp); err != nil {
		return err
	}
	if err := syncDir(cd); err != nil {
		return err
	}
	delete(s.manifests, c) // the next load re-reads and re-stamps it
	return nil
}

// List implements filesync.Store.
func (s *Store) List(ctx context.Context, collection string) ([]filesync.Entry, error) {
	const op = "dirstore.list"
	if err := filesync.CheckCollection(op, collection); err != nil {
		return nil, err
	}
	var out []filesync.Entry
	err := s.locked(ctx, op, func() error {
		m, err := s.load(collection)
		if err != nil {
			return errs.Wrap(errs.Internal, op, collection, err)
		}
		out = m.sorted()
		return nil
	})
	return out, err
}

// Get implements filesync.Store.
func (s *Store) Get(ctx context.Context, collection, p string) (filesync.Entry, error) {
	const op = "dirstore.get"
	if err := checkEntry(op, collection, p); err != nil {
		return filesync.Entry{}, err
	}
	var out filesync.Entry
	err := s.locked(ctx, op, func() error {
		m, err := s.load(collection)
		if err != nil {
			return errs.Wrap(errs.Internal, op, p, err)
		}
		e, ok := m.entries[p]
		if !ok {
			return errs.New(errs.NotFound, op, p, "no entry in collection %s", collection)
		}
		out = e
		return nil
	})
	return out, err
}

// Read implements filesync.Store.
func (s *Store) Read(ctx context.Context, collection, p string) ([]byte, error) {
	const op = "dirstore.read"
	if err := checkEntry(op, collection, p); err != nil {
		return nil, err
	}
	var out []byte
	err := s.locked(ctx, op, func() error {
		m, err := s.load(collection)
		if err != nil {
			return errs.Wrap(errs.Internal, op, p, err)
		}
		e, ok := m.entries[p]
		if !ok || !e.HasContent() {
			return errs.New(errs.NotFound, op, p, "no content in collection %s", collection)
		}
		out, err = readInto(s.filePath(collection, p), nil, adapter.ReadLimit(ctx))
		if err != nil {
			return readErr(op, p, err)
		}
		return nil
	})
	return out, err
}

// Scan implements filesync.Store. It holds the store's lock for the whole scan. A file over
// adapter.ReadLimit(ctx) (its size on disk, whatever the manifest says) is not read: fn gets the
// entry, with that size, and nil.
func (s *Store) Scan(ctx context.Context, collection string, fn func(filesync.Entry, []byte) error) error {
	const op = "dirstore.scan"
	if err := filesync.CheckCollection(op, collection); err != nil {
		return err
	}
	return s.locked(ctx, op, func() error {
		m, err := s.load(collection)
		if err != nil {
			return errs.Wrap(errs.Internal, op, collection, err)
		}
		var buf []byte
		for _, e := range m.sorted() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !e.HasContent() {
				if err := fn(e, nil); err != nil {
					return err
				}
				continue
			}
			data, err := readInto(s.filePath(collection, e.Path), buf[:0], adapter.ReadLimit(ctx))
			var big *tooLarge
			switch {
			case errors.As(err, &big):
				e.Size = big.size
				data = nil
			case err != nil:
				return readErr(op, e.Path, err)
			default:
				buf = data
			}
			if err := fn(e, data); err != nil {
				return err
			}
		}
		return nil
	})
}

// tooLarge is readInto's error for a file over the limit.
type tooLarge struct{ size, limit int64 }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("%d bytes, over the limit of %d", e.size, e.limit)
}

func readErr(op, p string, err error) error {
	var big *tooLarge
	if errors.As(err, &big) {
		return adapter.FileTooLarge(op, p, big.size, big.limit)
	}
	return errs.Wrap(errs.Internal, op, p, err)
}

// readInto reads a whole file into buf, growing it as needed. The size of the opened file is
// checked against limit before anything is allocated, and the read stops past limit (a file that
// grows meanwhile).
func readInto(name string, buf []byte, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &tooLarge{fi.Size(), limit}
	}
	if n := int(fi.Size()) + 1; cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if int64(len(buf)) > limit {
			return nil, &tooLarge{int64(len(buf)), limit}
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
	}
}

// Collections implements filesync.Store.
func (s *Store) Collections(ctx context.Context) ([]string, error) {
	const op = "dirstore.collections"
	var out []string
	err := s.locked(ctx, op, func() error {
		ents, err := os.ReadDir(s.dir)
		if err != nil {
			return errs.Wrap(errs.Internal, op, s.dir, err)
		}
		for _, d := range ents {
			if !d.IsDir() || filesync.CheckCollection(op, d.Name()) != nil {
				continue
			}
			m, err := s.load(d.Name())
			if err != nil {
				return errs.Wrap(errs.Internal, op, d.Name(), err)
			}
			if len(m.entries) > 0 {
				out = append(out, d.Name())
			}
		}
		return nil
	})
	return out, err
}

func checkEntry(op, c, p string) error {
	if err := filesync.CheckCollection(op, c); err != nil {
		return err
	}
	return filesync.CheckPath(op, p)
}

// journal is the redo log of one committed batch.
type journal struct {
	Version int         `json:"version"`
	Ops     []journalOp `json:"ops"`
}

type journalOp struct {
	Collection string    `json:"collection"`
	Path       string    `json:"path"`
	Delete     bool      `json:"delete,omitempty"`
	Staged     string    `json:"staged,omitempty"` // file name in .staging; "" for a metadata-only entry
	Keep       bool      `json:"keep,omitempty"`   // the file keeps its content; only kind and exec change
	Kind       string    `json:"kind,omitempty"`
	Exec       bool      `json:"exec,omitempty"`
	Hash       string    `json:"hash,omitempty"`
	Size       int64     `json:"size,omitempty"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// Apply implements filesync.Store.
func (s *Store) Apply(ctx context.Context, changes []filesync.Change) ([]filesync.Conflict, error) {
	const op = "dirstore.apply"
	if err := filesync.CheckChanges(op, changes); err != nil {
		return nil, err
	}
	var conflicts []filesync.Conflict
	err := s.locked(ctx, op, func() error {
		mans := map[string]*manifest{}
		for _, c := range changes {
			if mans[c.Collection] != nil {
				continue
			}
			m, err := s.load(c.Collection)
			if err != nil {
				return errs.Wrap(errs.Internal, op, c.Collection, err)
			}
			mans[c.Collection] = m
		}
		var accepted []filesync.Change
		for _, c := range changes {
			e, exists := mans[c.Collection].entries[c.Path]
			v := e.Version()
			switch {
			case filesync.Settled(c, exists, v):
			case !filesync.Holds(c.Base, exists, v) || c.KeepContent && !filesync.KeepsContent(c, v):
				conflicts = append(conflicts, filesync.Conflict{Collection: c.Collection, Path: c.Path, Base: c.Base, Ours: c.Version(), Theirs: v})
			default:
				accepted = append(accepted, c)
			}
		}
		if len(accepted) == 0 {
			return nil
		}
		if err := checkClashes(op, mans, accepted); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.commit(accepted, mans); err != nil {
			return errs.Wrap(errs.Internal, op, s.dir, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return conflicts, nil
}

// checkClashes rejects a batch after which one entry of a collection would be the parent
// directory of another (impossible to hold as files, here and in a workspace alike).
func checkClashes(op string, mans map[string]*manifest, batch []filesync.Change) error {
	type key struct{ c, p string }
	state := map[key]bool{} // entry exists after the batch, for paths the batch touches
	delta := map[key]int{}  // change of the number of entries below a directory
	for _, c := range batch {
		_, existed := mans[c.Collection].entries[c.Path]
		state[key{c.Collection, c.Path}] = !c.Delete
		d := 0
		switch {
		case c.Delete && existed:
			d = -1
		case !c.Delete && !existed:
			d = 1
		}
		if d != 0 {
			forParents(c.Path, func(dir string) { delta[key{c.Collection, dir}] += d })
		}
	}
	for _, c := range batch {
		if c.Delete {
			continue
		}
		m := mans[c.Collection]
		var bad string
		forParents(c.Path, func(dir string) {
			exists, touched := state[key{c.Collection, dir}]
			if !touched {
				_, exists = m.entries[dir]
			}
			if exists && bad == "" {
				bad = dir
			}
		})
		if bad != "" {
			return errs.New(errs.InvalidInput, op, c.Path, "entry %s of collection %s is a file, not a directory", bad, c.Collection)
		}
		if m.dirs[c.Path]+delta[key{c.Collection, c.Path}] > 0 {
			return errs.New(errs.InvalidInput, op, c.Path, "collection %s has entries below this path", c.Collection)
		}
	}
	return nil
}

// commit stages the batch, writes the journal (the commit point) and replays it.
func (s *Store) commit(batch []filesync.Change, mans map[string]*manifest) error {
	sd := filepath.Join(s.dir, stagingDir)
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return err
	}
	now := time.Now().UTC()
	j := journal{Version: 1, Ops: make([]journalOp, len(batch))}
	type job struct {
		name string
		data []byte
		exec bool
	}
	var jobs []job
	for i, c := range batch {
		o := journalOp{Collection: c.Collection, Path: c.Path, Delete: c.Delete, UpdatedAt: now}
		if !c.Delete {
			o.Hash, o.Kind, o.Exec = c.Hash, c.Kind, c.Exec
			switch {
			case c.KeepContent:
				o.Keep = true
				o.Size = mans[c.Collection].entries[c.Path].Size
			case !c.NoContent:
				o.Staged = fmt.Sprintf("%d", i)
				o.Size = int64(len(c.Content))
				jobs = append(jobs, job{filepath.Join(sd, o.Staged), c.Content, c.Exec})
			}
		}
		j.Ops[i] = o
	}
	// Stage and fsync in parallel: the fsyncs dominate small batches.
	errc := make(chan error, len(jobs))
	sem := make(chan struct{}, 8)
	for _, jb := range jobs {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errc <- writeFileSync(jb.name, jb.data, filePerm(jb.exec))
		}()
	}
	var firstErr error
	for range jobs {
		if err := <-errc; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if err := syncDir(sd); err != nil {
		return err
	}
	hook("staged")
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	jp := filepath.Join(s.dir, journalFile)
	if err := writeFileSync(jp+".tmp", b); err != nil {
		return err
	}
	if err := os.Rename(jp+".tmp", jp); err != nil {
		return err
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	hook("committed")
	return s.replay(j)
}

func hook(point string) {
	if testHook != nil {
		testHook(point)
	}
}

// recover replays a committed journal, or discards the staging area of a batch that never
// committed.
func (s *Store) recover() error {
	jp := filepath.Join(s.dir, journalFile)
	b, err := os.ReadFile(jp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Lstat(filepath.Join(s.dir, stagingDir)); err == nil {
			s.manifests = map[string]*manifest{}
			os.Remove(jp + ".tmp")
			return os.RemoveAll(filepath.Join(s.dir, stagingDir))
		}
		return nil
	case err != nil:
		return err
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	s.manifests = map[string]*manifest{}
	return s.replay(j)
}

// replay brings files and manifests to the journal's state. It is idempotent, so a replay that is
// itself killed is simply replayed again.
func (s *Store) replay(j journal) (err error) {
	defer func() {
		if err != nil {
			s.manifests = map[string]*manifest{} // cached manifests may hold half-applied state
		}
	}()
	sd := filepath.Join(s.dir, stagingDir)
	dirty := map[string]struct{}{} // directories whose entries changed
	// Deletes first: a batch may replace file "a" by "a/b".
	for _, o := range j.Ops {
		if !o.Delete {
			continue
		}
		fp := s.filePath(o.Collection, o.Path)
		if err := os.Remove(fp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		dirty[filepath.Dir(fp)] = struct{}{}
		s.pruneDirs(o.Collection, filepath.Dir(fp), dirty)
	}
	n := 0
	for _, o := range j.Ops {
		if o.Delete {
			continue
		}
		fp := s.filePath(o.Collection, o.Path)
		if o.Keep {
			if err := os.Chmod(fp, filePerm(o.Exec)); err != nil {
				return err
			}
			continue
		}
		if o.Staged == "" {
			// Metadata only: no file in files/.
			if err := os.Remove(fp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		src := filepath.Join(sd, o.Staged)
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue // renamed by an earlier replay
		}
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			return err
		}
		if fi, err := os.Lstat(fp); err == nil && fi.IsDir() {
			// An empty directory left behind; a non-empty one was ruled out by checkClashes.
			if err := os.Remove(fp); err != nil {
				return err
			}
		}
		if err := os.Rename(src, fp); err != nil {
			return err
		}
		dirty[filepath.Dir(fp)] = struct{}{}
		n++
		hook(fmt.Sprintf("renamed %d", n))
	}
	for d := range dirty {
		if err := syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	byColl := map[string][]journalOp{}
	var colls []string
	for _, o := range j.Ops {
		if _, ok := byColl[o.Collection]; !ok {
			colls = append(colls, o.Collection)
		}
		byColl[o.Collection] = append(byColl[o.Collection], o)
	}
	for _, c := range colls {
		m, err := s.load(c)
		if err != nil {
			return err
		}
		for _, o := range byColl[c] {
			if o.Delete {
				m.remove(o.Path)
			} else {
				kind := o.Kind
				if kind == "" {
					kind = filesync.KindFile
				}
				m.put(filesync.Entry{Collection: c, Path: o.Path, Kind: kind, Exec: o.Exec, Hash: o.Hash, Size: o.Size, UpdatedAt: o.UpdatedAt})
			}
		}
		if err := s.writeManifest(c, m); err != nil {
			return err
		}
		hook("manifest " + c)
	}
	if err := os.Remove(filepath.Join(s.dir, journalFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.RemoveAll(sd)
}

// pruneDirs removes now-empty directories from dir up to the collection's files/ directory.
func (s *Store) pruneDirs(c, dir string, dirty map[string]struct{}) {
	top := filepath.Join(s.collDir(c), filesDir)
	for dir != top && strings.HasPrefix(dir, top+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		delete(dirty, dir)
		dir = filepath.Dir(dir)
		dirty[dir] = struct{}{}
	}
}

// filePerm is the mode of a stored file on disk: what the entry's executable bit says.
func filePerm(exec bool) fs.FileMode {
	if exec {
		return 0o755
	}
	return 0o644
}

// writeFileSync writes a new file with mode perm (whatever the umask) and fsyncs it.
func writeFileSync(name string, data []byte, perm ...fs.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if len(perm) > 0 && perm[0] != 0o644 {
		if err := f.Chmod(perm[0]); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

var _ filesync.Store = (*Store)(nil)
