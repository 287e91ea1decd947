package snapshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandboxer/sandboxer/errs"
)

// packBlobs, the default blob store, keeps blobs in pack files, as git and restic do: one
// Take appends its new blobs to a pack (DIR/<id>.pack, rolled over at packMax; a file streamed
// in gets a pack of its own) and, once the pack is complete, writes its index DIR/<id>.idx by
// rename. A pack is part of the store only once its index exists, so a Take killed midway
// leaves packs without an index, which GC removes. Creating one file per blob costs more than
// the data on most file systems (10,000 creates take longer than writing 100 MB): packs make a
// first snapshot cost about what a tar of the workspace costs.
//
// Index format: the magic "SBXIDX1\n", then per blob its 32-byte SHA-256, its offset and its
// size (big-endian uint64 each), then the SHA-256 of everything before. An index that does not
// check out is ignored (its blobs are missing, which restores report), never trusted.
type packBlobs struct {
	dir string

	mu    sync.Mutex
	index map[string]blobLoc // hash (hex) -> where
	packs map[string]*pack   // id -> pack with a valid index
}

type blobLoc struct {
	pack      string
	off, size int64
}

type pack struct {
	entries []idxEntry
	f       *os.File // opened on first read
}

type idxEntry struct {
	hash      string
	off, size int64
}

const (
	idxMagic = "SBXIDX1\n"
	// packMax is the size past which a Take starts a new pack.
	packMax = 256 << 20
)

func openPackBlobs(dir string) (*packBlobs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.open", dir, err)
	}
	return &packBlobs{dir: dir, index: map[string]blobLoc{}, packs: map[string]*pack{}}, nil
}

func (b *packBlobs) path(id, ext string) string { return filepath.Join(b.dir, id+ext) }

func (b *packBlobs) refresh(context.Context) error {
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return errs.Wrap(errs.Internal, "snapshot.blobs", b.dir, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[string]bool{}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !isPackID(id) {
			continue
		}
		seen[id] = true
		if b.packs[id] != nil {
			continue
		}
		entries, err := readIdx(b.path(id, ".idx"))
		if err != nil {
			continue // ignored: its blobs are missing
		}
		b.addLocked(id, entries)
	}
	for id := range b.packs {
		if !seen[id] {
			b.dropLocked(id)
		}
	}
	return nil
}

func (b *packBlobs) addLocked(id string, entries []idxEntry) {
	b.packs[id] = &pack{entries: entries}
	for _, e := range entries {
		if _, dup := b.index[e.hash]; !dup {
			b.index[e.hash] = blobLoc{pack: id, off: e.off, size: e.size}
		}
	}
}

func (b *packBlobs) dropLocked(id string) {
	p := b.packs[id]
	if p == nil {
		return
	}
	if p.f != nil {
		p.f.Close()
	}
	delete(b.packs, id)
	lost := map[string]bool{}
	for _, e := range p.entries {
		if l, ok := b.index[e.hash]; ok && l.pack == id {
			delete(b.index, e.hash)
			lost[e.hash] = true
		}
	}
	if len(lost) == 0 {
		return
	}
	// Another pack may hold the same blob (a rewrite that a crash interrupted): one pass over
	// the others finds it.
	for oid, op := range b.packs {
		for _, oe := range op.entries {
			if _, ok := b.index[oe.hash]; lost[oe.hash] && !ok {
				b.index[oe.hash] = blobLoc{pack: oid, off: oe.off, size: oe.size}
			}
		}
	}
}

func isPackID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

func newPackID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func readIdx(p string) ([]idxEntry, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	const rec = 32 + 8 + 8
	if len(b) < len(idxMagic)+32 || string(b[:len(idxMagic)]) != idxMagic || (len(b)-len(idxMagic)-32)%rec != 0 {
		return nil, errors.New("malformed pack index")
	}
	body, sum := b[:len(b)-32], b[len(b)-32:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errors.New("pack index checksum mismatch")
	}
	body = body[len(idxMagic):]
	out := make([]idxEntry, 0, len(body)/rec)
	for ; len(body) > 0; body = body[rec:] {
		e := idxEntry{hash: hex.EncodeToString(body[:32]), off: int64(binary.BigEndian.Uint64(body[32:])), size: int64(binary.BigEndian.Uint64(body[40:]))}
		if e.off < 0 || e.size < 0 {
			return nil, errors.New("malformed pack index")
		}
		out = append(out, e)
	}
	return out, nil
}

