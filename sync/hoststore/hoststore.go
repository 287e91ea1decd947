// Package hoststore is a filesync.Store whose one collection is a plain host directory, file for
// file: the caller's project, which a one-shot container sandbox works on a copy of (the CLI
// hydrates the sandbox's workspace from it and flushes the call's changes back).
//
// Unlike sync/dirstore it writes nothing of its own into the directory: no manifest, no journal,
// no lock file. An entry's version is computed from the file itself (its SHA-256, the executable
// bit, or a link's target text) whenever it is needed, so the store always says what the
// directory holds now, and a change whose base no longer holds (the file was changed on the host
// meanwhile) comes back as a conflict and is not applied.
//
// Every file operation goes through an os.Root on the directory, so nothing the sandbox sends (a
// path, a link target) and nothing found in the directory (a link to /etc/passwd, a link swapped
// in mid-operation) reaches outside it. The last component is never followed: a file is read only
// when it is the regular file lstat saw (O_NOFOLLOW, O_NONBLOCK), and a file or link is written
// under a temporary name in its directory and renamed over the path, replacing a link there
// rather than writing through it. Links that lead outside the directory are listed (as links, by
// their text) and never followed; the store refuses to make one.
//
// Writes are atomic per file (a reader sees the old or the new file) but a batch is not one
// transaction: a process killed during Apply leaves some files new and the others old, never one
// torn, and at worst a temporary file named .sandboxer-sync-* next to its target. Concurrent
// Apply calls, also from other processes, are serialised by an flock on the directory itself.
// A writer outside sandboxer that changes a file between Apply's check and its rename is not
// detected (the window is one file's write).
package hoststore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
)

// Versions Apply reports as Theirs for what is not a file or a link.
const (
	versionDir     = "directory"
	versionSpecial = "special"
	versionOutside = "outside" // the path leads out of the directory through a link
)

// Store is a host directory as a filesync.Store of one collection.
type Store struct {
	dir  string
	coll string

	mu     sync.Mutex // guards root and serialises Apply within the process
	root   *os.Root
	closed bool
}

var _ filesync.Store = (*Store)(nil)

// Open returns the store of dir, whose files are the entries of collection. dir must exist.
// Errors: errs.InvalidInput for a bad collection name, errs.SandboxUnavailable when dir cannot
// be opened.
func Open(dir, collection string) (*Store, error) {
	if err := filesync.CheckCollection("hoststore", collection); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, "hoststore", dir, err)
	}
	return &Store{dir: dir, coll: collection, root: root}, nil
}

// Close implements filesync.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.root.Close()
}

// open returns the root, or errs.SandboxUnavailable after Close, and whether collection is the
// store's (another collection holds nothing).
func (s *Store) open(op, collection string) (*os.Root, bool, error) {
	if err := filesync.CheckCollection(op, collection); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, errs.New(errs.SandboxUnavailable, op, s.dir, "store is closed")
	}
	return s.root, collection == s.coll, nil
}

// Collections implements filesync.Store: the one collection, whatever the directory holds.
func (s *Store) Collections(ctx context.Context) ([]string, error) {
	if _, _, err := s.open("hoststore.collections", s.coll); err != nil {
		return nil, err
	}
	return []string{s.coll}, nil
}

// walk lists every regular file and symbolic link under the directory, sorted by path, without
// following links. A directory the caller may not read is left out (its files are not copied
// into a sandbox, so no flush can touch them); any other error fails the walk.
func walk(ctx context.Context, root *os.Root) ([]string, error) {
	var paths []string
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != "." && errors.Is(err, fs.ErrPermission) {
				return fs.SkipDir
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if t := d.Type(); t.IsRegular() || t&fs.ModeSymlink != 0 {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "hoststore.list", "", err)
	}
	slices.Sort(paths)
	return paths, nil
}

// stat is one path as the directory holds it now.
type stat struct {
	exists bool
	entry  filesync.Entry // Kind, Exec, Size; Hash once hashed
	fi     fs.FileInfo
	other  string // versionDir or versionSpecial for what is neither a file nor a link
}

// version is what Apply compares a change's base with.
func (st stat) version() string {
	if st.other != "" {
		return st.other
	}
	return st.entry.Version()
}

// look lstats p and, for a file, hashes it (streaming, so any size) or with keep != nil reads it
// into *keep when it is at most limit bytes. A link's content is its target text.
func (s *Store) look(root *os.Root, p string, limit int64, keep *[]byte) (stat, error) {
	fi, err := root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return stat{}, nil
	case err != nil:
		return stat{}, mapErr("hoststore", p, err)
	}
	st := stat{exists: true, fi: fi, entry: filesync.Entry{Collection: s.coll, Path: p, Size: fi.Size(), UpdatedAt: fi.ModTime()}}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(p)
		if err != nil {
			return stat{}, mapErr("hoststore", p, err)
		}
		st.entry.Kind, st.entry.Size, st.entry.Hash = filesync.KindSymlink, int64(len(target)), filesync.Hash([]byte(target))
		if keep != nil {
			*keep = []byte(target)
		}
	case fi.Mode().IsRegular():
		st.entry.Kind, st.entry.Exec = filesync.KindFile, fi.Mode()&0o111 != 0
		if keep != nil && fi.Size() > limit {
			return st, nil // too large: no hash, no content (filesync skips it on the size)
		}
		h, data, err := s.readFile(root, p, fi, keep != nil)
		if err != nil {
			return stat{}, err
		}
		st.entry.Hash, st.entry.Size = h, int64(len(data))
		if keep == nil {
			st.entry.Size = fi.Size()
		} else {
			*keep = data
		}
	case fi.IsDir():
		st.other = versionDir
	default:
		st.other = versionSpecial
	}
	return st, nil
}

