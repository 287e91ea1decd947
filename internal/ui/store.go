package ui

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sandboxer/sandboxer/journal"
)

// store reads a journal file and never writes it: the connection is opened with mode=ro and
// query_only, so not even a mistake in a query here can change a row. Every query uses the
// primary key (id) or the journal's UNIQUE (run_id, node_id, iteration, attempt, seq) index;
// the viewer creates no index of its own.
type store struct {
	db *sql.DB
}

// openStore opens the journal at path read-only. Errors: the file is missing or not a journal.
func openStore(ctx context.Context, path string) (*store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + url.Values{
		"mode":    {"ro"},
		"_pragma": {"busy_timeout(5000)", "query_only(1)"},
	}.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ui: open %s: %w", path, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'tool_calls'`).Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("ui: open %s: %w", path, err)
	}
	if n == 0 {
		db.Close()
		return nil, fmt.Errorf("ui: %s is not a sandboxer journal (no tool_calls table)", path)
	}
	return &store{db: db}, nil
}

func (s *store) Close() error { return s.db.Close() }

// Run is one run of the journal, summarised.
type Run struct {
	RunID   string `json:"runId"`
	FirstMs int64  `json:"firstMs"` // the earliest start
	LastMs  int64  `json:"lastMs"`  // the latest start or finish
	Calls   int    `json:"calls"`
	Errors  int    `json:"errors"`
	Running int    `json:"running"`
	LastID  int64  `json:"lastId"` // the newest row: runs are listed newest first
}

// runs lists the runs, the most recently active first.
func (s *store) runs(ctx context.Context, limit int) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, MIN(started_at_ms), MAX(MAX(started_at_ms, finished_at_ms)),
		COUNT(*), SUM(status = 'error'), SUM(status = 'running'), MAX(id)
		FROM tool_calls GROUP BY run_id ORDER BY MAX(id) DESC LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, func(r *Run) []any {
		return []any{&r.RunID, &r.FirstMs, &r.LastMs, &r.Calls, &r.Errors, &r.Running, &r.LastID}
	})
}

// Task is one task attempt of a run: a (node, iteration, attempt) position.
type Task struct {
	journal.Position
	FirstMs int64 `json:"firstMs"`
	LastMs  int64 `json:"lastMs"`
	Calls   int   `json:"calls"`
	Errors  int   `json:"errors"`
}

