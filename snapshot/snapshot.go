// Package snapshot owns file system snapshots of sandbox workspaces: content-addressed, portable
// between adapters, and verified on every restore.
//
// A snapshot is a Manifest (every regular file with its mode, size and SHA-256, every symbolic
// link with its target text, every empty directory) plus the files' contents as blobs named by
// their SHA-256. A Catalog keeps both in a state directory:
//
//	DIR/lock                      flock(2): shared by Take and Restore, exclusive for Delete, Keep, GC
//	DIR/manifests/<name>.json     one manifest per snapshot, written last and atomically
//	DIR/blobs/<id>.pack, .idx     the blobs, in pack files with an index each (Options.Store puts
//	                              them in a filesync.Store instead)
//	DIR/cache/<key>               per source sandbox: (path, size, mtime, inode) -> hash of the last take
//
// Take works on any adapter.Sandbox and Restore into any other: a snapshot taken on local
// restores on memory, docker, oci or kubernetes. Restore checks the workspace against the
// manifest (it reads every file back and hashes it) before it returns success; a missing or
// altered file fails it with errs.VerifyFailed and the paths named.
//
// Crash safety: Take writes every blob before the manifest, and the manifest by rename, so a
// snapshot is listed only once it is whole; a Take or Delete killed midway leaves at most
// blobs no manifest refers to, which the next Delete, Keep or GC frees.
package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
)

// Entry types of a Manifest.
const (
	TypeFile    = "file"
	TypeSymlink = "symlink"
	TypeDir     = "dir" // an empty directory (directories that hold entries are implied)
)

// Entry is one path of a snapshot.
type Entry struct {
	// Path is slash-separated and relative to the workspace root (filesync.CheckPath holds); in
	// JSON it is written as filesync.EncodePath writes it.
	Path string `json:"path"`
	Type string `json:"type"` // TypeFile, TypeSymlink or TypeDir
	// Mode is the permission bits as seen by Take. Restore sets the executable bit (0755 or
	// 0644, git's model, as every adapter's ModeWriter does) and verifies that bit only.
	Mode   fs.FileMode `json:"mode,omitempty"`
	Size   int64       `json:"size,omitempty"`
	Hash   string      `json:"hash,omitempty"`   // SHA-256 hex of a file's content
	Target string      `json:"target,omitempty"` // a symbolic link's target text
}

// Executable reports whether a file entry has the owner's executable bit.
func (e Entry) Executable() bool { return e.Type == TypeFile && e.Mode&0o100 != 0 }

// Manifest describes one snapshot.
type Manifest struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Source names the sandbox it was taken from (adapter.Identified's ID, else its workspace);
	// "" when the sandbox has neither.
	Source string `json:"source,omitempty"`
	// Adapter is the source's adapter name (adapter.Capabilities), when it says.
	Adapter string  `json:"adapter,omitempty"`
	Files   int     `json:"files"` // regular files
	Bytes   int64   `json:"bytes"` // their content
	Entries []Entry `json:"entries"`
	// Read counts the files the Take read (the others matched its stat cache); Stored the blobs
	// it added to the catalog. Figures of the Take, not part of the snapshot's content.
	Read   int `json:"read"`
	Stored int `json:"stored"`
	// Skipped lists what the snapshot does not hold: symbolic links whose target leads outside
	// the workspace (as FileSync does) and paths no store can hold.
	Skipped []string `json:"skipped,omitempty"`
}

// Info is one line of Catalog.List.
type Info struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Source  string    `json:"source,omitempty"`
	Adapter string    `json:"adapter,omitempty"`
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes"`
}

// Filter selects snapshots for List and Keep; the zero value selects all.
type Filter struct {
	Prefix string // names starting with Prefix
	Source string // taken from this source (Manifest.Source)
}

func (f Filter) match(m Info) bool {
	return strings.HasPrefix(m.Name, f.Prefix) && (f.Source == "" || m.Source == f.Source)
}

// Options configure a Catalog; the zero value is the default.
type Options struct {
	// Store, when set, holds the blobs (collection "snapshot-blobs", one entry per blob)
	// instead of DIR/blobs: any filesync.Store (sync/dirstore, sync/sqlitestore). The caller
	// owns and closes it. The default pack files are several times faster (docs/snapshots.md
	// has the figures) and stream large files, where a Store holds each in memory.
	Store filesync.Store
	// NoSync skips the fsyncs that make a snapshot's blobs and manifest durable before Take
	// returns. A process killed midway never leaves a half snapshot listed either way; NoSync
	// only gives up the guarantee across a power loss (a restore then fails verification
	// rather than restoring wrong content).
	NoSync bool
	// Workers bounds the files read, hashed and written at once; 0 means 4.
	Workers int
}

