package ui

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sandboxer/sandboxer/journal"
)

// store reads a journal file and never writes it: the connection is opened with mode=ro and
// query_only, so not even a mistake in a query here can change a row. Rows are read by primary
// key (id) or through the journal's UNIQUE (run_id, node_id, iteration, attempt, seq) index; the
// viewer creates no index of its own.
//
// The totals of runs and tasks (calls, errors, first and last time) would cost a scan of the
// whole table per request, JSON columns included (half a second at 100,000 calls): the store
// keeps them in memory instead, read once and then brought up to date at each request from the
// rows after the last id it has seen, plus the calls it saw running (a running call's row is
// the only one that changes). The journal only appends, so that is everything.
type store struct {
	db *sql.DB

	mu      sync.Mutex
	last    int64                      // the highest id counted
	running map[int64]journal.Position // counted calls that were running then
	runs    map[string]*Run            // by run id
	tasks   map[journal.Position]*Task // by task attempt
}

// openStore opens the journal at path read-only and counts its rows. Errors: the file is
// missing or not a journal.
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
	s := &store{db: db, running: map[int64]journal.Position{}, runs: map[string]*Run{}, tasks: map[journal.Position]*Task{}}
	var n int
	err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'tool_calls'`).Scan(&n)
	if err == nil && n == 0 {
		err = errors.New("not a sandboxer journal (no tool_calls table)")
	}
	if err == nil {
		err = s.refresh(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ui: open %s: %w", path, err)
	}
	return s, nil
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
	FirstID int64  `json:"firstId"` // the run's oldest row
	LastID  int64  `json:"lastId"`  // its newest: runs are listed newest first
}

// Task is one task attempt of a run: a (node, iteration, attempt) position.
type Task struct {
	journal.Position
	FirstMs int64 `json:"firstMs"`
	LastMs  int64 `json:"lastMs"`
	Calls   int   `json:"calls"`
	Errors  int   `json:"errors"`
}

// tally is what the totals count of one row.
type tally struct {
	id                int64
	pos               journal.Position
	started, finished int64
	status            journal.Status
}

// refresh brings the totals up to date: the rows after the last id counted, and the outcome
// of the calls counted while running.
func (s *store) refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cols := func(t *tally) []any {
		return []any{&t.id, &t.pos.RunID, &t.pos.NodeID, &t.pos.Iteration, &t.pos.Attempt, &t.started, &t.finished, &t.status}
	}
	const sel = `SELECT id, run_id, node_id, iteration, attempt, started_at_ms, finished_at_ms, status FROM tool_calls`
	if len(s.running) > 0 {
		ids := make([]string, 0, len(s.running))
		for id := range s.running {
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		rows, err := s.db.QueryContext(ctx, sel+` WHERE status != 'running' AND id IN (`+strings.Join(ids, ",")+`)`)
		if err != nil {
			return err
		}
		done, err := scanAll(rows, cols)
		if err != nil {
			return err
		}
		for _, t := range done {
			delete(s.running, t.id)
			s.count(t, -1)
		}
	}
	rows, err := s.db.QueryContext(ctx, sel+` WHERE id > ? ORDER BY id`, s.last)
	if err != nil {
		return err
	}
	added, err := scanAll(rows, cols)
	if err != nil {
		return err
	}
	for _, t := range added {
		s.count(t, 1)
		s.last = t.id
		if t.status == journal.StatusRunning {
			s.running[t.id] = t.pos
		}
	}
	return nil
}

// count adds a row to the totals (n = 1), or the outcome of a call counted while running
// (n = -1: it is running no more).
func (s *store) count(t tally, n int) {
	last := max(t.started, t.finished)
	errs := 0
	if t.status == journal.StatusError {
		errs = 1
	}
	r := s.runs[t.pos.RunID]
	if r == nil {
		r = &Run{RunID: t.pos.RunID, FirstMs: t.started, FirstID: t.id}
		s.runs[t.pos.RunID] = r
	}
	task := s.tasks[t.pos]
	if task == nil {
		task = &Task{Position: t.pos, FirstMs: t.started}
		s.tasks[t.pos] = task
	}
	r.Errors += errs
	task.Errors += errs
	r.LastMs, task.LastMs = max(r.LastMs, last), max(task.LastMs, last)
	if n < 0 {
		r.Running--
		return
	}
	r.Calls++
	task.Calls++
	r.FirstMs, task.FirstMs = min(r.FirstMs, t.started), min(task.FirstMs, t.started)
	r.LastID = t.id
	if t.status == journal.StatusRunning {
		r.Running++
	}
}

// runs lists up to limit runs, the most recently active first.
func (s *store) listRuns(ctx context.Context, limit int) ([]Run, error) {
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	out := make([]Run, 0, len(s.runs))
	for _, r := range s.runs {
		out = append(out, *r)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Run) int { return cmp.Compare(b.LastID, a.LastID) })
	return out[:min(limit, len(out))], nil
}

// listTasks lists a run's task attempts in (node, iteration, attempt) order.
func (s *store) listTasks(ctx context.Context, run string) ([]Task, error) {
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	out := []Task{}
	for _, t := range s.tasks {
		if t.RunID == run {
			out = append(out, *t)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Task) int {
		return cmp.Or(strings.Compare(a.NodeID, b.NodeID), cmp.Compare(a.Iteration, b.Iteration), cmp.Compare(a.Attempt, b.Attempt))
	})
	return out, nil
}

// bounds returns the first and last row id of run as of now (0, 0: no such run).
func (s *store) bounds(ctx context.Context, run string) (first, last int64, err error) {
	if err := s.refresh(ctx); err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[run]; r != nil {
		return r.FirstID, r.LastID, nil
	}
	return 0, 0, nil
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
	if q.RunID != "" {
		// The primary key is walked from the cursor, between the run's first and last rows (the
		// unary + keeps SQLite from walking the UNIQUE index instead and sorting all the run's
		// rows by id), so a page stops after its rows and a poll past the run's end reads none.
		first, last, err := s.bounds(ctx, q.RunID)
		if err != nil {
			return nil, err
		}
		where = append(where, "id >= ?", "id <= ?", "+run_id = ?")
		args = append(args, first, last, q.RunID)
	}
	for _, f := range []struct{ col, val string }{{"tool_name", q.Tool}, {"status", q.Status}} {
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
