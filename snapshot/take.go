package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
)

// streamOver is the size above which a file is streamed (adapter.FileStreamer, where the
// sandbox has it) rather than read whole; smaller files are read in batches (adapter.BulkReader).
const streamOver = 4 << 20

// batchBytes and batchFiles bound one batch of small files read or written together.
const (
	batchBytes = 8 << 20
	batchFiles = 256
)

// Take snapshots sb's workspace as name and returns its manifest. The name must be new
// (errs.Conflict otherwise; errs.InvalidInput for a bad one). Only blobs the catalog does not
// hold yet are written; files whose size, modification time and inode match the last Take of
// the same source sandbox are not read again (the source is adapter.Identified's ID, else the
// workspace path).
//
// The sandbox must list its files (adapter.Lister, which every adapter of this module has), and
// its directories on the host (adapter.DirLister) or else run `find` for empty directories. Take
// does not stop the sandbox's processes: a file written during the Take is captured as it was
// read. Pause the sandbox for a consistent snapshot: a paused sandbox whose workspace is on the
// host (oci, docker on its capped disk) is snapshotted without running anything in it. A
// file that vanishes during the Take is left out. Errors: the adapter's (errs.SandboxUnavailable,
// ...), a context error, errs.Internal for the catalog's I/O. Whatever the error, no snapshot is
// listed under name.
func (c *Catalog) Take(ctx context.Context, sb adapter.Sandbox, name string) (Manifest, error) {
	return c.TakeAs(ctx, sb, name, sourceOf(sb))
}

// TakeAs is Take with the snapshot's Source given: a caller that knows the sandbox by another
// name than the adapter's (a server, by its own ids). The stat cache is kept per source.
func (c *Catalog) TakeAs(ctx context.Context, sb adapter.Sandbox, name, source string) (Manifest, error) {
	const op = "snapshot.take"
	if err := CheckName(name); err != nil {
		return Manifest{}, err
	}
	lister, ok := sb.(adapter.Lister)
	if !ok {
		return Manifest{}, errs.Wrap(errs.InvalidInput, op, name, fmt.Errorf("the sandbox cannot list its files: %w", errors.ErrUnsupported))
	}
	unlock, err := c.lock(ctx, false)
	if err != nil {
		return Manifest{}, err
	}
	defer unlock()
	if _, err := os.Lstat(c.manifestPath(name)); err == nil {
		return Manifest{}, errs.New(errs.Conflict, op, name, "a snapshot by that name exists")
	}
	if err := c.blobs.refresh(ctx); err != nil {
		return Manifest{}, err
	}
	tx, err := c.blobs.begin(ctx, !c.opts.NoSync)
	if err != nil {
		return Manifest{}, err
	}
	committed := false
	defer func() {
		if !committed {
			tx.abort()
		}
	}()
	m := Manifest{Version: manifestVersion, Name: name, Created: time.Now().UTC(), Source: source}
	// The listing, the find of empty directories (and the adapter's name) and the stat cache's
	// load overlap: each waits on something else (the file system, a process, the disk).
	var (
		cache   cacheFile
		dirs    func(files []adapter.FileInfo) []string
		dirsErr error
		wg      sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		cache = c.loadCache(m.Source)
	}()
	go func() {
		defer wg.Done()
		dirs, dirsErr = emptyDirs(ctx, sb)
		// The local adapter probes the kernel on its first Capabilities call (300 ms here).
		if cp, ok := sb.(adapter.Capable); ok {
			m.Adapter = cp.Capabilities().Adapter
		}
	}()
	start := time.Now()
	files, err := lister.ListFiles(ctx, "")
	wg.Wait()
	if err != nil {
		return Manifest{}, err
	}
	if dirsErr != nil {
		return Manifest{}, dirsErr
	}

	links := map[string]string{}
	for _, f := range files {
		if f.IsLink() {
			links[f.Path] = f.Link
		}
	}
	next := cacheFile{Snapshot: name, Files: make(map[string]cached, len(files))}
	var toRead []adapter.FileInfo
	for _, f := range files {
		switch {
		case filesync.CheckPath(op, f.Path) != nil:
			m.Skipped = append(m.Skipped, f.Path)
		case f.IsLink():
			if !filesync.LinkInside(f.Path, f.Link, links) || filesync.CheckLinkText(op, f.Path, []byte(f.Link)) != nil {
				m.Skipped = append(m.Skipped, f.Path)
				continue
			}
			m.Entries = append(m.Entries, Entry{Path: f.Path, Type: TypeSymlink, Target: f.Link})
		default:
			if k, ok := cache.Files[f.Path]; ok && k.matches(f) {
				// The blob may have been freed since (its snapshots deleted): then read again.
				// For packs this is a map lookup; GC waits for our lock.
				live, err := c.blobs.has(ctx, k.Hash)
				if err != nil {
					return Manifest{}, err
				}
				if live {
					m.Entries = append(m.Entries, Entry{Path: f.Path, Type: TypeFile, Mode: f.Mode.Perm(), Size: f.Size, Hash: k.Hash})
					next.Files[f.Path] = k
					continue
				}
			}
			toRead = append(toRead, f)
		}
	}
	for _, d := range dirs(files) {
		if filesync.CheckPath(op, d) != nil {
			m.Skipped = append(m.Skipped, d)
			continue
		}
		m.Entries = append(m.Entries, Entry{Path: d, Type: TypeDir, Mode: 0o755})
	}

	read, err := c.readFiles(ctx, sb, toRead, tx)
	if err != nil {
		return Manifest{}, err
	}
	m.Read = len(read)
	for _, r := range read {
		if r.stored {
			m.Stored++
		}
		m.Entries = append(m.Entries, Entry{Path: r.f.Path, Type: TypeFile, Mode: r.f.Mode.Perm(), Size: r.size, Hash: r.hash})
		if r.size == r.f.Size {
			next.Files[r.f.Path] = cacheEntry(r.f, r.hash, start)
		}
	}
	slices.SortFunc(m.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(m.Skipped)
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			m.Files++
			m.Bytes += e.Size
		}
	}
	if err := ctx.Err(); err != nil {
		return Manifest{}, err
	}
	if err := tx.commit(ctx); err != nil {
		return Manifest{}, err
	}
	committed = true
	if err := testHook("blobs written"); err != nil {
		return Manifest{}, err
	}
	if err := ctx.Err(); err != nil {
		return Manifest{}, err
	}
	if err := c.write(m); err != nil {
		return Manifest{}, err
	}
	c.saveCache(m.Source, next) // a cache that cannot be written only costs the next Take time
	return m, nil
}

