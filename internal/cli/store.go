package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/sandboxer/sandboxer/internal/progress"
	"github.com/sandboxer/sandboxer/sync/dirstore"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/sqlitestore"
)

// DefaultCollection is the collection new files go to when the store holds none yet.
const DefaultCollection = "workspace"

// openStore opens --store: "sqlite:PATH", "dir:PATH", or a bare PATH (an SQLite store when it ends
// in .db, .sqlite or .sqlite3, a directory store otherwise).
func openStore(inv invocation, spec string) (filesync.Store, error) {
	kind, path, err := storePath(inv, spec)
	if err != nil {
		return nil, err
	}
	if kind == "sqlite" {
		return sqlitestore.Open(path)
	}
	return dirstore.Open(path)
}

// storePath is the kind ("sqlite" or "dir") and the absolute path of a --store spec.
func storePath(inv invocation, spec string) (kind, path string, err error) {
	kind, path, ok := strings.Cut(spec, ":")
	if !ok || (kind != "sqlite" && kind != "dir") {
		kind, path = "dir", spec
		switch strings.ToLower(filepath.Ext(spec)) {
		case ".db", ".sqlite", ".sqlite3":
			kind = "sqlite"
		}
	}
	if path == "" {
		return "", "", usage(fmt.Errorf("--store %q: empty path", spec))
	}
	path, err = inv.abs(path)
	return kind, path, err
}

// hydrateStore opens --store and hydrates the session's workspace from it. Every collection of
// the store is synced, in name order (a new file goes to the first; DefaultCollection when the
// store is empty). The sync state (base hashes and stat cache) is kept in the state directory, per
// sandbox and store, so that separate invocations flush base-aware.
func hydrateStore(ctx context.Context, s Settings, sess *session, warn io.Writer) (*filesync.Sync, func(), error) {
	store, err := openStore(s.inv, s.Store)
	if err != nil {
		return nil, nil, fmt.Errorf("--store %s: %w", s.Store, err)
	}
	colls, err := store.Collections(ctx)
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("--store %s: %w", s.Store, err)
	}
	if len(colls) == 0 {
		colls = []string{DefaultCollection}
	}
	where := s.Adapter + "\x00" + s.Root
	if sess.Record != nil {
		where = "sandbox\x00" + sess.Record.ID
	}
	abs, _ := s.inv.abs(s.Store)
	sum := sha256.Sum256([]byte(where + "\x00" + abs))
	fsync, err := filesync.New(sess.Sandbox, store, filesync.Options{
		Collections:  colls,
		StateFile:    filepath.Join(s.StateDir, "filesync", hex.EncodeToString(sum[:12])+".json"),
		MaxFileBytes: s.SyncMaxFileBytes,
	})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	stop := progress.Spinner(warn, "hydrating the workspace from "+s.Store)
	_, err = fsync.Hydrate(ctx)
	stop()
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("--store %s: hydrate: %w", s.Store, err)
	}
	return fsync, func() { store.Close() }, nil
}
