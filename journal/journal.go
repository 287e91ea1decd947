// Package journal owns the tool-call journal: one SQLite row per tool call (SPEC.md section 5), the
// per-call-position sequence numbers that keep idempotency keys stable across processes, and the
// retry warning an agent gets on attempt > 1.
//
// The journal is a plain SQLite file (modernc.org/sqlite, no cgo) in WAL mode with
// synchronous=NORMAL and a busy timeout, so several processes (two CLI invocations, an MCP server
// and `sandboxer log`) can share one file. The two statements of a call (Begin, Finish) are
// prepared once at Open, the others at their first use: recording a call is one short write
// transaction.
//
// Every finished row is linked into a hash chain per run (chain.go, docs/journal.md), signed
// when Options.Key is given; Verify checks the chains.
//
// The journal stores what it is given: callers redact inputs before Record (write and edit keep
// only the SHA-256 and size of content and patch; see tools.Meta.Redact). JSON fields larger
// than the configured limit are replaced by a {"truncated":true,"bytes":N,"preview":"..."} object.
package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Status is the outcome of one call, as stored.
type Status string

const (
	StatusSuccess Status = "success"
	StatusError   Status = "error"
	// StatusRunning marks a call begun (Begin) and not finished yet, or whose process stopped
	// before it finished.
	StatusRunning Status = "running"
)

// Position identifies the call position of a task attempt: the run, the node (task) inside it, the
// loop iteration and the retry attempt. Seq numbers are allocated per Position.
type Position struct {
	RunID     string `json:"runId"`
	NodeID    string `json:"nodeId"`
	Iteration int    `json:"iteration"`
	Attempt   int    `json:"attempt"`
}

// Entry is one journal row. The JSON names are the SPEC.md section 5 field names.
type Entry struct {
	RunID          string `json:"runId"`
	NodeID         string `json:"nodeId"`
	Iteration      int    `json:"iteration"`
	Attempt        int    `json:"attempt"`
	Seq            int    `json:"seq"`
	ToolName       string `json:"toolName"`
	InputJSON      string `json:"inputJson"`
	OutputJSON     string `json:"outputJson"`
	StartedAtMs    int64  `json:"startedAtMs"`
	FinishedAtMs   int64  `json:"finishedAtMs"`
	Status         Status `json:"status"`
	ErrorJSON      string `json:"errorJson"`
	IdempotencyKey string `json:"idempotencyKey"`
	SideEffect     bool   `json:"sideEffect"`
	Idempotent     bool   `json:"idempotent"`
}

// Position returns the call position of e.
func (e Entry) Position() Position {
	return Position{RunID: e.RunID, NodeID: e.NodeID, Iteration: e.Iteration, Attempt: e.Attempt}
}

// DefaultMaxFieldBytes bounds each stored JSON field when Options.MaxFieldBytes is 0 (the tools'
// default maxOutputBytes).
const DefaultMaxFieldBytes = 200000

// DefaultBusyTimeout is how long a writer waits for another process's write transaction.
const DefaultBusyTimeout = 10 * time.Second

// Options configure Open. The zero value is usable.
type Options struct {
	// MaxFieldBytes bounds inputJson, outputJson and errorJson; a larger field is stored as
	// {"truncated":true,"bytes":N,"preview":"..."}. 0 means DefaultMaxFieldBytes.
	MaxFieldBytes int
	// BusyTimeout is how long to wait for a lock held by another connection; 0 means
	// DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Key, when not empty, signs every row this journal links (row_sig: HMAC-SHA256 of the row
	// hash) and is the key Verify checks signatures with. The journal stores its id (KeyID),
	// never the key.
	Key []byte
}

// Journal is an open journal file. It is safe for concurrent use by several goroutines, and the
// file is safe to share between processes.
type Journal struct {
	db       *sql.DB
	path     string
	maxField int
	key      []byte // nil: rows are not signed
	keyID    string
	// unchained finishes rows as before the chain (plainFinish): only the benchmark's
	// baseline sets it (export_test.go).
	unchained bool

	// What Finish would otherwise read back: the rows this journal began and has not finished
	// (by position and seq), and the heads of the runs it last linked (maybe moved since by
	// another process: Finish checks). Guarded by mu.
	mu    sync.Mutex
	begun map[begunKey]final
	heads map[string]chainHead

	// begin, running, finish and head, a call's statements, are prepared by Open; the
	// statements of the other methods at their first use, so that a process that records one call (a one-shot CLI call)
	// does not compile three statements it never runs (issue 15).
	begin       *sql.Stmt
	finish      *sql.Stmt
	running     *sql.Stmt
	head        *sql.Stmt
	recordHead  lazyStmt
	insert      lazyStmt
	plainFinish lazyStmt
	reserve     lazyStmt
	earlier     lazyStmt
}

