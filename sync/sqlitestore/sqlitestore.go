// Package sqlitestore is the embedded default filesync.Store: one SQLite database file
// (modernc.org/sqlite, pure Go, driver name "sqlite") in WAL mode, one row per entry with its
// content as a BLOB.
//
// Crash safety comes from SQLite itself: each Apply is one transaction, so a process killed at any
// point leaves the database at the state before or after the whole batch. The database runs with
// synchronous=NORMAL, which in WAL mode keeps every committed transaction across a killed process
// and the database consistent across a power loss (where the last commits may roll back).
// Several processes may share one database; writers queue on SQLite's lock (busy timeout 10 s).
//
// Schema (PRAGMA user_version = 2), readable with the sqlite3 shell:
//
//	CREATE TABLE entries (
//	  id INTEGER PRIMARY KEY, collection TEXT NOT NULL, path TEXT NOT NULL,
//	  hash TEXT NOT NULL,        -- SHA-256 hex, '' for an entry without content
//	  size INTEGER NOT NULL,
//	  updated_at TEXT NOT NULL,  -- RFC 3339 with nanoseconds, UTC
//	  content BLOB,              -- NULL for an entry without content; a symlink's target text
//	  kind TEXT NOT NULL DEFAULT 'file',   -- 'file' or 'symlink' (version 2)
//	  exec INTEGER NOT NULL DEFAULT 0,     -- 1: the file is executable (version 2)
//	  UNIQUE (collection, path));
//
// Open migrates a version-1 database (no kind, no exec: every entry a plain file) in place, in one
// transaction.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesync"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

const schema = `
CREATE TABLE IF NOT EXISTS entries (
  id INTEGER PRIMARY KEY,
  collection TEXT NOT NULL,
  path TEXT NOT NULL,
  hash TEXT NOT NULL,
  size INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  content BLOB,
  kind TEXT NOT NULL DEFAULT 'file',
  exec INTEGER NOT NULL DEFAULT 0,
  UNIQUE (collection, path)
);
PRAGMA user_version = 2;
`

// schemaVersion is the version this store writes; Open migrates older ones.
const schemaVersion = 2

// migrate1to2 adds the entry kind and the executable bit; existing entries are plain files.
const migrate1to2 = `
ALTER TABLE entries ADD COLUMN kind TEXT NOT NULL DEFAULT 'file';
ALTER TABLE entries ADD COLUMN exec INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 2;
`

// Store is an SQLite store. It is safe for concurrent use, also by several processes.
type Store struct {
	db     *sql.DB
	path   string
	closed atomic.Bool
}

// Open opens (creating when missing) the database at path. Errors: errs.InvalidInput for a path
// containing '?' or a database of another format, errs.Internal when SQLite cannot open it.
func Open(path string) (*Store, error) {
	const op = "sqlitestore.open"
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, errs.New(errs.InvalidInput, op, path, "database path must be non-empty and contain no '?'")
	}
	dsn := path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, path, err)
	}
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		db.Close()
		return nil, errs.Wrap(errs.Internal, op, path, err)
	}
	if version > schemaVersion {
		db.Close()
		return nil, errs.New(errs.InvalidInput, op, path, "database schema version %d is newer than this store (%d)", version, schemaVersion)
	}
	if version == 1 {
		if err := migrate(db); err != nil {
			db.Close()
			return nil, errs.Wrap(errs.Internal, op, path, fmt.Errorf("migrating schema 1 to 2: %w", err))
		}
	}
	if version == 0 {
		var tables int
		if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").Scan(&tables); err != nil {
			db.Close()
			return nil, errs.Wrap(errs.Internal, op, path, err)
		}
		if tables > 0 {
			db.Close()
			return nil, errs.New(errs.InvalidInput, op, path, "database holds other tables and is not a sandboxer store")
		}
		if _, err := db.Exec(schema); err != nil {
			db.Close()
			return nil, errs.Wrap(errs.Internal, op, path, err)
		}
	}
	return &Store{db: db, path: path}, nil
}

// migrate brings a version-1 database to version 2 in one write transaction (BEGIN IMMEDIATE), so
// that two processes opening it at once migrate it once.
func migrate(db *sql.DB) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version != 1 {
		return nil // another process migrated it meanwhile
	}
	if _, err := tx.Exec(migrate1to2); err != nil {
		return err
	}
	return tx.Commit()
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. It is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}

func (s *Store) check(op string) error {
	if s.closed.Load() {
		return errs.New(errs.SandboxUnavailable, op, s.path, "store is closed")
	}
	return nil
}

