package journal_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/journal"
)

func TestBeginAndFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{MaxFieldBytes: 64})
	pos := journal.Position{RunID: "r", NodeID: "n", Iteration: 2, Attempt: 1}

	e := entry(pos, 99, "write") // Begin ignores the seq and the outcome
	e.IdempotencyKey = ""
	seq, err := j.Begin(ctx, e)
	require.NoError(t, err)
	assert.Equal(t, 1, seq)

	rows, err := j.List(ctx, journal.Filter{RunID: "r"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	got := rows[0]
	assert.Equal(t, journal.StatusRunning, got.Status, "the row exists while the call runs")
	assert.Equal(t, 1, got.Seq)
	assert.Equal(t, `{"path":"a.txt"}`, got.InputJSON)
	assert.Equal(t, "null", got.OutputJSON)
	assert.Equal(t, int64(1000), got.StartedAtMs)
	assert.Zero(t, got.FinishedAtMs)
	assert.Empty(t, got.IdempotencyKey)
	assert.True(t, got.SideEffect)

	done := entry(pos, seq, "write")
	done.Status = journal.StatusError
	done.ErrorJSON = `{"code":"TOOL_X","message":"` + string(make([]byte, 100)) + `"}`
	require.NoError(t, j.Finish(ctx, done))
	rows, err = j.List(ctx, journal.Filter{RunID: "r"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	got = rows[0]
	assert.Equal(t, journal.StatusError, got.Status)
	assert.Equal(t, int64(1005), got.FinishedAtMs)
	assert.Equal(t, "k-1", got.IdempotencyKey, "Finish stores the key")
	assert.Contains(t, got.ErrorJSON, `"truncated":true`, "Finish truncates as Record does")

	// A row finishes once; an unknown seq and a running outcome are refused.
	require.Error(t, j.Finish(ctx, done), "already finished")
	require.Error(t, j.Finish(ctx, entry(pos, 5, "write")), "never begun")
	running := entry(pos, seq, "write")
	running.Status = journal.StatusRunning
	require.Error(t, j.Finish(ctx, running))
	_, err = j.Begin(ctx, entry(pos, 0, ""))
	require.Error(t, err, "a tool name is required")
}

func TestBeginAndReserveShareTheSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{})
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	var got []int
	for i := range 6 {
		var s int
		var err error
		if i%3 == 1 {
			s, err = j.Reserve(ctx, pos) // reserved, never recorded: Begin must still skip it
		} else {
			s, err = j.Begin(ctx, entry(pos, 0, "bash"))
		}
		require.NoError(t, err)
		got = append(got, s)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, got)
	other := pos
	other.Attempt = 2
	s, err := j.Begin(ctx, entry(other, 0, "bash"))
	require.NoError(t, err)
	assert.Equal(t, 1, s, "another attempt has its own sequence")
}

func TestUnfinishedCallsAreInTheRetryWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{})
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	// Attempt 1's process stopped during its second call: the row stays running.
	s, err := j.Begin(ctx, entry(pos, 0, "write"))
	require.NoError(t, err)
	require.NoError(t, j.Finish(ctx, entry(pos, s, "write")))
	_, err = j.Begin(ctx, entry(pos, 0, "bash"))
	require.NoError(t, err)

	next := pos
	next.Attempt = 2
	w, err := j.ResumeWarning(ctx, next)
	require.NoError(t, err)
	assert.Contains(t, w, "- write (attempt 1, seq 1, success)")
	assert.Contains(t, w, "- bash (attempt 1, seq 2, running)")
}

// A journal written by a version 1 build (status success or error only) is migrated in place at
// Open, its rows and sequence counters kept.
func TestOpenMigratesVersion1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`
CREATE TABLE tool_calls (
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
	status          TEXT    NOT NULL CHECK (status IN ('success', 'error')),
	error_json      TEXT    NOT NULL,
	idempotency_key TEXT    NOT NULL,
	side_effect     INTEGER NOT NULL,
	idempotent      INTEGER NOT NULL,
	UNIQUE (run_id, node_id, iteration, attempt, seq)
);
CREATE INDEX tool_calls_node ON tool_calls (node_id);
CREATE TABLE tool_call_seqs (
	run_id    TEXT    NOT NULL,
	node_id   TEXT    NOT NULL,
	iteration INTEGER NOT NULL,
	attempt   INTEGER NOT NULL,
	last_seq  INTEGER NOT NULL,
	PRIMARY KEY (run_id, node_id, iteration, attempt)
) WITHOUT ROWID;
INSERT INTO tool_calls VALUES (1, 'r', 'n', 0, 1, 1, 'write', '{}', '"ok"', 10, 20, 'success', 'null', 'k1', 1, 0);
INSERT INTO tool_call_seqs VALUES ('r', 'n', 0, 1, 3);
PRAGMA user_version = 1;`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	j, err := journal.Open(ctx, path, journal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	rows, err := j.List(ctx, journal.Filter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "k1", rows[0].IdempotencyKey)
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	s, err := j.Begin(ctx, entry(pos, 0, "bash"))
	require.NoError(t, err, "the new table takes running rows")
	assert.Equal(t, 4, s, "the counter of version 1 still counts")
	byNode, err := j.List(ctx, journal.Filter{NodeID: "n"})
	require.NoError(t, err)
	assert.Len(t, byNode, 2)

	var v int
	db, err = sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, 3, v)
	var idx int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'tool_calls_node'`).Scan(&idx))
	assert.Zero(t, idx, "version 2 has no index on node_id alone")
}