// lazyStmt is a statement prepared at its first use. A failed preparation is not kept: the next
// use tries again.
type lazyStmt struct {
	query string
	mu    sync.Mutex
	st    *sql.Stmt
}

// stmt returns the prepared statement, preparing it first if needed.
func (l *lazyStmt) stmt(ctx context.Context, db *sql.DB) (*sql.Stmt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st == nil {
		st, err := db.PrepareContext(ctx, l.query)
		if err != nil {
			return nil, err
		}
		l.st = st
	}
	return l.st, nil
}

// close closes the statement if it was prepared.
func (l *lazyStmt) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		l.st.Close()
		l.st = nil
	}
}

// schemaVersion 3 adds the hash chain (migrateV3). Version 2 allowed the status running (version
// 1 had only success and error) and dropped the index on node_id alone: it cost every insert a
// quarter of its time, and the UNIQUE index serves the usual filter (run, then node); a filter on
// the node alone scans.
const schemaVersion = 3

// schemaV2 is the schema of version 2, which migrateV3 extends.
const schemaV2 = `
CREATE TABLE IF NOT EXISTS tool_calls (
	id              INTEGER PRIMARY KEY,
	run_id          TEXT    NOT NULL,
	node_id         TEXT    NOT NULL,
	iteration       INTEGER NOT NULL,
	attempt         INTEGER NOT NULL,
	seq             INTEGER NOT NULL,
	tool_name       TEXT    NOT NULL,
	input_json      TEXT    NOT NULL,
	output_json     TEXT    NOT NULL,
	started_at_ms   INTEGER NOT NULL,
	finished_at_ms  INTEGER NOT NULL,
	status          TEXT    NOT NULL CHECK (status IN ('running', 'success', 'error')),
	error_json      TEXT    NOT NULL,
	idempotency_key TEXT    NOT NULL,
	side_effect     INTEGER NOT NULL,
	idempotent      INTEGER NOT NULL,
	UNIQUE (run_id, node_id, iteration, attempt, seq)
);
CREATE TABLE IF NOT EXISTS tool_call_seqs (
	run_id    TEXT    NOT NULL,
	node_id   TEXT    NOT NULL,
	iteration INTEGER NOT NULL,
	attempt   INTEGER NOT NULL,
	last_seq  INTEGER NOT NULL,
	PRIMARY KEY (run_id, node_id, iteration, attempt)
) WITHOUT ROWID;
`

// migrateV1 moves a version 1 table aside; the schema then creates the new one and the rows are
// copied back.
const migrateV1 = `
DROP INDEX IF EXISTS tool_calls_node;
ALTER TABLE tool_calls RENAME TO tool_calls_v1;
`

// migrateV3 adds the hash chain: each row's place in its run's chain, the previous row's hash,
// its own hash and signature (NULL until the row is final, and in rows written before version 3);
// the head of each run's chain; and the highest row id written before the chain, so that Verify
// tells those rows ("unchained") from a row inserted later without a chain.
const migrateV3 = `
ALTER TABLE tool_calls ADD COLUMN chain_index INTEGER;
ALTER TABLE tool_calls ADD COLUMN prev_hash   TEXT;
ALTER TABLE tool_calls ADD COLUMN row_hash    TEXT;
ALTER TABLE tool_calls ADD COLUMN row_sig     TEXT;
ALTER TABLE tool_calls ADD COLUMN sig_key_id  TEXT;
CREATE TABLE chain_heads (
	run_id     TEXT    NOT NULL PRIMARY KEY,
	last_index INTEGER NOT NULL,
	head_hash  TEXT    NOT NULL
) WITHOUT ROWID;
CREATE TABLE chain_start (legacy_max_id INTEGER NOT NULL);
INSERT INTO chain_start SELECT COALESCE(MAX(id), 0) FROM tool_calls;
`