// wrap turns a database error into errs.Internal, keeping context errors as they are.
func wrap(op, p string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errs.CodeOf(err) != "" {
		return err
	}
	return errs.Wrap(errs.Internal, op, p, err)
}

func scanEntry(c string, sc interface{ Scan(...any) error }, extra ...any) (filesync.Entry, error) {
	e := filesync.Entry{Collection: c}
	var ts string
	if err := sc.Scan(append([]any{&e.Path, &e.Kind, &e.Exec, &e.Hash, &e.Size, &ts}, extra...)...); err != nil {
		return e, err
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return e, fmt.Errorf("entry %s: bad updated_at %q: %w", e.Path, ts, err)
	}
	e.UpdatedAt = t
	return e, nil
}

// List implements filesync.Store.
func (s *Store) List(ctx context.Context, collection string) ([]filesync.Entry, error) {
	const op = "sqlitestore.list"
	if err := s.check(op); err != nil {
		return nil, err
	}
	if err := filesync.CheckCollection(op, collection); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT path, kind, exec, hash, size, updated_at FROM entries WHERE collection = ? ORDER BY path`, collection)
	if err != nil {
		return nil, wrap(op, collection, err)
	}
	defer rows.Close()
	out := []filesync.Entry{}
	for rows.Next() {
		e, err := scanEntry(collection, rows)
		if err != nil {
			return nil, wrap(op, collection, err)
		}
		out = append(out, e)
	}
	return out, wrap(op, collection, rows.Err())
}

// Get implements filesync.Store.
func (s *Store) Get(ctx context.Context, collection, p string) (filesync.Entry, error) {
	const op = "sqlitestore.get"
	if err := s.checkEntry(op, collection, p); err != nil {
		return filesync.Entry{}, err
	}
	row := s.db.QueryRowContext(ctx, `SELECT path, kind, exec, hash, size, updated_at FROM entries WHERE collection = ? AND path = ?`, collection, p)
	e, err := scanEntry(collection, row)
	if errors.Is(err, sql.ErrNoRows) {
		return e, errs.New(errs.NotFound, op, p, "no entry in collection %s", collection)
	}
	return e, wrap(op, p, err)
}

// Read implements filesync.Store.
func (s *Store) Read(ctx context.Context, collection, p string) ([]byte, error) {
	const op = "sqlitestore.read"
	if err := s.checkEntry(op, collection, p); err != nil {
		return nil, err
	}
	var content []byte
	var null bool
	var size int64
	limit := adapter.ReadLimit(ctx)
	// The length is checked in SQL: content over the limit is never loaded.
	err := s.db.QueryRowContext(ctx, `SELECT CASE WHEN length(content) <= ? THEN content END, content IS NULL, coalesce(length(content), 0) FROM entries WHERE collection = ? AND path = ?`, limit, collection, p).Scan(&content, &null, &size)
	if errors.Is(err, sql.ErrNoRows) || err == nil && null {
		return nil, errs.New(errs.NotFound, op, p, "no content in collection %s", collection)
	}
	if err != nil {
		return nil, wrap(op, p, err)
	}
	if size > limit {
		return nil, adapter.FileTooLarge(op, p, size, limit)
	}
	if content == nil {
		content = []byte{}
	}
	return content, nil
}

// Scan implements filesync.Store. It reads in one transaction, so it sees one consistent state.
// Content over adapter.ReadLimit(ctx) is not loaded: fn gets the entry (Size the real length)
// and nil.
func (s *Store) Scan(ctx context.Context, collection string, fn func(filesync.Entry, []byte) error) error {
	const op = "sqlitestore.scan"
	if err := s.check(op); err != nil {
		return err
	}
	if err := filesync.CheckCollection(op, collection); err != nil {
		return err
	}
	limit := adapter.ReadLimit(ctx)
	rows, err := s.db.QueryContext(ctx, `SELECT path, kind, exec, hash, coalesce(length(content), size), updated_at, CASE WHEN length(content) <= ? THEN content END, content IS NULL OR length(content) > ? FROM entries WHERE collection = ? ORDER BY path`, limit, limit, collection)
	if err != nil {
		return wrap(op, collection, err)
	}
	defer rows.Close()
	for rows.Next() {
		var content sql.RawBytes
		var null bool
		e, err := scanEntry(collection, rows, &content, &null)
		if err != nil {
			return wrap(op, collection, err)
		}
		var data []byte
		if !null {
			data = content
			if data == nil {
				data = []byte{}
			}
		}
		if err := fn(e, data); err != nil {
			return err
		}
	}
	return wrap(op, collection, rows.Err())
}

// Collections implements filesync.Store.
func (s *Store) Collections(ctx context.Context) ([]string, error) {
	const op = "sqlitestore.collections"
	if err := s.check(op); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT collection FROM entries ORDER BY collection`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, wrap(op, "", err)
		}
		out = append(out, c)
	}
	return out, wrap(op, "", rows.Err())
}