func encodeIdx(entries []idxEntry) []byte {
	b := make([]byte, 0, len(idxMagic)+len(entries)*48+32)
	b = append(b, idxMagic...)
	for _, e := range entries {
		h, _ := hex.DecodeString(e.hash)
		b = append(b, h...)
		b = binary.BigEndian.AppendUint64(b, uint64(e.off))
		b = binary.BigEndian.AppendUint64(b, uint64(e.size))
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

func (b *packBlobs) has(_ context.Context, h string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.index[h]
	return ok, nil
}

func (b *packBlobs) open(_ context.Context, h string) (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.index[h]
	if !ok {
		return nil, errs.New(errs.NotFound, "snapshot.blob", h, "blob is not in the catalog")
	}
	p := b.packs[l.pack]
	if p.f == nil {
		f, err := os.Open(b.path(l.pack, ".pack"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errs.New(errs.NotFound, "snapshot.blob", h, "the pack holding the blob is gone")
		}
		if err != nil {
			return nil, errs.Wrap(errs.Internal, "snapshot.blob", h, err)
		}
		p.f = f
	}
	return io.NopCloser(io.NewSectionReader(p.f, l.off, l.size)), nil
}

func (b *packBlobs) list(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.index))
	for h := range b.index {
		out = append(out, h)
	}
	return out, nil
}

func (b *packBlobs) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.packs {
		if p.f != nil {
			p.f.Close()
			p.f = nil
		}
	}
	return nil
}

// remove drops hs from the store: a pack left with no live blob is deleted, one whose live
// blobs fill less than three quarters of it is rewritten (a new pack and index first, then the
// old ones go: a crash in between leaves the blobs twice, never lost), any other gets a new
// index without them (the space comes back at a later rewrite). Packs without an index
// (unfinished Takes) are deleted.
func (b *packBlobs) remove(ctx context.Context, hs []string) error {
	if err := b.refresh(ctx); err != nil {
		return err
	}
	dead := make(map[string]bool, len(hs))
	for _, h := range hs {
		dead[h] = true
	}
	b.mu.Lock()
	ids := make([]string, 0, len(b.packs))
	for id := range b.packs {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.prune(id, dead); err != nil {
			return err
		}
	}
	// Leftovers: packs without an index, temporary files.
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return errs.Wrap(errs.Internal, "snapshot.gc", b.dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		if id, ok := strings.CutSuffix(name, ".pack"); ok {
			if _, err := os.Lstat(b.path(id, ".idx")); errors.Is(err, fs.ErrNotExist) {
				os.Remove(filepath.Join(b.dir, name))
			}
		} else if strings.HasPrefix(name, ".tmp-") {
			os.Remove(filepath.Join(b.dir, name))
		}
	}
	return nil
}