// The statements of the journal's methods.
const (
	// The head of a run's chain (last_index, head_hash), NULLs when the run has none yet.
	runHead = `(SELECT last_index FROM chain_heads WHERE run_id = ?1),
		(SELECT head_hash FROM chain_heads WHERE run_id = ?1)`
	// A whole row, linked (Record): its id is the one SQLite would give it, taken under the
	// write lock with the run's head, so that the row hash covers it.
	recordHeadQuery = `SELECT (SELECT COALESCE(MAX(id), 0) + 1 FROM tool_calls), ` + runHead
	insertQuery     = `INSERT INTO tool_calls (id, run_id, node_id, iteration, attempt, seq, tool_name,
		input_json, output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key,
		side_effect, idempotent, chain_index, prev_hash, row_hash, row_sig, sig_key_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// One statement, run on its own (see Reserve): the counter is read and bumped under the write
	// lock. It also starts above the highest seq already recorded for the position, so a journal
	// whose counter table was lost cannot hand out a used seq.
	// (Begin allocates from the same two places, so the two never hand out one seq twice.)
	reserveQuery = `INSERT INTO tool_call_seqs (run_id, node_id, iteration, attempt, last_seq)
		VALUES (?1, ?2, ?3, ?4, 1 + COALESCE((SELECT MAX(seq) FROM tool_calls
			WHERE run_id = ?1 AND node_id = ?2 AND iteration = ?3 AND attempt = ?4), 0))
		ON CONFLICT (run_id, node_id, iteration, attempt)
			DO UPDATE SET last_seq = MAX(last_seq + 1, excluded.last_seq)
		RETURNING last_seq`
	// One statement too: the row is the reservation. Its seq is above every recorded seq and every
	// seq Reserve handed out for the position.
	beginQuery = `INSERT INTO tool_calls (run_id, node_id, iteration, attempt, seq, tool_name,
		input_json, output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key,
		side_effect, idempotent)
		VALUES (?1, ?2, ?3, ?4, 1 + MAX(
			COALESCE((SELECT MAX(seq) FROM tool_calls
				WHERE run_id = ?1 AND node_id = ?2 AND iteration = ?3 AND attempt = ?4), 0),
			COALESCE((SELECT last_seq FROM tool_call_seqs
				WHERE run_id = ?1 AND node_id = ?2 AND iteration = ?3 AND attempt = ?4), 0)),
			?5, ?6, 'null', ?7, 0, 'running', 'null', ?8, ?9, ?10)
		RETURNING seq, id`
	// Finish writes the outcome and the link (finishQuery) and moves the head (headQuery), in
	// one transaction. It knows the row's columns and the run's head from this journal's Begin
	// and last link; when it does not (a row begun by another process, a head another process
	// moved: finishQuery's head condition fails), it reads them (runningQuery) under the lock.
	runningQuery = `SELECT id, tool_name, input_json, started_at_ms, side_effect, idempotent, ` + runHead + `
		FROM tool_calls WHERE run_id = ?1 AND node_id = ?2 AND iteration = ?3 AND attempt = ?4 AND seq = ?5
			AND status = 'running'`
	finishQuery = `UPDATE tool_calls SET output_json = ?, finished_at_ms = ?, status = ?,
		error_json = ?, idempotency_key = ?, chain_index = ?, prev_hash = ?, row_hash = ?, row_sig = ?,
		sig_key_id = ? WHERE id = ? AND status = 'running'
			AND (SELECT last_index FROM chain_heads WHERE run_id = ?) IS ?
			AND (SELECT head_hash FROM chain_heads WHERE run_id = ?) IS ?`
	headQuery = `INSERT INTO chain_heads (run_id, last_index, head_hash) VALUES (?, ?, ?)
		ON CONFLICT (run_id) DO UPDATE SET last_index = excluded.last_index, head_hash = excluded.head_hash`
	// plainFinishQuery is Finish before the chain (Unchained, the benchmark's baseline).
	plainFinishQuery = `UPDATE tool_calls SET output_json = ?, finished_at_ms = ?, status = ?,
		error_json = ?, idempotency_key = ?
		WHERE run_id = ? AND node_id = ? AND iteration = ? AND attempt = ? AND seq = ?
			AND status = 'running'`
	earlierQuery = `SELECT tool_name, attempt, seq, status FROM tool_calls
		WHERE run_id = ? AND node_id = ? AND iteration = ? AND attempt < ?
			AND side_effect = 1 AND idempotent = 0
		ORDER BY attempt, seq`
)

// Open opens (creating if needed) the journal at path, creating its parent directory. The schema is
// created here, once; the per-call statements are prepared here too. Errors: the file cannot be
// created or opened, is not an SQLite database, or has a newer schema than this build knows.
func Open(ctx context.Context, path string, opts Options) (*Journal, error) {
	if path == "" {
		return nil, errors.New("journal: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	// A file: URI, escaped, so that a '?' or '#' in the path is part of the name. _txlock=immediate
	// makes every explicit transaction (the schema, RecordBatch) take the write lock at BEGIN, so
	// that writers serialise instead of failing with SQLITE_BUSY_SNAPSHOT.
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + url.Values{
		"_busy_timeout": {fmt.Sprint(busy.Milliseconds())},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
	}.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	// One connection: the process's own writers (an MCP server completes one call's row while it
	// begins the next) queue for it in Go, instead of meeting as two connections on SQLite's
	// write lock, where the loser sleeps in the busy handler (1 ms, then longer). Other processes
	// still meet on the lock, under the busy timeout.
	db.SetMaxOpenConns(1)
	j := &Journal{db: db, path: abs, maxField: opts.MaxFieldBytes, begun: map[begunKey]final{}, heads: map[string]chainHead{},
		insert: lazyStmt{query: insertQuery}, reserve: lazyStmt{query: reserveQuery}, earlier: lazyStmt{query: earlierQuery},
		recordHead: lazyStmt{query: recordHeadQuery}, plainFinish: lazyStmt{query: plainFinishQuery}}
	if len(opts.Key) > 0 {
		j.key, j.keyID = opts.Key, KeyID(opts.Key)
	}
	if j.maxField <= 0 {
		j.maxField = DefaultMaxFieldBytes
	}
	if err := j.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	return j, nil
}

func (j *Journal) init(ctx context.Context) error {
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this build (%d)", v, schemaVersion)
	}
	if v == 1 {
		// SQLite cannot change a CHECK constraint in place: the table is rebuilt, rows kept.
		if _, err := tx.ExecContext(ctx, migrateV1); err != nil {
			return fmt.Errorf("migrating the schema from version 1: %w", err)
		}
	}
	if v < 2 {
		if _, err := tx.ExecContext(ctx, schemaV2); err != nil {
			return err
		}
		if v == 1 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tool_calls SELECT * FROM tool_calls_v1;
				DROP TABLE tool_calls_v1`); err != nil {
				return fmt.Errorf("migrating the schema from version 1: %w", err)
			}
		}
	}
	if v < 3 {
		if _, err := tx.ExecContext(ctx, migrateV3); err != nil {
			return fmt.Errorf("adding the hash chain to the schema (version %d): %w", v, err)
		}
	}
	if v < schemaVersion {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	prep := func(dst **sql.Stmt, q string) {
		if err == nil {
			*dst, err = j.db.PrepareContext(ctx, q)
		}
	}
	prep(&j.begin, beginQuery)
	prep(&j.finish, finishQuery)
	prep(&j.running, runningQuery)
	prep(&j.head, headQuery)
	return err
}