func (s *Store) checkEntry(op, c, p string) error {
	if err := s.check(op); err != nil {
		return err
	}
	if err := filesync.CheckCollection(op, c); err != nil {
		return err
	}
	return filesync.CheckPath(op, p)
}

// Apply implements filesync.Store: the whole batch is one transaction.
func (s *Store) Apply(ctx context.Context, changes []filesync.Change) (conflicts []filesync.Conflict, err error) {
	const op = "sqlitestore.apply"
	if err := s.check(op); err != nil {
		return nil, err
	}
	if err := filesync.CheckChanges(op, changes); err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	get, err := tx.PrepareContext(ctx, `SELECT hash, kind, exec FROM entries WHERE collection = ? AND path = ?`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	var accepted []filesync.Change
	for _, c := range changes {
		var hash, kind string
		var exec bool
		err := get.QueryRowContext(ctx, c.Collection, c.Path).Scan(&hash, &kind, &exec)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, wrap(op, c.Path, err)
		}
		version := filesync.Version(kind, exec, hash)
		switch {
		case filesync.Settled(c, exists, version):
		case !filesync.Holds(c.Base, exists, version) || c.KeepContent && !filesync.KeepsContent(c, version):
			conflicts = append(conflicts, filesync.Conflict{Collection: c.Collection, Path: c.Path, Base: c.Base, Ours: c.Version(), Theirs: version})
		default:
			accepted = append(accepted, c)
		}
	}
	if len(accepted) == 0 {
		return conflicts, tx.Rollback()
	}
	del, err := tx.PrepareContext(ctx, `DELETE FROM entries WHERE collection = ? AND path = ?`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	// Deletes first: a batch may replace file "a" by "a/b".
	for _, c := range accepted {
		if c.Delete {
			if _, err := del.ExecContext(ctx, c.Collection, c.Path); err != nil {
				return nil, wrap(op, c.Path, err)
			}
		}
	}
	put, err := tx.PrepareContext(ctx, `INSERT INTO entries (collection, path, hash, size, updated_at, content, kind, exec) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (collection, path) DO UPDATE SET hash = excluded.hash, size = excluded.size, updated_at = excluded.updated_at, content = excluded.content, kind = excluded.kind, exec = excluded.exec`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	mode, err := tx.PrepareContext(ctx, `UPDATE entries SET kind = ?, exec = ?, updated_at = ? WHERE collection = ? AND path = ?`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	parent, err := tx.PrepareContext(ctx, `SELECT path FROM entries WHERE collection = ? AND path = ?`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	child, err := tx.PrepareContext(ctx, `SELECT 1 FROM entries WHERE collection = ? AND path > ? AND path < ? LIMIT 1`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, c := range accepted {
		if c.Delete {
			continue
		}
		if c.KeepContent { // the entry exists with this content: only its mode changes
			if _, err := mode.ExecContext(ctx, c.Kind, c.Exec, now, c.Collection, c.Path); err != nil {
				return nil, wrap(op, c.Path, err)
			}
			continue
		}
		// No entry may be a parent directory of another: the collection must stay a file tree.
		for i := 0; i < len(c.Path); i++ {
			if c.Path[i] != '/' {
				continue
			}
			var p string
			err := parent.QueryRowContext(ctx, c.Collection, c.Path[:i]).Scan(&p)
			if err == nil {
				return nil, errs.New(errs.InvalidInput, op, c.Path, "entry %s of collection %s is a file, not a directory", p, c.Collection)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return nil, wrap(op, c.Path, err)
			}
		}
		var one int
		err := child.QueryRowContext(ctx, c.Collection, c.Path+"/", c.Path+"0").Scan(&one) // '0' sorts right after '/'
		if err == nil {
			return nil, errs.New(errs.InvalidInput, op, c.Path, "collection %s has entries below this path", c.Collection)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, wrap(op, c.Path, err)
		}
		var content any = c.Content
		size := int64(len(c.Content))
		if c.NoContent {
			content, size = nil, 0
		} else if c.Content == nil {
			content = []byte{}
		}
		if _, err := put.ExecContext(ctx, c.Collection, c.Path, c.Hash, size, now, content, c.Kind, c.Exec); err != nil {
			return nil, wrap(op, c.Path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, wrap(op, "", err)
	}
	return conflicts, nil
}

var _ filesync.Store = (*Store)(nil)