// Catalog is a state directory of snapshots. It is safe for concurrent use, also by several
// processes sharing the directory.
type Catalog struct {
	dir   string
	opts  Options
	blobs blobs
}

const manifestVersion = 1

// Open opens (creating it when missing) the catalog in dir. Errors: errs.InvalidInput for an
// empty dir, errs.Internal for I/O failures.
func Open(dir string, opts Options) (*Catalog, error) {
	const op = "snapshot.open"
	if dir == "" {
		return nil, errs.New(errs.InvalidInput, op, dir, "a catalog needs a directory")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, dir, err)
	}
	for _, d := range []string{"manifests", "cache"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return nil, errs.Wrap(errs.Internal, op, dir, err)
		}
	}
	c := &Catalog{dir: abs, opts: opts}
	if opts.Store != nil {
		c.blobs = storeBlobs{st: opts.Store}
	} else if c.blobs, err = openPackBlobs(filepath.Join(abs, "blobs")); err != nil {
		return nil, err
	}
	return c, nil
}

// Dir returns the catalog's directory.
func (c *Catalog) Dir() string { return c.dir }

// Close releases the catalog (the pack files it holds open). It is idempotent; a closed catalog
// opens what it needs again if used.
func (c *Catalog) Close() error { return c.blobs.close() }