// Path returns the absolute path of the journal file.
func (j *Journal) Path() string { return j.path }

// Checkpoint copies what the WAL holds into the main file (a passive checkpoint: it waits for no
// reader or writer), so that the file alone holds every row committed so far. Close does the same;
// a process that keeps the journal open calls this when it is idle.
func (j *Journal) Checkpoint(ctx context.Context) error {
	_, err := j.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	return err
}

// Close closes the journal. The last connection to close checkpoints the WAL into the main file.
func (j *Journal) Close() error {
	for _, s := range []*sql.Stmt{j.begin, j.finish, j.running, j.head} {
		if s != nil {
			s.Close()
		}
	}
	for _, l := range []*lazyStmt{&j.insert, &j.recordHead, &j.reserve, &j.earlier, &j.plainFinish} {
		l.close()
	}
	return j.db.Close()
}

// Reserve allocates the next seq (1, 2, 3, ...) for pos, atomically across goroutines and
// processes sharing the file: no two callers ever get the same seq for the same position.
// Errors: the database is unreachable or stayed locked past the busy timeout.
func (j *Journal) Reserve(ctx context.Context, pos Position) (int, error) {
	// The statement runs on its own, in autocommit mode, as its own write transaction: SQLite
	// takes the write lock as the statement starts, before its subquery reads (and retries with
	// a fresh snapshot under the busy timeout when another process wrote in between), so the read
	// and the bump are atomic across processes, as inside BEGIN IMMEDIATE, without the BEGIN and
	// COMMIT round trips and database/sql's goroutine per transaction.
	st, err := j.reserve.stmt(ctx, j.db)
	if err != nil {
		return 0, fmt.Errorf("journal: reserve seq: %w", err)
	}
	var seq int
	if err := st.QueryRowContext(ctx, pos.RunID, pos.NodeID, pos.Iteration, pos.Attempt).Scan(&seq); err != nil {
		return 0, fmt.Errorf("journal: reserve seq: %w", err)
	}
	return seq, nil
}