// tasks lists a run's task attempts in (node, iteration, attempt) order: the UNIQUE index's.
func (s *store) tasks(ctx context.Context, run string) ([]Task, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, node_id, iteration, attempt, MIN(started_at_ms),
		MAX(MAX(started_at_ms, finished_at_ms)), COUNT(*), SUM(status = 'error')
		FROM tool_calls WHERE run_id = ? GROUP BY node_id, iteration, attempt
		ORDER BY node_id, iteration, attempt`, run)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, func(t *Task) []any {
		return []any{&t.RunID, &t.NodeID, &t.Iteration, &t.Attempt, &t.FirstMs, &t.LastMs, &t.Calls, &t.Errors}
	})
}

// Summary is a call as the list shows it: everything but the JSON fields, of which only a
// preview of the input.
type Summary struct {
	ID int64 `json:"id"`
	journal.Position
	Seq          int            `json:"seq"`
	ToolName     string         `json:"toolName"`
	Status       journal.Status `json:"status"`
	StartedAtMs  int64          `json:"startedAtMs"`
	FinishedAtMs int64          `json:"finishedAtMs"`
	InputPreview string         `json:"inputPreview"`
}

// previewChars is how much of a call's input the list shows.
const previewChars = 160

// Query selects calls for the list. Empty fields match everything.
type Query struct {
	RunID  string
	Tool   string
	Status string
	Text   string // a substring of the tool name, input, output or error (ASCII case-insensitive)
	After  int64  // only rows whose id is greater: the cursor of the next page and of live updates
	Limit  int
}

// calls returns up to q.Limit matching calls with id > q.After, in the order they were
// recorded. The rows are walked by primary key from the cursor, so a page costs what it
// returns (plus the rows a filter skips), however large the journal.
func (s *store) calls(ctx context.Context, q Query) ([]Summary, error) {
	where := []string{"id > ?"}
	args := []any{q.After}
	// The unary + keeps SQLite from walking the UNIQUE index for run_id = ? and sorting the run's
	// rows by id: walking the primary key from the cursor stops after one page.
	for _, f := range []struct{ col, val string }{{"+run_id", q.RunID}, {"tool_name", q.Tool}, {"status", q.Status}} {
		if f.val != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.val)
		}
	}
	if q.Text != "" {
		like := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q.Text) + "%"
		where = append(where, `(tool_name LIKE ? ESCAPE '\' OR input_json LIKE ? ESCAPE '\'
			OR output_json LIKE ? ESCAPE '\' OR error_json LIKE ? ESCAPE '\')`)
		args = append(args, like, like, like, like)
	}
	args = append(args, q.Limit)
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(`SELECT id, run_id, node_id, iteration, attempt, seq, tool_name,
		status, started_at_ms, finished_at_ms, substr(input_json, 1, %d)
		FROM tool_calls WHERE %s ORDER BY id LIMIT ?`, previewChars, strings.Join(where, " AND ")), args...)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, func(c *Summary) []any {
		return []any{&c.ID, &c.RunID, &c.NodeID, &c.Iteration, &c.Attempt, &c.Seq, &c.ToolName, &c.Status,
			&c.StartedAtMs, &c.FinishedAtMs, &c.InputPreview}
	})
}

// Call is one call whole, with the retry warning its attempt got.
type Call struct {
	ID int64 `json:"id"`
	journal.Entry
	Warning string `json:"warning,omitempty"`
}

// errNoCall is the error of call for an id that is not in the journal.
var errNoCall = errors.New("no such call")

// call returns the row id (by primary key) and, for attempt > 1, the retry warning of its
// position (journal.FormatWarning over the earlier attempts' side-effecting, non-idempotent
// calls, found through the UNIQUE index's (run_id, node_id, iteration) prefix).
func (s *store) call(ctx context.Context, id int64) (*Call, error) {
	c := &Call{ID: id}
	e := &c.Entry
	err := s.db.QueryRowContext(ctx, `SELECT run_id, node_id, iteration, attempt, seq, tool_name, input_json,
		output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent
		FROM tool_calls WHERE id = ?`, id).Scan(&e.RunID, &e.NodeID, &e.Iteration, &e.Attempt, &e.Seq,
		&e.ToolName, &e.InputJSON, &e.OutputJSON, &e.StartedAtMs, &e.FinishedAtMs, &e.Status, &e.ErrorJSON,
		&e.IdempotencyKey, &e.SideEffect, &e.Idempotent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoCall
	}
	if err != nil || e.Attempt <= 1 {
		return c, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT tool_name, attempt, seq, status FROM tool_calls
		WHERE run_id = ? AND node_id = ? AND iteration = ? AND attempt < ? AND side_effect = 1 AND idempotent = 0
		ORDER BY attempt, seq`, e.RunID, e.NodeID, e.Iteration, e.Attempt)
	if err != nil {
		return nil, err
	}
	prior, err := scanAll(rows, func(p *journal.PriorCall) []any {
		return []any{&p.ToolName, &p.Attempt, &p.Seq, &p.Status}
	})
	if err != nil {
		return nil, err
	}
	c.Warning = journal.FormatWarning(e.Position(), prior)
	return c, nil
}

// scanAll reads every row into a T whose fields cols names, and closes rows.
func scanAll[T any](rows *sql.Rows, cols func(*T) []any) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var v T
		if err := rows.Scan(cols(&v)...); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