// lock takes the catalog's flock, shared or exclusive, waiting for ctx. The returned func
// releases it.
func (c *Catalog) lock(ctx context.Context, exclusive bool) (func(), error) {
	f, err := os.OpenFile(filepath.Join(c.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.lock", c.dir, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the descriptor releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, errs.Wrap(errs.Internal, "snapshot.lock", c.dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// CheckName validates a snapshot name: 1-128 characters of [A-Za-z0-9._-], not starting with a
// dot (errs.InvalidInput). Retention by prefix (Filter.Prefix) works on these names, so a
// caller may name snapshots "<sandbox>-<label>".
func CheckName(name string) error {
	if err := filesync.CheckCollection("snapshot", name); err != nil {
		return errs.New(errs.InvalidInput, "snapshot", name, "snapshot name must be 1-128 characters of [A-Za-z0-9._-], not starting with a dot")
	}
	return nil
}

func (c *Catalog) manifestPath(name string) string {
	return filepath.Join(c.dir, "manifests", name+".json")
}

// Get returns the manifest of one snapshot: errs.NotFound when there is none by that name,
// errs.Internal when its file cannot be read or parsed.
func (c *Catalog) Get(ctx context.Context, name string) (Manifest, error) {
	if err := CheckName(name); err != nil {
		return Manifest{}, err
	}
	unlock, err := c.lock(ctx, false)
	if err != nil {
		return Manifest{}, err
	}
	defer unlock()
	return c.read(name)
}

func (c *Catalog) read(name string) (Manifest, error) {
	const op = "snapshot.get"
	b, err := os.ReadFile(c.manifestPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, errs.New(errs.NotFound, op, name, "no snapshot by that name")
	}
	if err != nil {
		return Manifest{}, errs.Wrap(errs.Internal, op, name, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, errs.Wrap(errs.Internal, op, name, err)
	}
	if m.Version != manifestVersion || m.Name != name {
		return Manifest{}, errs.New(errs.Internal, op, name, "manifest version %d of %q is not one this program reads", m.Version, m.Name)
	}
	for i := range m.Entries {
		e := &m.Entries[i]
		p, err := filesync.DecodePath(op, e.Path)
		if err != nil {
			return Manifest{}, errs.Wrap(errs.Internal, op, name, err)
		}
		e.Path = p
		if e.Type == TypeFile && !isHash(e.Hash) || e.Type != TypeFile && e.Type != TypeSymlink && e.Type != TypeDir {
			return Manifest{}, errs.New(errs.Internal, op, name, "manifest entry %q is malformed", p)
		}
	}
	return m, nil
}

// write stores m's manifest atomically (temp file, fsync, rename, fsync of the directory).
func (c *Catalog) write(m Manifest) error {
	const op = "snapshot.take"
	enc := m
	enc.Entries = slices.Clone(m.Entries)
	for i := range enc.Entries {
		enc.Entries[i].Path = filesync.EncodePath(enc.Entries[i].Path)
	}
	b, err := json.Marshal(enc)
	if err != nil {
		return errs.Wrap(errs.Internal, op, m.Name, err)
	}
	return writeAtomic(filepath.Join(c.dir, "manifests"), c.manifestPath(m.Name), b, !c.opts.NoSync, true, op)
}

// writeAtomic writes dst through a temporary file in dir. With noReplace an existing dst is
// errs.Conflict (the file is linked into place, not renamed over it).
func writeAtomic(dir, dst string, b []byte, durable, noReplace bool, op string) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return errs.Wrap(errs.Internal, op, dst, err)
	}
	_, werr := f.Write(b)
	var serr error
	if durable {
		serr = f.Sync()
	}
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return errs.Wrap(errs.Internal, op, dst, err)
	}
	if err := testHook("rename " + filepath.Base(dst)); err != nil {
		os.Remove(f.Name())
		return err
	}
	if noReplace {
		err = os.Link(f.Name(), dst)
		os.Remove(f.Name())
		if errors.Is(err, fs.ErrExist) {
			return errs.New(errs.Conflict, op, filepath.Base(dst), "a snapshot by that name exists")
		}
	} else if err = os.Rename(f.Name(), dst); err != nil {
		os.Remove(f.Name())
	}
	if err != nil {
		return errs.Wrap(errs.Internal, op, dst, err)
	}
	if durable {
		if d, err := os.Open(dir); err == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
}

// List returns the snapshots f selects, oldest first (by creation time, then name).
func (c *Catalog) List(ctx context.Context, f Filter) ([]Info, error) {
	unlock, err := c.lock(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return c.list(f)
}

func (c *Catalog) list(f Filter) ([]Info, error) {
	ents, err := os.ReadDir(filepath.Join(c.dir, "manifests"))
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.list", c.dir, err)
	}
	var out []Info
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || CheckName(name) != nil {
			continue // temporary files, strays
		}
		m, err := c.read(name)
		if err != nil {
			return nil, err
		}
		in := Info{Name: m.Name, Created: m.Created, Source: m.Source, Adapter: m.Adapter, Files: m.Files, Bytes: m.Bytes}
		if f.match(in) {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b Info) int {
		if d := a.Created.Compare(b.Created); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Delete removes snapshots and frees the blobs no remaining snapshot refers to. A name that is
// not in the catalog is errs.NotFound and nothing is deleted. The manifests go first: a Delete
// killed midway leaves them unlisted and their blobs for the next GC.
func (c *Catalog) Delete(ctx context.Context, names ...string) error {
	for _, n := range names {
		if err := CheckName(n); err != nil {
			return err
		}
	}
	unlock, err := c.lock(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	for _, n := range names {
		if _, err := os.Stat(c.manifestPath(n)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return errs.New(errs.NotFound, "snapshot.delete", n, "no snapshot by that name")
			}
			return errs.Wrap(errs.Internal, "snapshot.delete", n, err)
		}
	}
	return c.deleteLocked(ctx, names)
}

func (c *Catalog) deleteLocked(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := os.Remove(c.manifestPath(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errs.Wrap(errs.Internal, "snapshot.delete", n, err)
		}
	}
	if err := testHook("deleted"); err != nil {
		return err
	}
	_, err := c.gcLocked(ctx)
	return err
}

// Keep applies retention: of the snapshots f selects, the k newest stay and the others are
// deleted (their unreferenced blobs freed). It returns the names deleted, oldest first. k < 0 is
// errs.InvalidInput. Keep(ctx, 3, Filter{Source: id}) keeps the last three of one sandbox;
// Filter{Prefix: "run-7-"} the last of one series of names.
func (c *Catalog) Keep(ctx context.Context, k int, f Filter) ([]string, error) {
	if k < 0 {
		return nil, errs.New(errs.InvalidInput, "snapshot.keep", "", "k must be 0 or more")
	}
	unlock, err := c.lock(ctx, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	all, err := c.list(f)
	if err != nil {
		return nil, err
	}
	if len(all) <= k {
		return nil, nil
	}
	var names []string
	for _, in := range all[:len(all)-k] {
		names = append(names, in.Name)
	}
	return names, c.deleteLocked(ctx, names)
}

// GC frees every blob no snapshot refers to (left by a Take or Delete that did not finish) and
// returns how many it removed.
func (c *Catalog) GC(ctx context.Context) (int, error) {
	unlock, err := c.lock(ctx, true)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return c.gcLocked(ctx)
}

func (c *Catalog) gcLocked(ctx context.Context) (int, error) {
	if err := c.blobs.refresh(ctx); err != nil {
		return 0, err
	}
	all, err := c.list(Filter{})
	if err != nil {
		return 0, err
	}
	live := map[string]bool{}
	for _, in := range all {
		m, err := c.read(in.Name)
		if err != nil {
			return 0, err
		}
		for _, e := range m.Entries {
			if e.Type == TypeFile {
				live[e.Hash] = true
			}
		}
	}
	stored, err := c.blobs.list(ctx)
	if err != nil {
		return 0, err
	}
	var dead []string
	for _, h := range stored {
		if !live[h] {
			dead = append(dead, h)
		}
	}
	if err := c.blobs.remove(ctx, dead); err != nil {
		return 0, err
	}
	return len(dead), nil
}

// testHook, when set by a test, is called at named points ("rename <file>", "deleted",
// "blobs written"); an error it returns stops the operation there, as a crash would.
var testHook = func(string) error { return nil }
