package snapshot

import (
	"bytes"
	"context"
	"io"
	"path"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
)

// blobs is where a catalog keeps file contents, by SHA-256. Two kinds: packBlobs (the default:
// pack files with an index each) and storeBlobs (any filesync.Store, Options.Store). Nothing
// here checks that content matches its name on read: restores hash what they read back.
type blobs interface {
	// refresh learns what other processes stored since the last call.
	refresh(ctx context.Context) error
	// has reports whether the blob is stored (and committed).
	has(ctx context.Context, h string) (bool, error)
	// begin starts a batch of puts that become visible together at commit, and durable across
	// a power loss when durable is set.
	begin(ctx context.Context, durable bool) (blobTx, error)
	// open reads one blob; errs.NotFound when it is not stored.
	open(ctx context.Context, h string) (io.ReadCloser, error)
	// list returns every stored hash.
	list(ctx context.Context) ([]string, error)
	// remove deletes blobs (missing ones are fine) and every leftover of a batch that was
	// never committed. It runs under the catalog's exclusive lock.
	remove(ctx context.Context, hs []string) error
	close() error
}

// blobTx is one Take's batch of new blobs. It is safe for concurrent use.
type blobTx interface {
	// put stores data under its hash h unless it is stored already; stored says it was new.
	put(ctx context.Context, h string, data []byte) (stored bool, err error)
	// create streams a blob whose hash is known only once it is written.
	create(ctx context.Context) (blobWriter, error)
	// commit makes every put visible (and durable, as begin was told).
	commit(ctx context.Context) error
	// abort drops what the batch wrote (what it cannot drop, GC frees).
	abort()
}

// blobWriter streams one blob in; done names it by the hash of what was written.
type blobWriter interface {
	io.Writer
	done(ctx context.Context) (h string, size int64, stored bool, err error)
	abort()
}

// isHash reports whether s is a lower-case hex SHA-256.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// blobCollection is the collection of a filesync.Store that holds a catalog's blobs, each at
// the path "ab/<hash>".
const blobCollection = "snapshot-blobs"

// storeBlobs keeps blobs in a filesync.Store (Options.Store): the collection blobCollection,
// one entry per blob, each put its own Apply (crash-safe by the store's contract). The store's
// interface moves content as []byte, so a blob is held in memory while it is written or read.
type storeBlobs struct {
	st filesync.Store
}

func storePath(h string) string { return h[:2] + "/" + h }

func (s storeBlobs) refresh(context.Context) error { return nil }

func (s storeBlobs) has(ctx context.Context, h string) (bool, error) {
	_, err := s.st.Get(ctx, blobCollection, storePath(h))
	if errs.CodeOf(err) == errs.NotFound {
		return false, nil
	}
	return err == nil, err
}

func (s storeBlobs) begin(context.Context, bool) (blobTx, error) { return s, nil }

func (s storeBlobs) put(ctx context.Context, h string, data []byte) (bool, error) {
	if ok, err := s.has(ctx, h); ok || err != nil {
		return false, err
	}
	_, err := s.st.Apply(ctx, []filesync.Change{{Collection: blobCollection, Path: storePath(h), Content: data, Hash: h, Base: filesync.Any}})
	return err == nil, err
}

func (s storeBlobs) create(context.Context) (blobWriter, error) { return &storeWriter{s: s}, nil }

func (s storeBlobs) commit(context.Context) error { return nil } // each Apply is durable

func (s storeBlobs) abort() {}

type storeWriter struct {
	s   storeBlobs
	buf bytes.Buffer
}

func (w *storeWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *storeWriter) done(ctx context.Context) (string, int64, bool, error) {
	h := filesync.Hash(w.buf.Bytes())
	stored, err := w.s.put(ctx, h, w.buf.Bytes())
	if err != nil {
		return "", 0, false, err
	}
	return h, int64(w.buf.Len()), stored, nil
}

func (w *storeWriter) abort() { w.buf = bytes.Buffer{} }

func (s storeBlobs) open(ctx context.Context, h string) (io.ReadCloser, error) {
	data, err := s.st.Read(ctx, blobCollection, storePath(h))
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (s storeBlobs) list(ctx context.Context) ([]string, error) {
	ents, err := s.st.List(ctx, blobCollection)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if h := path.Base(e.Path); isHash(h) && e.Path == storePath(h) {
			out = append(out, h)
		}
	}
	return out, nil
}

func (s storeBlobs) remove(ctx context.Context, hs []string) error {
	for len(hs) > 0 {
		n := min(len(hs), 1000)
		changes := make([]filesync.Change, n)
		for i, h := range hs[:n] {
			changes[i] = filesync.Change{Collection: blobCollection, Path: storePath(h), Delete: true, Base: filesync.Any}
		}
		if _, err := s.st.Apply(ctx, changes); err != nil {
			return err
		}
		hs = hs[n:]
	}
	return nil
}

func (s storeBlobs) close() error { return nil } // the caller owns the store
