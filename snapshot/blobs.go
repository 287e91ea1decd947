package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
)

// blobs is where a catalog keeps file contents, by SHA-256. Two kinds: dirBlobs (the default: a
// directory of files named by their hash) and storeBlobs (any filesync.Store, Options.Store).
// Nothing here checks that content matches its name: restores hash what they read back.
type blobs interface {
	// has reports whether the blob is stored.
	has(ctx context.Context, h string) (bool, error)
	// put stores data under its hash h (a no-op when it is already there).
	put(ctx context.Context, h string, data []byte) error
	// create starts a blob whose hash is known only once it is written.
	create(ctx context.Context) (blobWriter, error)
	// open reads one blob; errs.NotFound when it is not stored.
	open(ctx context.Context, h string) (io.ReadCloser, error)
	// list returns every stored hash.
	list(ctx context.Context) ([]string, error)
	// remove deletes blobs (missing ones are fine) and any leftover of an unfinished create.
	remove(ctx context.Context, hs []string) error
	// sync makes what was put durable (before a manifest refers to it).
	sync(ctx context.Context) error
	close() error
}

// blobWriter streams one blob in; commit names it by the hash of what was written.
type blobWriter interface {
	io.Writer
	commit(ctx context.Context) (h string, size int64, err error)
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

// dirBlobs keeps each blob as the file DIR/ab/abcdef... (the hash's first two hex digits as a
// fan-out directory). A blob is written to DIR/tmp under a unique name and renamed into place,
// so a blob file is whole or absent; a crash leaves at most a stray file in DIR/tmp, which GC
// removes. Durability for a power loss: sync calls syncfs(2) once (not one fsync per blob).
type dirBlobs struct {
	dir string
}

func openDirBlobs(dir string) (*dirBlobs, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.open", dir, err)
	}
	return &dirBlobs{dir: dir}, nil
}

func (b *dirBlobs) path(h string) string { return filepath.Join(b.dir, h[:2], h) }

func (b *dirBlobs) has(_ context.Context, h string) (bool, error) {
	_, err := os.Lstat(b.path(h))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, errs.Wrap(errs.Internal, "snapshot.blob", h, err)
}

func (b *dirBlobs) put(ctx context.Context, h string, data []byte) error {
	if ok, err := b.has(ctx, h); ok || err != nil {
		return err
	}
	w, err := b.createAs(h)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.abort()
		return errs.Wrap(errs.Internal, "snapshot.blob", h, err)
	}
	_, _, err = w.commit(ctx)
	return err
}

func (b *dirBlobs) create(context.Context) (blobWriter, error) { return b.createAs("") }

func (b *dirBlobs) createAs(h string) (*dirWriter, error) {
	f, err := os.CreateTemp(filepath.Join(b.dir, "tmp"), "blob-*")
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.blob", b.dir, err)
	}
	w := &dirWriter{b: b, f: f, want: h}
	if h == "" {
		w.h = sha256.New()
	}
	return w, nil
}

type dirWriter struct {
	b    *dirBlobs
	f    *os.File
	h    hash.Hash // nil when the hash is known (want)
	want string
	n    int64
}

func (w *dirWriter) Write(p []byte) (int, error) {
	if w.h != nil {
		w.h.Write(p)
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *dirWriter) commit(ctx context.Context) (string, int64, error) {
	h := w.want
	if w.h != nil {
		h = hex.EncodeToString(w.h.Sum(nil))
	}
	if err := w.f.Close(); err != nil {
		os.Remove(w.f.Name())
		return "", 0, errs.Wrap(errs.Internal, "snapshot.blob", h, err)
	}
	if err := ctx.Err(); err != nil {
		os.Remove(w.f.Name())
		return "", 0, err
	}
	dst := w.b.path(h)
	err := os.Rename(w.f.Name(), dst)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.Mkdir(filepath.Dir(dst), 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			err = os.Rename(w.f.Name(), dst)
		}
	}
	if err != nil {
		os.Remove(w.f.Name())
		return "", 0, errs.Wrap(errs.Internal, "snapshot.blob", h, err)
	}
	return h, w.n, nil
}

func (w *dirWriter) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

func (b *dirBlobs) open(_ context.Context, h string) (io.ReadCloser, error) {
	f, err := os.Open(b.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.New(errs.NotFound, "snapshot.blob", h, "blob is not in the store")
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.blob", h, err)
	}
	return f, nil
}

func (b *dirBlobs) list(context.Context) ([]string, error) {
	tops, err := os.ReadDir(b.dir)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "snapshot.gc", b.dir, err)
	}
	var out []string
	for _, t := range tops {
		if len(t.Name()) != 2 || !t.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(b.dir, t.Name()))
		if err != nil {
			return nil, errs.Wrap(errs.Internal, "snapshot.gc", b.dir, err)
		}
		for _, e := range ents {
			if isHash(e.Name()) && strings.HasPrefix(e.Name(), t.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	return out, nil
}

func (b *dirBlobs) remove(_ context.Context, hs []string) error {
	for _, h := range hs {
		if err := os.Remove(b.path(h)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errs.Wrap(errs.Internal, "snapshot.gc", h, err)
		}
	}
	// Leftovers of creates that never committed. remove runs under the catalog's exclusive
	// lock: no create is in flight.
	tmp := filepath.Join(b.dir, "tmp")
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return errs.Wrap(errs.Internal, "snapshot.gc", tmp, err)
	}
	for _, e := range ents {
		os.Remove(filepath.Join(tmp, e.Name()))
	}
	return nil
}

func (b *dirBlobs) sync(context.Context) error {
	f, err := os.Open(b.dir)
	if err != nil {
		return errs.Wrap(errs.Internal, "snapshot.sync", b.dir, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return errs.Wrap(errs.Internal, "snapshot.sync", b.dir, err)
	}
	return nil
}

func (b *dirBlobs) close() error { return nil }

// blobCollection is the collection of a filesync.Store that holds a catalog's blobs, each at
// the path "ab/<hash>".
const blobCollection = "snapshot-blobs"

// storeBlobs keeps blobs in a filesync.Store (Options.Store): the collection blobCollection,
// one entry per blob. The store's Apply is crash-safe; its interface moves content as []byte,
// so a blob is held in memory while it is written or read.
type storeBlobs struct {
	st filesync.Store
}

func storePath(h string) string { return h[:2] + "/" + h }

func (s storeBlobs) has(ctx context.Context, h string) (bool, error) {
	_, err := s.st.Get(ctx, blobCollection, storePath(h))
	if errs.CodeOf(err) == errs.NotFound {
		return false, nil
	}
	return err == nil, err
}

func (s storeBlobs) put(ctx context.Context, h string, data []byte) error {
	_, err := s.st.Apply(ctx, []filesync.Change{{Collection: blobCollection, Path: storePath(h), Content: data, Hash: h, Base: filesync.Any}})
	return err
}

func (s storeBlobs) create(context.Context) (blobWriter, error) {
	return &storeWriter{s: s}, nil
}

type storeWriter struct {
	s   storeBlobs
	buf bytes.Buffer
}

func (w *storeWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *storeWriter) commit(ctx context.Context) (string, int64, error) {
	h := filesync.Hash(w.buf.Bytes())
	if err := w.s.put(ctx, h, w.buf.Bytes()); err != nil {
		return "", 0, err
	}
	return h, int64(w.buf.Len()), nil
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
		if h := filepath.Base(e.Path); isHash(h) && e.Path == storePath(h) {
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

func (s storeBlobs) sync(context.Context) error { return nil } // each Apply is durable on its own

func (s storeBlobs) close() error { return nil } // the caller owns the store