// Record stores one call, linked into its run's chain (signed with Options.Key). Oversized JSON
// fields are truncated (see Options.MaxFieldBytes); status must be success or error. Errors: an
// invalid entry, a seq already recorded for the position, or a database failure. A caller must
// never let a Record error hide the tool's own result.
func (j *Journal) Record(ctx context.Context, e Entry) error {
	return j.recordAll(ctx, []Entry{e}, fmt.Sprintf("record %s seq %d", e.ToolName, e.Seq))
}

// Begin records that a call starts: a row with status running, with e's position, tool, input,
// start time, idempotency key (may be empty: Finish sets it) and flags, under a new seq,
// allocated as Reserve allocates (atomically across processes), which it returns. e.Seq and the
// outcome fields are ignored. Finish completes the row. A row left running by a process that
// stopped mid-call is how the journal knows the call started: the retry warning lists it.
// Errors: an invalid entry or a database failure.
func (j *Journal) Begin(ctx context.Context, e Entry) (int, error) {
	e.Status = StatusRunning
	if err := j.check(&e); err != nil {
		return 0, err
	}
	r := final{Entry: e}
	err := j.begin.QueryRowContext(ctx, e.RunID, e.NodeID, e.Iteration, e.Attempt, e.ToolName,
		e.InputJSON, e.StartedAtMs, e.IdempotencyKey, e.SideEffect, e.Idempotent).Scan(&r.Seq, &r.id)
	if err != nil {
		return 0, fmt.Errorf("journal: begin %s: %w", e.ToolName, err)
	}
	j.mu.Lock()
	j.begun[begunKey{e.Position(), r.Seq}] = r
	j.mu.Unlock()
	return r.Seq, nil
}

// begunKey names a row this journal began.
type begunKey struct {
	pos Position
	seq int
}

// Finish stores the outcome of a call begun with Begin and links the row, now final, into its
// run's chain (signed with Options.Key), in one transaction: e's position and Seq name the row;
// its status (success or error), output, error, finish time and idempotency key are stored.
// Errors: an invalid entry, no running row at that seq, or a database failure.
func (j *Journal) Finish(ctx context.Context, e Entry) error {
	if err := j.checkOutcome(&e); err != nil {
		return err
	}
	err := j.finishRow(ctx, &e)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("journal: finish %s seq %d: no running call at that seq", e.ToolName, e.Seq)
	}
	if err != nil {
		return fmt.Errorf("journal: finish %s seq %d: %w", e.ToolName, e.Seq, err)
	}
	return nil
}