// readFile hashes the regular file p (the one lstat saw as fi), and returns its content when
// keep is set.
func (s *Store) readFile(root *os.Root, p string, fi fs.FileInfo, keep bool) (string, []byte, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", nil, mapErr("hoststore.read", p, err)
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !now.Mode().IsRegular() || !os.SameFile(now, fi) {
		return "", nil, errs.New(errs.Conflict, "hoststore.read", p, "the file changed while it was read")
	}
	if !keep {
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return "", nil, mapErr("hoststore.read", p, err)
		}
		return hex.EncodeToString(h.Sum(nil)), nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()+1))
	if err != nil {
		return "", nil, mapErr("hoststore.read", p, err)
	}
	return filesync.Hash(data), data, nil
}

// List implements filesync.Store: every file and link, hashed.
func (s *Store) List(ctx context.Context, collection string) ([]filesync.Entry, error) {
	var out []filesync.Entry
	err := s.scan(ctx, "hoststore.list", collection, false, func(e filesync.Entry, _ []byte) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Scan implements filesync.Store. A file over adapter.ReadLimit(ctx) is not read: fn gets its
// entry with its size, no hash, and nil.
func (s *Store) Scan(ctx context.Context, collection string, fn func(filesync.Entry, []byte) error) error {
	return s.scan(ctx, "hoststore.scan", collection, true, fn)
}

func (s *Store) scan(ctx context.Context, op, collection string, content bool, fn func(filesync.Entry, []byte) error) error {
	root, ours, err := s.open(op, collection)
	if err != nil || !ours {
		return err
	}
	paths, err := walk(ctx, root)
	if err != nil {
		return err
	}
	limit := adapter.ReadLimit(ctx)
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		var data []byte
		keep := &data
		if !content {
			keep = nil
		}
		st, err := s.look(root, p, limit, keep)
		if errs.CodeOf(err) == errs.Conflict {
			continue // replaced during the scan: not what the walk saw
		}
		if err != nil {
			return err
		}
		if !st.exists || st.other != "" {
			continue // gone, or no longer a file or a link
		}
		if err := fn(st.entry, data); err != nil {
			return err
		}
	}
	return nil
}

// Get implements filesync.Store.
func (s *Store) Get(ctx context.Context, collection, p string) (filesync.Entry, error) {
	const op = "hoststore.get"
	st, err := s.lookup(ctx, op, collection, p, nil)
	return st.entry, err
}

// Read implements filesync.Store (at most adapter.ReadLimit(ctx) bytes: errs.FileTooLarge).
func (s *Store) Read(ctx context.Context, collection, p string) ([]byte, error) {
	const op = "hoststore.read"
	var data []byte
	st, err := s.lookup(ctx, op, collection, p, &data)
	if err == nil && st.entry.Hash == "" {
		return nil, adapter.FileTooLarge(op, p, st.entry.Size, adapter.ReadLimit(ctx))
	}
	return data, err
}

// lookup is Get and Read: errs.NotFound unless p is a file or a link of the collection.
func (s *Store) lookup(ctx context.Context, op, collection, p string, keep *[]byte) (stat, error) {
	if err := filesync.CheckPath(op, p); err != nil {
		return stat{}, err
	}
	root, ours, err := s.open(op, collection)
	if err != nil {
		return stat{}, err
	}
	var st stat
	if ours {
		if st, err = s.look(root, p, adapter.ReadLimit(ctx), keep); err != nil {
			return stat{}, err
		}
	}
	if !st.exists || st.other != "" {
		return stat{}, errs.New(errs.NotFound, op, p, "no entry")
	}
	return st, nil
}

// Apply implements filesync.Store: each change is checked against the file as it is now and
// applied atomically per file; deletes go first (a file the batch removes may be in the way of a
// directory it makes). A change to another collection, a put whose directory is blocked by a
// file, and a link whose target leads outside the directory are returned as conflicts.
func (s *Store) Apply(ctx context.Context, changes []filesync.Change) ([]filesync.Conflict, error) {
	const op = "hoststore.apply"
	if err := filesync.CheckChanges(op, changes); err != nil {
		return nil, err
	}
	root, _, err := s.open(op, s.coll)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockDir(s.dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ordered := slices.Clone(changes)
	slices.SortStableFunc(ordered, func(a, b filesync.Change) int {
		switch {
		case a.Delete == b.Delete:
			return 0
		case a.Delete:
			return -1
		}
		return 1
	})
	var conflicts []filesync.Conflict
	for _, c := range ordered {
		if err := ctx.Err(); err != nil {
			return conflicts, err
		}
		conflict := func(theirs string) {
			conflicts = append(conflicts, filesync.Conflict{Collection: c.Collection, Path: c.Path, Base: c.Base, Ours: c.Version(), Theirs: theirs})
		}
		if c.Collection != s.coll {
			conflict("")
			continue
		}
		st, err := s.look(root, c.Path, 0, nil)
		switch errs.CodeOf(err) {
		case errs.Conflict:
			conflict("") // replaced while hashed: someone is writing it
			continue
		case errs.PathEscape:
			conflict(versionOutside) // a link on the way leads out: never written through
			continue
		}
		if err != nil {
			return conflicts, err
		}
		v := st.version()
		switch {
		case filesync.Settled(c, st.exists, v):
			continue
		case !filesync.Holds(c.Base, st.exists, v) || c.KeepContent && !filesync.KeepsContent(c, v):
			conflict(v)
			continue
		case c.Kind == filesync.KindSymlink && !filesync.LinkInside(c.Path, string(c.Content), nil):
			conflict(v)
			continue
		}
		err = s.apply(root, c, st)
		switch errs.CodeOf(err) {
		case errs.Conflict:
			conflict(v)
			continue
		case errs.PathEscape:
			conflict(versionOutside)
			continue
		}
		if err != nil {
			return conflicts, err
		}
	}
	return conflicts, nil
}

// apply makes one change that Apply accepted; st is the path as it is now.
func (s *Store) apply(root *os.Root, c filesync.Change, st stat) error {
	const op = "hoststore.apply"
	switch {
	case c.Delete:
		if !st.exists {
			return nil
		}
		if err := root.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return mapErr(op, c.Path, err)
		}
		pruneDirs(root, path.Dir(c.Path))
		return nil
	case c.NoContent:
		return nil // metadata only: the directory has nowhere to keep it
	case c.KeepContent:
		return mapErr(op, c.Path, root.Chmod(c.Path, execPerm(st.fi.Mode().Perm(), c.Exec)))
	}
	dir := path.Dir(c.Path)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
			return errs.New(errs.Conflict, op, c.Path, "a file is in the way of its directory")
		}
		return mapErr(op, c.Path, err)
	}
	tmp := path.Join(dir, ".sandboxer-sync-"+rand.Text())
	if c.Kind == filesync.KindSymlink {
		if err := root.Symlink(string(c.Content), tmp); err != nil {
			return mapErr(op, c.Path, err)
		}
	} else {
		// A replaced file keeps its permissions (a 0600 file stays private), the executable bit
		// as the change says; a new one gets 0644 or 0755 less the umask.
		perm, keep := fs.FileMode(0o644), false
		if st.exists && st.entry.Kind == filesync.KindFile {
			perm, keep = st.fi.Mode().Perm(), true
		}
		perm = execPerm(perm, c.Exec)
		if err := writeTemp(root, tmp, c.Content, perm, keep); err != nil {
			_ = root.Remove(tmp)
			return mapErr(op, c.Path, err)
		}
	}
	if err := root.Rename(tmp, c.Path); err != nil {
		_ = root.Remove(tmp)
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return errs.New(errs.Conflict, op, c.Path, "a directory is in the way")
		}
		return mapErr(op, c.Path, err)
	}
	return nil
}