func (b *packBlobs) prune(id string, dead map[string]bool) error {
	const op = "snapshot.gc"
	b.mu.Lock()
	p := b.packs[id]
	var live []idxEntry
	var liveBytes int64
	for _, e := range p.entries {
		if !dead[e.hash] {
			live = append(live, e)
			liveBytes += e.size
		}
	}
	b.mu.Unlock()
	if len(live) == len(p.entries) {
		return nil
	}
	if len(live) == 0 {
		if err := os.Remove(b.path(id, ".idx")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errs.Wrap(errs.Internal, op, id, err)
		}
		b.mu.Lock()
		b.dropLocked(id)
		b.mu.Unlock()
		os.Remove(b.path(id, ".pack"))
		return nil
	}
	fi, err := os.Stat(b.path(id, ".pack"))
	if err != nil {
		return errs.Wrap(errs.Internal, op, id, err)
	}
	if liveBytes >= fi.Size()*3/4 {
		// Keep the pack; its index forgets the dead blobs.
		if err := writeAtomic(b.dir, b.path(id, ".idx"), encodeIdx(live), true, false, op); err != nil {
			return err
		}
		b.mu.Lock()
		b.dropLocked(id)
		b.addLocked(id, live)
		b.mu.Unlock()
		return nil
	}
	// Rewrite the live blobs into a new pack.
	src, err := os.Open(b.path(id, ".pack"))
	if err != nil {
		return errs.Wrap(errs.Internal, op, id, err)
	}
	defer src.Close()
	nid := newPackID()
	dst, err := os.OpenFile(b.path(nid, ".pack"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return errs.Wrap(errs.Internal, op, nid, err)
	}
	var off int64
	moved := make([]idxEntry, len(live))
	for i, e := range live {
		if _, err := io.Copy(dst, io.NewSectionReader(src, e.off, e.size)); err != nil {
			dst.Close()
			os.Remove(dst.Name())
			return errs.Wrap(errs.Internal, op, id, err)
		}
		moved[i] = idxEntry{hash: e.hash, off: off, size: e.size}
		off += e.size
	}
	serr := dst.Sync()
	if err := errors.Join(serr, dst.Close()); err != nil {
		os.Remove(dst.Name())
		return errs.Wrap(errs.Internal, op, nid, err)
	}
	if err := writeAtomic(b.dir, b.path(nid, ".idx"), encodeIdx(moved), true, false, op); err != nil {
		os.Remove(dst.Name())
		return err
	}
	b.mu.Lock()
	b.dropLocked(id)
	b.addLocked(nid, moved)
	b.mu.Unlock()
	if err := os.Remove(b.path(id, ".idx")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.Wrap(errs.Internal, op, id, err)
	}
	os.Remove(b.path(id, ".pack"))
	return nil
}

// packTx is one Take's new blobs: small ones appended to the current pack, each streamed one
// in a pack of its own.
type packTx struct {
	b *packBlobs

	mu      sync.Mutex
	cur     *os.File
	curID   string
	curOff  int64
	curIdx  []idxEntry
	flushed int64 // bytes of cur whose writeback was started (durable)
	durable bool
	pending map[string]bool       // hashes put by this batch
	full    map[string][]idxEntry // packs written, awaiting their index at commit
	files   []*os.File            // every pack file this batch made (closed at commit or abort)
}

func (b *packBlobs) begin(_ context.Context, durable bool) (blobTx, error) {
	return &packTx{b: b, durable: durable, pending: map[string]bool{}, full: map[string][]idxEntry{}}, nil
}

// writebackChunk is how much of a pack is written before its writeback to disk is started
// (durable batches): the fsync at commit then finds most of the pack on disk already.
const writebackChunk = 8 << 20

// known reports whether h is stored or put already; the caller holds t.mu.
func (t *packTx) known(h string) bool {
	if t.pending[h] {
		return true
	}
	ok, _ := t.b.has(context.Background(), h)
	return ok
}

func (t *packTx) put(_ context.Context, h string, data []byte) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known(h) {
		return false, nil
	}
	if t.cur == nil {
		id := newPackID()
		f, err := os.OpenFile(t.b.path(id, ".pack"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return false, errs.Wrap(errs.Internal, "snapshot.blob", id, err)
		}
		t.cur, t.curID, t.curOff, t.curIdx, t.flushed = f, id, 0, nil, 0
		t.files = append(t.files, f)
	}
	if _, err := t.cur.Write(data); err != nil {
		return false, errs.Wrap(errs.Internal, "snapshot.blob", t.curID, err)
	}
	t.curIdx = append(t.curIdx, idxEntry{hash: h, off: t.curOff, size: int64(len(data))})
	t.curOff += int64(len(data))
	t.pending[h] = true
	if t.durable && t.curOff-t.flushed >= writebackChunk {
		// Start the writeback, do not wait for it (a hint: an error here shows at the fsync).
		startWriteback(t.cur, t.flushed, t.curOff-t.flushed)
		t.flushed = t.curOff
	}
	if t.curOff >= packMax {
		t.full[t.curID] = t.curIdx
		t.cur = nil
	}
	return true, nil
}

func (t *packTx) create(context.Context) (blobWriter, error) {
	id := newPackID()
	f, err := os.OpenFile(t.b.path(id, ".pack"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.blob", id, err)
	}
	t.mu.Lock()
	t.files = append(t.files, f)
	t.mu.Unlock()
	return &packWriter{t: t, id: id, f: f, h: sha256.New()}, nil
}

type packWriter struct {
	t  *packTx
	id string
	f  *os.File
	h  hash.Hash
	n  int64
}

func (w *packWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *packWriter) done(context.Context) (string, int64, bool, error) {
	h := hex.EncodeToString(w.h.Sum(nil))
	t := w.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known(h) {
		os.Remove(w.f.Name()) // closed with the batch
		return h, w.n, false, nil
	}
	t.pending[h] = true
	t.full[w.id] = []idxEntry{{hash: h, off: 0, size: w.n}}
	return h, w.n, true, nil
}

func (w *packWriter) abort() { os.Remove(w.f.Name()) }

func (t *packTx) commit(context.Context) error {
	durable := t.durable
	const op = "snapshot.take"
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != nil {
		t.full[t.curID] = t.curIdx
		t.cur = nil
	}
	var errl []error
	for _, f := range t.files {
		if durable {
			if _, ok := t.full[strings.TrimSuffix(filepath.Base(f.Name()), ".pack")]; ok {
				errl = append(errl, f.Sync())
			}
		}
		errl = append(errl, f.Close())
	}
	t.files = nil
	if err := errors.Join(errl...); err != nil {
		return errs.Wrap(errs.Internal, op, t.b.dir, err)
	}
	for id, entries := range t.full {
		if err := writeAtomic(t.b.dir, t.b.path(id, ".idx"), encodeIdx(entries), durable, false, op); err != nil {
			return err
		}
		t.b.mu.Lock()
		t.b.addLocked(id, entries)
		t.b.mu.Unlock()
	}
	t.full = map[string][]idxEntry{}
	return nil
}

func (t *packTx) abort() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.files {
		f.Close()
		os.Remove(f.Name())
	}
	t.files = nil
}