// finishRow stores e's outcome and links its row. sql.ErrNoRows: no running row at e's seq.
func (j *Journal) finishRow(ctx context.Context, e *Entry) error {
	j.mu.Lock()
	key := begunKey{e.Position(), e.Seq}
	r, known := j.begun[key]
	delete(j.begun, key)
	head, knownHead := j.heads[e.RunID]
	j.mu.Unlock()
	if j.unchained {
		return j.finishPlain(ctx, e)
	}
	// Begin's columns and the outcome's.
	r.OutputJSON, r.FinishedAtMs, r.Status, r.ErrorJSON, r.IdempotencyKey = e.OutputJSON, e.FinishedAtMs, e.Status, e.ErrorJSON, e.IdempotencyKey
	known = known && knownHead
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for {
		if !known {
			// What Begin stored and the head, read under the write lock: the hash covers the
			// row as it is.
			r.Entry = *e
			if err := tx.StmtContext(ctx, j.running).QueryRowContext(ctx, e.RunID, e.NodeID, e.Iteration, e.Attempt, e.Seq).Scan(
				&r.id, &r.ToolName, &r.InputJSON, &r.StartedAtMs, &r.SideEffect, &r.Idempotent, &head.last, &head.hash); err != nil {
				return err
			}
		}
		j.link(&r, head)
		res, err := tx.StmtContext(ctx, j.finish).ExecContext(ctx, r.OutputJSON, r.FinishedAtMs, string(r.Status),
			r.ErrorJSON, r.IdempotencyKey, r.index, r.prev, r.hash, r.sig, r.keyID, r.id, r.RunID, head.last, r.RunID, head.hash)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			break
		}
		if !known {
			return sql.ErrNoRows
		}
		known = false // another process moved the head (or finished the row): read them
	}
	if _, err := tx.StmtContext(ctx, j.head).ExecContext(ctx, r.RunID, r.index, r.hash); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	j.setHead(r.RunID, r.index, r.hash)
	return nil
}

// setHead remembers the head of run this journal just committed.
func (j *Journal) setHead(run string, index int64, hash string) {
	j.mu.Lock()
	j.heads[run] = chainHead{sql.NullInt64{Int64: index, Valid: true}, sql.NullString{String: hash, Valid: true}}
	j.mu.Unlock()
}

// finishPlain is Finish as before the chain (see Unchained).
func (j *Journal) finishPlain(ctx context.Context, e *Entry) error {
	st, err := j.plainFinish.stmt(ctx, j.db)
	if err != nil {
		return err
	}
	res, err := st.ExecContext(ctx, e.OutputJSON, e.FinishedAtMs, string(e.Status), e.ErrorJSON,
		e.IdempotencyKey, e.RunID, e.NodeID, e.Iteration, e.Attempt, e.Seq)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return sql.ErrNoRows
	}
	return nil
}

// RecordBatch stores several calls in one transaction, linked into their runs' chains in the
// order given: all of them or none. It is the fast path for importing or replaying many rows.
// Errors as Record.
func (j *Journal) RecordBatch(ctx context.Context, es []Entry) error {
	return j.recordAll(ctx, es, "record batch")
}

// recordAll checks es, then inserts and links them in one transaction. Each run's head is read
// once (with the next row id) and moved once, at the end. op names the operation in errors.
func (j *Journal) recordAll(ctx context.Context, es []Entry, op string) error {
	rows := make([]final, len(es))
	for i := range es {
		rows[i].Entry = es[i]
		if err := j.checkOutcome(&rows[i].Entry); err != nil {
			return err
		}
	}
	if err := j.insertAll(ctx, rows); err != nil {
		return fmt.Errorf("journal: %s: %w", op, err)
	}
	return nil
}

