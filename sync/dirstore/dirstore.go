// Package dirstore is a filesync.Store kept as plain files a person can read: each collection is a
// directory holding the files themselves under files/ and a manifest.json listing every entry's
// path, kind, executable bit, SHA-256, size and update time.
//
// Layout of a store rooted at DIR:
//
//	DIR/.format                       marker and format version
//	DIR/.lock                         flock(2) taken by every operation (several processes may share a store)
//	DIR/<collection>/manifest.json    {"version":2,"entries":[{"path":...,"hash":...,"size":...,"updatedAt":...}, ...]}
//	                                  plus "kind":"symlink" for a link and "exec":true for an executable file;
//	                                  a path that is not UTF-8 is written as filesync.EncodePath does
//	                                  (NUL and base64), and the manifest is then version 3
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
// What would make a replay fail for good (a name too long, a link or a stray file on the way to
// an entry) is refused before the commit point: a batch fails at its Apply, never leaves a journal
// that cannot replay.
//
// The store's own files are not trusted: whoever can write DIR (a sandbox whose workspace holds
// it) can forge them. Every file operation goes through an os.Root on DIR without following
// links (see tree), every path read from a manifest or the journal is checked like a path given
// to Apply, and a bad one is an error naming the store file, never an operation outside DIR.
package dirstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

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
	// maxMetaBytes bounds what is read of a manifest or the journal (about 5 million entries).
	maxMetaBytes = 1 << 30
	// nameMax is the longest name of one path component that the file systems hold (NAME_MAX).
	nameMax = 255
)

// testHook, when set by a test, is called at named points of a commit ("staged", "committed",
// "renamed <n>", "manifest <collection>"). The crash tests kill the process there.
var testHook func(point string)

// Store is a directory store. It is safe for concurrent use, also by several processes.
type Store struct {
	dir  string
	tree *tree
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
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, dir, err)
	}
	s := &Store{dir: abs, tree: &tree{root: root, dir: abs, dirs: map[string]struct{}{}}, manifests: map[string]*manifest{}}
	if err := s.open(op); err != nil {
		root.Close()
		return nil, err
	}
	return s, nil
}