// sourceOf names the sandbox for the stat cache and Manifest.Source.
func sourceOf(sb adapter.Sandbox) string {
	if id, ok := sb.(adapter.Identified); ok && id.ID() != "" {
		return id.ID()
	}
	return adapter.WorkspaceOf(sb)
}

// emptyDirs returns what lists the workspace's empty directories given its files and links:
// from the directories the sandbox lists on the host (adapter.DirLister: nothing runs in the
// sandbox, which may be paused), else from one `find` (adapter.Lister lists no directories). A
// listing or find that cannot run, or fails, fails the Take: a snapshot never silently drops
// part of the tree.
func emptyDirs(ctx context.Context, sb adapter.Sandbox) (func(files []adapter.FileInfo) []string, error) {
	if dl, ok := sb.(adapter.DirLister); ok {
		all, err := dl.ListDirs(ctx, "")
		if err == nil {
			return func(files []adapter.FileInfo) []string { return onlyEmpty(all, files) }, nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"find", ".", "-mindepth", "1", "-type", "d", "-empty", "-print0"}, MaxOutputBytes: 64 << 20})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || res.StdoutTruncated {
		return nil, errs.New(errs.Internal, "snapshot.take", "", "find of empty directories exited with %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	var out []string
	for _, p := range bytes.Split(res.Stdout, []byte{0}) {
		if len(p) > 0 {
			out = append(out, strings.TrimPrefix(string(p), "./"))
		}
	}
	return func([]adapter.FileInfo) []string { return out }, nil
}

// onlyEmpty is the directories of dirs that hold no file, link or directory.
func onlyEmpty(dirs []string, files []adapter.FileInfo) []string {
	full := map[string]bool{}
	mark := func(p string) {
		for d := path.Dir(p); d != "." && !full[d]; d = path.Dir(d) {
			full[d] = true
		}
	}
	for _, f := range files {
		mark(f.Path)
	}
	for _, d := range dirs {
		mark(d)
	}
	var out []string
	for _, d := range dirs {
		if !full[d] {
			out = append(out, d)
		}
	}
	return out
}

// readResult is one file read and stored by a Take.
type readResult struct {
	f      adapter.FileInfo
	hash   string
	size   int64
	stored bool // a new blob
}

// readFiles reads, hashes and stores files with Options.Workers workers: small files in
// batches (one BulkReader round trip each where the sandbox has it), large ones streamed. A
// file gone since the listing is left out.
// With tx nil it only hashes (a restore's read-back).
func (c *Catalog) readFiles(ctx context.Context, sb adapter.Sandbox, files []adapter.FileInfo, tx blobTx) ([]readResult, error) {
	jobs := batches(files, func(f adapter.FileInfo) int64 { return f.Size })
	var mu sync.Mutex
	out := make([]readResult, 0, len(files))
	err := runJobs(ctx, c.opts.Workers, jobs, func(ctx context.Context, job []adapter.FileInfo) error {
		res, err := readJob(ctx, sb, job, tx)
		if err != nil {
			return err
		}
		mu.Lock()
		out = append(out, res...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func readJob(ctx context.Context, sb adapter.Sandbox, job []adapter.FileInfo, tx blobTx) ([]readResult, error) {
	if len(job) == 1 && job[0].Size > streamOver {
		if fs, ok := sb.(adapter.FileStreamer); ok {
			r, err := streamOne(ctx, fs, job[0], tx)
			if errs.CodeOf(err) == errs.NotFound {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return []readResult{r}, nil
		}
	}
	out := make([]readResult, 0, len(job))
	store := func(f adapter.FileInfo, data []byte) error {
		r := readResult{f: f, hash: filesync.Hash(data), size: int64(len(data))}
		if tx != nil {
			var err error
			if r.stored, err = tx.put(ctx, r.hash, data); err != nil {
				return err
			}
		}
		out = append(out, r)
		return nil
	}
	if br, ok := sb.(adapter.BulkReader); ok && len(job) > 1 {
		byPath := make(map[string]adapter.FileInfo, len(job))
		paths := make([]string, len(job))
		for i, f := range job {
			byPath[f.Path] = f
			paths[i] = f.Path
		}
		err := br.ReadFiles(ctx, paths, func(p string, data []byte) error {
			f, ok := byPath[p]
			if !ok {
				return nil
			}
			delete(byPath, p)
			return store(f, data)
		})
		if err == nil {
			return out, nil
		}
		if errs.CodeOf(err) != errs.NotFound || ctx.Err() != nil {
			return nil, err
		}
		// A file vanished, which stops a bulk read: finish the batch file by file.
		job = job[:0]
		for _, f := range byPath {
			job = append(job, f)
		}
	}
	for _, f := range job {
		data, err := sb.ReadFile(ctx, f.Path)
		if errs.CodeOf(err) == errs.NotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := store(f, data); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// streamOne copies one large file into a new blob (tx set) or only hashes it, without holding
// it in memory.
func streamOne(ctx context.Context, fs adapter.FileStreamer, f adapter.FileInfo, tx blobTx) (readResult, error) {
	rc, _, err := fs.OpenFile(ctx, f.Path)
	if err != nil {
		return readResult{}, err
	}
	defer rc.Close()
	if tx == nil {
		h := sha256.New()
		n, err := io.Copy(h, adapter.ContextReader(ctx, rc))
		if err != nil {
			return readResult{}, errs.Wrap(errs.Internal, "snapshot.verify", f.Path, err)
		}
		return readResult{f: f, hash: hex.EncodeToString(h.Sum(nil)), size: n}, nil
	}
	w, err := tx.create(ctx)
	if err != nil {
		return readResult{}, err
	}
	if _, err := io.Copy(w, adapter.ContextReader(ctx, rc)); err != nil {
		w.abort()
		return readResult{}, errs.Wrap(errs.Internal, "snapshot.take", f.Path, err)
	}
	h, n, stored, err := w.done(ctx)
	if err != nil {
		return readResult{}, err
	}
	return readResult{f: f, hash: h, size: n, stored: stored}, nil
}

// cacheFile is the stat cache of one source: what its last Take hashed.
type cacheFile struct {
	Snapshot string            // the Take that wrote it
	Files    map[string]cached // path -> stat and hash
}

type cached struct {
	Size  int64
	MTime int64 // Unix nanoseconds
	Ino   uint64
	Hash  string
}

func (k cached) matches(f adapter.FileInfo) bool {
	return k.Size == f.Size && k.MTime == f.ModTime.UnixNano() && k.Ino == f.Inode && isHash(k.Hash)
}

// cacheEntry is f's cache entry, or an entry that never matches when f was modified too close to
// the listing (start) for its timestamp to tell a later write apart: git's racy-clean rule, with
// FileSync's windows.
func cacheEntry(f adapter.FileInfo, h string, start time.Time) cached {
	w := filesync.DefaultRacyWindow
	if f.ModTime.Nanosecond() == 0 {
		w = 2 * time.Second
	}
	if f.ModTime.IsZero() || !f.ModTime.Before(start.Add(-w)) {
		return cached{} // no time to trust (an adapter without one), or too recent
	}
	return cached{Size: f.Size, MTime: f.ModTime.UnixNano(), Ino: f.Inode, Hash: h}
}

func (c *Catalog) cachePath(source string) string {
	sum := sha256.Sum256([]byte(source))
	return filepath.Join(c.dir, "cache", hex.EncodeToString(sum[:12]))
}

// The cache file is binary (a JSON one took longer to parse than the rest of a Take that
// finds 10 of 10,000 files changed): cacheMagic, the snapshot name (uvarint length, bytes),
// then per file its path (uvarint length, bytes), size, mtime and inode (uvarints; mtime
// zig-zag) and the 32-byte hash.
const cacheMagic = "SBXCACHE1\n"

func (c *Catalog) loadCache(source string) cacheFile {
	if source == "" {
		return cacheFile{}
	}
	b, err := os.ReadFile(c.cachePath(source))
	if err != nil || !bytes.HasPrefix(b, []byte(cacheMagic)) {
		return cacheFile{}
	}
	b = b[len(cacheMagic):]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	num := func() (uint64, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return n, true
	}
	cf := cacheFile{Files: map[string]cached{}}
	var ok bool
	if cf.Snapshot, ok = str(); !ok {
		return cacheFile{}
	}
	for len(b) > 0 {
		p, ok1 := str()
		size, ok2 := num()
		mt, ok3 := num()
		ino, ok4 := num()
		if !ok1 || !ok2 || !ok3 || !ok4 || len(b) < 32 {
			return cacheFile{}
		}
		cf.Files[p] = cached{Size: int64(size), MTime: int64(mt>>1) ^ -int64(mt&1), Ino: ino, Hash: hex.EncodeToString(b[:32])}
		b = b[32:]
	}
	return cf
}

func (c *Catalog) saveCache(source string, cf cacheFile) {
	if source == "" {
		return
	}
	b := make([]byte, 0, 64+len(cf.Files)*80)
	b = append(b, cacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(cf.Snapshot)))
	b = append(b, cf.Snapshot...)
	for p, k := range cf.Files {
		h, err := hex.DecodeString(k.Hash)
		if err != nil || len(h) != 32 {
			continue // racy: not cached
		}
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, uint64(k.Size))
		b = binary.AppendUvarint(b, uint64(k.MTime<<1)^uint64(k.MTime>>63))
		b = binary.AppendUvarint(b, k.Ino)
		b = append(b, h...)
	}
	_ = writeAtomic(filepath.Join(c.dir, "cache"), c.cachePath(source), b, false, false, "snapshot.take")
}

// parents calls fn for each parent directory of p, nearest last ("a", "a/b" for "a/b/c").
func parents(p string, fn func(string)) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			fn(p[:i])
		}
	}
}