// insertAll inserts and links rows (checked) in one transaction.
func (j *Journal) insertAll(ctx context.Context, rows []final) error {
	insert, err := j.insert.stmt(ctx, j.db)
	if err != nil {
		return err
	}
	recordHead, err := j.recordHead.stmt(ctx, j.db)
	if err != nil {
		return err
	}
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, rh := tx.StmtContext(ctx, insert), tx.StmtContext(ctx, recordHead)
	heads := map[string]*chainHead{}
	var runs []string // in the order first met
	var nextID int64
	for i := range rows {
		r := &rows[i]
		h := heads[r.RunID]
		if h == nil {
			h = &chainHead{}
			if err := rh.QueryRowContext(ctx, r.RunID).Scan(&nextID, &h.last, &h.hash); err != nil {
				return err
			}
			heads[r.RunID], runs = h, append(runs, r.RunID)
		}
		r.id = nextID
		j.link(r, *h)
		if _, err := ins.ExecContext(ctx, r.id, r.RunID, r.NodeID, r.Iteration, r.Attempt, r.Seq, r.ToolName,
			r.InputJSON, r.OutputJSON, r.StartedAtMs, r.FinishedAtMs, string(r.Status), r.ErrorJSON,
			r.IdempotencyKey, r.SideEffect, r.Idempotent, r.index, r.prev, r.hash, r.sig, r.keyID); err != nil {
			if len(rows) > 1 {
				err = fmt.Errorf("%s seq %d: %w", r.ToolName, r.Seq, err)
			}
			return err
		}
		nextID++
		h.last = sql.NullInt64{Int64: r.index, Valid: true}
		h.hash = sql.NullString{String: r.hash, Valid: true}
	}
	head := tx.StmtContext(ctx, j.head)
	for _, run := range runs {
		if _, err := head.ExecContext(ctx, run, heads[run].last.Int64, heads[run].hash.String); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, run := range runs {
		j.setHead(run, heads[run].last.Int64, heads[run].hash.String)
	}
	return nil
}

// final is a row as it is made final: its entry, id and link.
type final struct {
	Entry
	id         int64
	index      int64
	prev, hash string
	sig, keyID any // NULL without a key
}

// chainHead is a run's head as read under the write lock (NULLs: the run has no chain yet).
type chainHead struct {
	last sql.NullInt64
	hash sql.NullString
}

// link makes r the next row of the chain whose head is h: its index, previous hash, hash and,
// with a key, signature.
func (j *Journal) link(r *final, h chainHead) {
	r.index, r.prev = h.last.Int64+1, h.hash.String
	r.hash = hashRow([]any{r.id, r.RunID, r.NodeID, r.Iteration, r.Attempt, r.Seq, r.ToolName,
		r.InputJSON, r.OutputJSON, r.StartedAtMs, r.FinishedAtMs, string(r.Status), r.ErrorJSON,
		r.IdempotencyKey, r.SideEffect, r.Idempotent, r.index, r.prev})
	if j.key != nil {
		r.sig, r.keyID = sign(j.key, r.hash), j.keyID
	}
}

// checkOutcome is check for a finished call.
func (j *Journal) checkOutcome(e *Entry) error {
	if e.Status == StatusRunning {
		return fmt.Errorf("journal: record %s: status %q is not success or error", e.ToolName, e.Status)
	}
	return j.check(e)
}

// check validates e and fills in its defaults. A finished call's status is success or error; a
// begun one's is running.
func (j *Journal) check(e *Entry) error {
	if e.Status != StatusSuccess && e.Status != StatusError && e.Status != StatusRunning {
		return fmt.Errorf("journal: record %s: status %q is not success or error", e.ToolName, e.Status)
	}
	if e.ToolName == "" {
		return errors.New("journal: record: empty tool name")
	}
	if e.InputJSON == "" {
		e.InputJSON = "{}"
	}
	if e.OutputJSON == "" {
		e.OutputJSON = "null"
	}
	if e.ErrorJSON == "" {
		e.ErrorJSON = "null"
	}
	e.InputJSON = Truncate(e.InputJSON, j.maxField)
	e.OutputJSON = Truncate(e.OutputJSON, j.maxField)
	e.ErrorJSON = Truncate(e.ErrorJSON, j.maxField)
	return nil
}

// Filter selects rows for List. Empty fields match everything.
type Filter struct {
	RunID  string
	NodeID string
	Limit  int // 0: no limit; otherwise the last Limit matching rows
}

// List returns the matching rows in the order they were recorded. Errors: a database failure.
func (j *Journal) List(ctx context.Context, f Filter) ([]Entry, error) {
	var where []string
	var args []any
	if f.RunID != "" {
		where = append(where, "run_id = ?")
		args = append(args, f.RunID)
	}
	if f.NodeID != "" {
		where = append(where, "node_id = ?")
		args = append(args, f.NodeID)
	}
	q := `SELECT run_id, node_id, iteration, attempt, seq, tool_name, input_json, output_json,
		started_at_ms, finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent, id
		FROM tool_calls`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := j.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: list: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var status string
		var id int64
		if err := rows.Scan(&e.RunID, &e.NodeID, &e.Iteration, &e.Attempt, &e.Seq, &e.ToolName,
			&e.InputJSON, &e.OutputJSON, &e.StartedAtMs, &e.FinishedAtMs, &status, &e.ErrorJSON,
			&e.IdempotencyKey, &e.SideEffect, &e.Idempotent, &id); err != nil {
			return nil, fmt.Errorf("journal: list: %w", err)
		}
		e.Status = Status(status)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: list: %w", err)
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out, nil
}