// writeTemp creates tmp (which must not exist) with data, fsynced; exact sets perm regardless
// of the umask.
func writeTemp(root *os.Root, tmp string, data []byte, perm fs.FileMode, exact bool) error {
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && exact {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// execPerm is perm with the executable bits set where it is readable (exec), or cleared.
func execPerm(perm fs.FileMode, exec bool) fs.FileMode {
	if exec {
		return perm | (perm&0o444)>>2 | 0o100
	}
	return perm &^ 0o111
}

// pruneDirs removes dir and its parents while they are empty: a directory whose files the call
// deleted goes with them (FileSync keeps no directories), up to the store's root.
func pruneDirs(root *os.Root, dir string) {
	for dir != "." && dir != "/" && dir != "" {
		if fi, err := root.Lstat(dir); err != nil || !fi.IsDir() || root.Remove(dir) != nil { // not empty: stop
			return
		}
		dir = path.Dir(dir)
	}
}

// lockDir takes an exclusive flock on the directory itself (no lock file is written into it).
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, "hoststore", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, errs.Wrap(errs.Internal, "hoststore", dir, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}

// mapErr turns an error of an os.Root call into a coded error.
func mapErr(op, p string, err error) error {
	switch {
	case err == nil:
		return nil
	case adapter.IsRootEscape(err) || errors.Is(err, syscall.ELOOP):
		return errs.Wrap(errs.PathEscape, op, p, err)
	case errors.Is(err, fs.ErrNotExist):
		return errs.Wrap(errs.NotFound, op, p, err)
	}
	return errs.Wrap(errs.Internal, op, p, err)
}