// open checks or writes the format marker, opens the lock file and recovers.
func (s *Store) open(op string) error {
	switch b, err := s.tree.readFile(formatFile, nil, 64); {
	case err == nil:
		if string(b) != formatText {
			return errs.New(errs.InvalidInput, op, s.dir, "unsupported directory store format %q", strings.TrimSpace(string(b)))
		}
	case errors.Is(err, fs.ErrNotExist):
		ents, err := s.tree.readDir()
		if err != nil {
			return errs.Wrap(errs.Internal, op, s.dir, err)
		}
		if len(ents) > 0 {
			return errs.New(errs.InvalidInput, op, s.dir, "directory is not empty and is not a directory store")
		}
		if err := s.tree.create(formatFile, []byte(formatText), 0o644); err != nil {
			return errs.Wrap(errs.Internal, op, s.dir, err)
		}
		if err := s.tree.syncDir("."); err != nil {
			return errs.Wrap(errs.Internal, op, s.dir, err)
		}
	default:
		return errs.Wrap(errs.Internal, op, s.dir, s.tree.fail(formatFile, err))
	}
	lf, err := s.tree.openLock(lockFile)
	if err != nil {
		return errs.Wrap(errs.Internal, op, s.dir, err)
	}
	s.lock = lf
	if err := s.locked(context.Background(), op, func() error { return nil }); err != nil {
		lf.Close()
		return err
	}
	return nil
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
	s.tree.dropSub()
	return errors.Join(s.lock.Close(), s.tree.root.Close())
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
	s.tree.reset() // another process may have changed the tree since
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
// links for files). manifestVersionBytes is written instead when a path is not UTF-8 (encoded by
// filesync.EncodePath), so that an older reader refuses the manifest rather than take the
// encoded form for a name.
const (
	manifestVersion      = 2
	manifestVersionBytes = 3
)

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

// manifestPath and entryPath are tree paths (slash-separated, relative to the store's directory).
func manifestPath(c string) string { return c + "/" + manifestFile }

func entryPath(c, p string) string { return c + "/" + filesDir + "/" + p }

// load returns the collection's manifest, re-reading it when another process changed it.
func (s *Store) load(c string) (*manifest, error) {
	mp := manifestPath(c)
	fi, err := s.tree.lstat(mp)
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
	b, err := s.tree.readFile(mp, nil, maxMetaBytes)
	if err != nil {
		return nil, s.tree.fail(mp, err)
	}
	var mf manifestDoc
	if err := json.Unmarshal(b, &mf); err != nil {
		return nil, s.tree.fail(mp, err)
	}
	if mf.Version < 1 || mf.Version > manifestVersionBytes {
		return nil, s.tree.badFile(mp, "unsupported version %d", mf.Version)
	}
	m := &manifest{stamp: st, entries: make(map[string]filesync.Entry, len(mf.Entries)), dirs: map[string]int{}}
	for i, e := range mf.Entries {
		p, err := filesync.DecodePath("dirstore.load", e.Path)
		if err != nil {
			return nil, s.tree.badFile(mp, "entry %d: %w", i, err)
		}
		kind := e.Kind
		if kind == "" {
			kind = filesync.KindFile
		}
		if kind != filesync.KindFile && kind != filesync.KindSymlink {
			return nil, s.tree.badFile(mp, "entry %d (%q) has unknown kind %q", i, p, e.Kind)
		}
		m.put(filesync.Entry{Collection: c, Path: p, Kind: kind, Exec: e.Exec && kind == filesync.KindFile, Hash: e.Hash, Size: e.Size, UpdatedAt: e.UpdatedAt})
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

// writeManifest replaces the collection's manifest.json atomically and durably.
func (s *Store) writeManifest(c string, m *manifest) error {
	entries := m.sorted()
	version := manifestVersion
	if slices.ContainsFunc(entries, func(e filesync.Entry) bool { return !utf8.ValidString(e.Path) }) {
		version = manifestVersionBytes
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{\"version\":%d,\"entries\":[", version)
	for i, e := range entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n")
		kind := e.Kind
		if kind == filesync.KindFile {
			kind = "" // the default: the manifest stays as small as version 1's for plain files
		}
		b, err := json.Marshal(manifestEntry{Path: filesync.EncodePath(e.Path), Kind: kind, Exec: e.Exec, Hash: e.Hash, Size: e.Size, UpdatedAt: e.UpdatedAt})
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteString("\n]}\n")
	mp := manifestPath(c)
	if err := s.tree.create(mp+".tmp", buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := s.tree.rename(mp+".tmp", mp); err != nil {
		return err
	}
	if err := s.tree.syncDir(c); err != nil {
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
		out, err = s.tree.readFile(entryPath(collection, p), nil, adapter.ReadLimit(ctx))
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
			data, err := s.tree.readFile(entryPath(collection, e.Path), buf[:0], adapter.ReadLimit(ctx))
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

// tooLarge is tree.readFile's error for a file over the limit.
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

// Collections implements filesync.Store.
func (s *Store) Collections(ctx context.Context) ([]string, error) {
	const op = "dirstore.collections"
	var out []string
	err := s.locked(ctx, op, func() error {
		ents, err := s.tree.readDir()
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
		slices.Sort(out)
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

// checkNameLengths refuses a path with a component longer than the file systems hold
// (errs.PathInvalid): such an entry could never be made a file, and the refusal must come before
// the batch commits.
func checkNameLengths(op, p string) error {
	for c := range strings.SplitSeq(p, "/") {
		if len(c) > nameMax {
			return errs.New(errs.PathInvalid, op, p, "a path component is %d bytes, over the %d a file name may have", len(c), nameMax)
		}
	}
	return nil
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
	for _, c := range changes {
		if err := checkNameLengths(op, c.Path); err != nil {
			return nil, err
		}
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

// commit stages the batch, prepares the tree, writes the journal (the commit point) and
// replays it.
func (s *Store) commit(batch []filesync.Change, mans map[string]*manifest) error {
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
				o.Staged = strconv.Itoa(i)
				o.Size = int64(len(c.Content))
				jobs = append(jobs, job{stagingDir + "/" + o.Staged, c.Content, c.Exec})
			}
		}
		j.Ops[i] = o
	}
	if err := s.prepare(j.Ops); err != nil {
		return err
	}
	if err := s.tree.parents(stagingDir+"/", true); err != nil {
		return err
	}
	// Stage and fsync in parallel: the fsyncs dominate small batches. The staging directory is
	// checked and in t.dirs: the workers only read the map.
	errc := make(chan error, len(jobs))
	sem := make(chan struct{}, 8)
	for _, jb := range jobs {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errc <- s.tree.create(jb.name, jb.data, filePerm(jb.exec))
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
	if err := s.tree.syncDir(stagingDir); err != nil {
		return err
	}
	hook("staged")
	b, err := json.Marshal(j.encode())
	if err != nil {
		return err
	}
	if err := s.tree.create(journalFile+".tmp", b, 0o644); err != nil {
		return err
	}
	if err := s.tree.rename(journalFile+".tmp", journalFile); err != nil {
		return err
	}
	if err := s.tree.syncDir("."); err != nil {
		return err
	}
	hook("committed")
	return s.replay(j)
}

// prepare checks, before the commit point, what would make ops fail when replayed: a link or a
// file on the way to an entry (other than a file the batch deletes), or a file whose mode changes
// that is not a regular file. An error here leaves the store as it was; a journal that would fail
// is never written. (A name too long was refused by Apply.)
func (s *Store) prepare(ops []journalOp) error {
	gone := map[string]bool{}
	for _, o := range ops {
		if o.Delete {
			gone[entryPath(o.Collection, o.Path)] = true
		}
	}
	for _, o := range ops {
		fp := entryPath(o.Collection, o.Path)
		if err := s.tree.checkParents(fp, func(d string) bool { return gone[d] }); err != nil {
			return err
		}
		if o.Keep {
			f, err := s.tree.open(fp, os.O_RDONLY, false)
			if err != nil {
				return err
			}
			f.Close()
		}
	}
	return nil
}

func hook(point string) {
	if testHook != nil {
		testHook(point)
	}
}

// encode is the journal as written: its paths through filesync.EncodePath.
func (j journal) encode() journal {
	ops := slices.Clone(j.Ops)
	for i := range ops {
		ops[i].Path = filesync.EncodePath(ops[i].Path)
	}
	return journal{Version: j.Version, Ops: ops}
}

// decodeJournal reads a journal and checks every operation as Apply checks a change: nothing in it
// is trusted (whoever can write the store's directory can forge it).
func decodeJournal(b []byte) (journal, error) {
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		return j, err
	}
	if j.Version != 1 {
		return j, fmt.Errorf("unsupported version %d", j.Version)
	}
	for i := range j.Ops {
		o := &j.Ops[i]
		p, err := filesync.DecodePath("dirstore.recover", o.Path)
		if err == nil {
			err = filesync.CheckCollection("dirstore.recover", o.Collection)
		}
		if err == nil {
			err = checkNameLengths("dirstore.recover", p)
		}
		switch {
		case err != nil:
		case o.Kind != "" && o.Kind != filesync.KindFile && o.Kind != filesync.KindSymlink:
			err = fmt.Errorf("unknown kind %q", o.Kind)
		case o.Staged != "" && (o.Delete || o.Keep || !isStagedName(o.Staged)):
			err = fmt.Errorf("staged name %q is not one the store writes", o.Staged)
		}
		if err != nil {
			return j, fmt.Errorf("operation %d: %w", i, err)
		}
		o.Path = p
	}
	return j, nil
}

// isStagedName reports whether name is one commit gives a staged file: a batch index.
func isStagedName(name string) bool {
	n, err := strconv.Atoi(name)
	return err == nil && n >= 0 && strconv.Itoa(n) == name
}

// recover replays a committed journal, or discards the staging area of a batch that never
// committed. A journal the store cannot use is an error naming it, and stays for a person to read.
func (s *Store) recover() error {
	b, err := s.tree.readFile(journalFile, nil, maxMetaBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := s.tree.lstat(stagingDir); err == nil {
			s.manifests = map[string]*manifest{}
			if err := s.tree.remove(journalFile + ".tmp"); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return s.tree.removeAll(stagingDir)
		}
		return nil
	case err != nil:
		return s.tree.fail(journalFile, err)
	}
	j, err := decodeJournal(b)
	if err != nil {
		return s.tree.fail(journalFile, err)
	}
	s.manifests = map[string]*manifest{}
	if err := s.prepare(j.Ops); err != nil {
		return s.tree.fail(journalFile, err)
	}
	return s.tree.fail(journalFile, s.replay(j))
}

// replay brings files and manifests to the journal's state. It is idempotent, so a replay that is
// itself killed is simply replayed again.
func (s *Store) replay(j journal) (err error) {
	defer func() {
		if err != nil {
			s.manifests = map[string]*manifest{} // cached manifests may hold half-applied state
		}
	}()
	dirty := map[string]struct{}{} // directories whose entries changed
	// Deletes first: a batch may replace file "a" by "a/b".
	for _, o := range j.Ops {
		if !o.Delete {
			continue
		}
		fp := entryPath(o.Collection, o.Path)
		if err := s.tree.remove(fp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		dirty[path.Dir(fp)] = struct{}{}
		s.pruneDirs(o.Collection, path.Dir(fp), dirty)
	}
	n := 0
	for _, o := range j.Ops {
		if o.Delete {
			continue
		}
		fp := entryPath(o.Collection, o.Path)
		if o.Keep {
			if err := s.tree.chmod(fp, filePerm(o.Exec)); err != nil {
				return err
			}
			continue
		}
		if o.Staged == "" {
			// Metadata only: no file in files/.
			if err := s.tree.remove(fp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		src := stagingDir + "/" + o.Staged
		if _, err := s.tree.lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue // renamed by an earlier replay
		}
		if fi, err := s.tree.lstat(fp); err == nil && fi.IsDir() {
			// An empty directory left behind; a non-empty one was ruled out by checkClashes.
			if err := s.tree.remove(fp); err != nil {
				return err
			}
		}
		if err := s.tree.rename(src, fp); err != nil {
			return err
		}
		dirty[path.Dir(fp)] = struct{}{}
		n++
		hook(fmt.Sprintf("renamed %d", n))
	}
	for d := range dirty {
		if err := s.tree.syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
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
	if err := s.tree.remove(journalFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.tree.removeAll(stagingDir)
}

// pruneDirs removes now-empty directories from dir up to the collection's files/ directory.
func (s *Store) pruneDirs(c, dir string, dirty map[string]struct{}) {
	top := c + "/" + filesDir
	for dir != top && strings.HasPrefix(dir, top+"/") {
		if s.tree.remove(dir) != nil {
			return
		}
		delete(dirty, dir)
		dir = path.Dir(dir)
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

var _ filesync.Store = (*Store)(nil)
