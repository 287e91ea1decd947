package journal_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/journal"
)

func open(t testing.TB, opts journal.Options) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), opts)
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

func entry(pos journal.Position, seq int, tool string) journal.Entry {
	return journal.Entry{
		RunID: pos.RunID, NodeID: pos.NodeID, Iteration: pos.Iteration, Attempt: pos.Attempt, Seq: seq,
		ToolName: tool, InputJSON: `{"path":"a.txt"}`, OutputJSON: `"ok"`, ErrorJSON: "null",
		StartedAtMs: 1000, FinishedAtMs: 1005, Status: journal.StatusSuccess,
		IdempotencyKey: fmt.Sprintf("k-%d", seq), SideEffect: true, Idempotent: false,
	}
}

func TestReserveCountsPerPosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{})
	a := journal.Position{RunID: "r", NodeID: "n", Iteration: 0, Attempt: 1}
	b := a
	b.Attempt = 2
	for want := 1; want <= 3; want++ {
		got, err := j.Reserve(ctx, a)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	got, err := j.Reserve(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, 1, got, "another attempt has its own sequence")
}

func TestReserveIsAtomicAcrossConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	// Several independent handles (separate pools, as separate processes would have).
	var handles []*journal.Journal
	for range 4 {
		j, err := journal.Open(ctx, path, journal.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { j.Close() })
		handles = append(handles, j)
	}
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	const per = 25
	seqs := make(chan int, len(handles)*per)
	var wg sync.WaitGroup
	for _, j := range handles {
		wg.Go(func() {
			for range per {
				s, err := j.Reserve(ctx, pos)
				assert.NoError(t, err)
				seqs <- s
			}
		})
	}
	wg.Wait()
	close(seqs)
	seen := map[int]bool{}
	for s := range seqs {
		assert.False(t, seen[s], "seq %d handed out twice", s)
		seen[s] = true
	}
	assert.Len(t, seen, len(handles)*per)
	for s := 1; s <= len(handles)*per; s++ {
		assert.True(t, seen[s], "seq %d missing", s)
	}
}

// reserveHelperEnv names the journal a child process of TestReserveIsAtomicAcrossProcesses
// reserves in; the child prints its seqs, one per line.
const reserveHelperEnv = "JOURNAL_TEST_RESERVE_IN"

func TestReserveIsAtomicAcrossProcesses(t *testing.T) {
	const per = 40
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	if path := os.Getenv(reserveHelperEnv); path != "" {
		// The child: reserve and record, or begin and finish, like a tool call would, so that
		// the seq subqueries read rows and counters other processes are writing.
		ctx := context.Background()
		j, err := journal.Open(ctx, path, journal.Options{})
		require.NoError(t, err)
		defer j.Close()
		for i := range per {
			if i%2 == 0 {
				s, err := j.Reserve(ctx, pos)
				require.NoError(t, err)
				require.NoError(t, j.Record(ctx, entry(pos, s, "bash")))
				fmt.Println(s)
				continue
			}
			s, err := j.Begin(ctx, entry(pos, 0, "bash"))
			require.NoError(t, err)
			require.NoError(t, j.Finish(ctx, entry(pos, s, "bash")))
			fmt.Println(s)
		}
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	j, err := journal.Open(context.Background(), path, journal.Options{}) // the schema, once
	require.NoError(t, err)
	require.NoError(t, j.Close())
	const procs = 4
	outs := inChildren(t, "TestReserveIsAtomicAcrossProcesses", reserveHelperEnv+"="+path, procs)()
	seen := map[int]bool{}
	for i := range procs {
		for _, line := range strings.Fields(string(outs[i])) {
			s, err := strconv.Atoi(line)
			if err != nil {
				continue // the test framework's own lines
			}
			assert.False(t, seen[s], "seq %d handed out twice", s)
			seen[s] = true
		}
	}
	assert.Len(t, seen, procs*per)
	for s := 1; s <= procs*per; s++ {
		assert.True(t, seen[s], "seq %d missing", s)
	}
}

func TestReserveStaysAboveRecordedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := journal.Open(ctx, path, journal.Options{})
	require.NoError(t, err)
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	require.NoError(t, j.Record(ctx, entry(pos, 7, "write")))
	require.NoError(t, j.Close())

	// A counter table that lost its row (or an old file) must not hand out a used seq.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec("DELETE FROM tool_call_seqs")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	j, err = journal.Open(ctx, path, journal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	s, err := j.Reserve(ctx, pos)
	require.NoError(t, err)
	assert.Equal(t, 8, s)
}

func TestRecordAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{})
	p1 := journal.Position{RunID: "run1", NodeID: "a", Iteration: 2, Attempt: 1}
	p2 := journal.Position{RunID: "run1", NodeID: "b", Iteration: 0, Attempt: 1}
	p3 := journal.Position{RunID: "run2", NodeID: "a", Iteration: 0, Attempt: 1}
	e1 := entry(p1, 1, "write")
	e2 := entry(p2, 1, "read")
	e2.Status, e2.OutputJSON, e2.ErrorJSON = journal.StatusError, "", `{"code":"TOOL_NOT_FOUND"}`
	e2.SideEffect, e2.Idempotent = false, true
	e3 := entry(p3, 1, "bash")
	for _, e := range []journal.Entry{e1, e2, e3} {
		require.NoError(t, j.Record(ctx, e))
	}

	all, err := j.List(ctx, journal.Filter{})
	require.NoError(t, err)
	require.Len(t, all, 3)
	assert.Equal(t, e1, all[0], "every field round-trips")
	want2 := e2
	want2.OutputJSON = "null" // an empty field is stored as JSON null
	assert.Equal(t, want2, all[1])

	byRun, err := j.List(ctx, journal.Filter{RunID: "run1"})
	require.NoError(t, err)
	assert.Len(t, byRun, 2)
	byNode, err := j.List(ctx, journal.Filter{NodeID: "a"})
	require.NoError(t, err)
	assert.Len(t, byNode, 2)
	both, err := j.List(ctx, journal.Filter{RunID: "run1", NodeID: "a"})
	require.NoError(t, err)
	require.Len(t, both, 1)
	assert.Equal(t, "write", both[0].ToolName)
	last, err := j.List(ctx, journal.Filter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, last, 1)
	assert.Equal(t, "bash", last[0].ToolName, "Limit keeps the most recent rows")
}

func TestRecordRejectsBadEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{})
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	bad := entry(pos, 1, "write")
	bad.Status = "running"
	require.Error(t, j.Record(ctx, bad))
	noName := entry(pos, 1, "")
	require.Error(t, j.Record(ctx, noName))

	require.NoError(t, j.Record(ctx, entry(pos, 1, "write")))
	require.Error(t, j.Record(ctx, entry(pos, 1, "write")), "a seq is recorded once per position")

	rows, err := j.List(ctx, journal.Filter{})
	require.NoError(t, err)
	assert.Len(t, rows, 1)
}

func TestRecordBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{})
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	require.NoError(t, j.RecordBatch(ctx, []journal.Entry{entry(pos, 1, "a"), entry(pos, 2, "b")}))
	err := j.RecordBatch(ctx, []journal.Entry{entry(pos, 3, "c"), entry(pos, 2, "dup")})
	require.Error(t, err)
	rows, err := j.List(ctx, journal.Filter{})
	require.NoError(t, err)
	assert.Len(t, rows, 2, "the failed batch left nothing behind")
}

func TestLargeFieldsAreTruncated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{MaxFieldBytes: 100})
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	e := entry(pos, 1, "read")
	big, err := json.Marshal(strings.Repeat("é", 300)) // 602 bytes of JSON
	require.NoError(t, err)
	e.OutputJSON = string(big)
	require.NoError(t, j.Record(ctx, e))

	rows, err := j.List(ctx, journal.Filter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	var got struct {
		Truncated bool   `json:"truncated"`
		Bytes     int    `json:"bytes"`
		Preview   string `json:"preview"`
	}
	require.NoError(t, json.Unmarshal([]byte(rows[0].OutputJSON), &got))
	assert.True(t, got.Truncated)
	assert.Equal(t, len(big), got.Bytes)
	assert.LessOrEqual(t, len(got.Preview), 50)
	assert.True(t, strings.HasPrefix(string(big), got.Preview), "the preview is the head of the field")
	assert.NotContains(t, got.Preview, "\uFFFD", "cut on a rune boundary")
	assert.Equal(t, e.InputJSON, rows[0].InputJSON, "small fields are kept as they are")
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	assert.Equal(t, `"abc"`, journal.Truncate(`"abc"`, 5))
	assert.Equal(t, `"abc"`, journal.Truncate(`"abc"`, 0), "no limit")
	s := strings.Repeat("x", 5000)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(journal.Truncate(s, 4000)), &got))
	assert.Equal(t, true, got["truncated"])
	assert.EqualValues(t, 5000, got["bytes"])
	assert.Len(t, got["preview"], journal.PreviewBytes)
	// A limit smaller than the envelope still gives valid JSON.
	require.NoError(t, json.Unmarshal([]byte(journal.Truncate(`"<&>"`, 1)), &got))
	assert.EqualValues(t, 5, got["bytes"])
}

func TestResumeWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := open(t, journal.Options{})
	base := journal.Position{RunID: "r", NodeID: "n", Iteration: 3, Attempt: 1}

	w, err := j.ResumeWarning(ctx, base)
	require.NoError(t, err)
	assert.Empty(t, w, "attempt 1 never warns")

	// Attempt 1: 7 side-effecting, non-idempotent calls and 2 that must not be listed.
	for seq := 1; seq <= 7; seq++ {
		e := entry(base, seq, fmt.Sprintf("tool%d", seq))
		if seq == 2 {
			e.Status = journal.StatusError
		}
		require.NoError(t, j.Record(ctx, e))
	}
	read := entry(base, 8, "read")
	read.SideEffect, read.Idempotent = false, true
	upsert := entry(base, 9, "upsert")
	upsert.Idempotent = true
	require.NoError(t, j.Record(ctx, read))
	require.NoError(t, j.Record(ctx, upsert))
	// Other iterations, nodes and runs, and a later attempt, are not this task's history.
	for _, p := range []journal.Position{
		{RunID: "r", NodeID: "n", Iteration: 4, Attempt: 1},
		{RunID: "r", NodeID: "other", Iteration: 3, Attempt: 1},
		{RunID: "other", NodeID: "n", Iteration: 3, Attempt: 1},
		{RunID: "r", NodeID: "n", Iteration: 3, Attempt: 3},
	} {
		require.NoError(t, j.Record(ctx, entry(p, 1, "foreign")))
	}

	attempt2 := base
	attempt2.Attempt = 2
	calls, err := j.PriorSideEffects(ctx, attempt2)
	require.NoError(t, err)
	require.Len(t, calls, 7)
	assert.Equal(t, journal.PriorCall{ToolName: "tool2", Attempt: 1, Seq: 2, Status: journal.StatusError}, calls[1])

	w, err = j.ResumeWarning(ctx, attempt2)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(w, journal.WarningPrefix))
	for seq := 1; seq <= 5; seq++ {
		assert.Contains(t, w, fmt.Sprintf("tool%d (attempt 1, seq %d,", seq, seq))
	}
	assert.Contains(t, w, "tool2 (attempt 1, seq 2, error)")
	assert.NotContains(t, w, "tool6")
	assert.Contains(t, w, "...and 2 more")
	assert.NotContains(t, w, "- read")
	assert.NotContains(t, w, "upsert")
	assert.NotContains(t, w, "foreign")
	assert.Contains(t, w, "idempotency key")

	// Attempt 4 also sees attempt 3's call.
	attempt4 := base
	attempt4.Attempt = 4
	calls, err = j.PriorSideEffects(ctx, attempt4)
	require.NoError(t, err)
	assert.Len(t, calls, 8)
}

func TestFormatWarningShort(t *testing.T) {
	t.Parallel()
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 2}
	w := journal.FormatWarning(pos, []journal.PriorCall{{ToolName: "write", Attempt: 1, Seq: 1, Status: journal.StatusSuccess}})
	assert.True(t, strings.HasPrefix(w, journal.WarningPrefix))
	assert.Contains(t, w, "- write (attempt 1, seq 1, success)")
	assert.NotContains(t, w, "more")
	assert.Empty(t, journal.FormatWarning(pos, nil))
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	_, err := journal.Open(ctx, "", journal.Options{})
	require.Error(t, err)

	notDB := filepath.Join(dir, "not.db")
	require.NoError(t, os.WriteFile(notDB, []byte(strings.Repeat("this is not sqlite ", 100)), 0o644))
	_, err = journal.Open(ctx, notDB, journal.Options{})
	require.Error(t, err)

	newer := filepath.Join(dir, "newer.db")
	db, err := sql.Open("sqlite", newer)
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 99")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = journal.Open(ctx, newer, journal.Options{})
	require.Error(t, err, "a schema from a newer build is refused, not clobbered")
}

func TestOpenOddPathsAndWAL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "we?ird #dir", "sub", "j%20.db")
	j, err := journal.Open(ctx, path, journal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	assert.Equal(t, path, j.Path())
	_, err = os.Stat(path)
	require.NoError(t, err, "the file is created at exactly that path")

	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	require.NoError(t, err)
	defer db.Close()
	var mode string
	require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode))
	assert.Equal(t, "wal", mode)
}

// TestFirstUsesRace: the statements prepared at their first use (Record, Reserve, RecordBatch,
// PriorSideEffects) are first used from several goroutines at once; each gets one statement and
// every row is stored (run with -race).
func TestFirstUsesRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "j.db"), journal.Options{})
	require.NoError(t, err)
	defer j.Close()
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 2}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := journal.Entry{RunID: "r", NodeID: fmt.Sprint("rec", g), Attempt: 1, Seq: 1, ToolName: "write",
				Status: journal.StatusSuccess, SideEffect: true}
			assert.NoError(t, j.Record(ctx, e))
			e.NodeID = fmt.Sprint("batch", g)
			assert.NoError(t, j.RecordBatch(ctx, []journal.Entry{e}))
			_, err := j.Reserve(ctx, pos)
			assert.NoError(t, err)
			_, err = j.PriorSideEffects(ctx, pos)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	rows, err := j.List(ctx, journal.Filter{RunID: "r"})
	require.NoError(t, err)
	assert.Len(t, rows, 16)
	seq, err := j.Reserve(ctx, pos)
	require.NoError(t, err)
	assert.Equal(t, 9, seq, "8 reservations before this one")
	require.NoError(t, j.Close())
}

// inChildren starts the test named test in procs child processes of this test binary, each with
// env (NAME=VALUE) set; wait waits for them, fails the test if one failed, and returns their
// standard outputs.
func inChildren(t *testing.T, test, env string, procs int) (wait func() [][]byte) {
	t.Helper()
	outs := make([][]byte, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
			cmd.Env = append(os.Environ(), env)
			outs[i], errs[i] = cmd.Output()
		})
	}
	return func() [][]byte {
		wg.Wait()
		for i, err := range errs {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			require.NoError(t, err, "child %d: %s%s", i, outs[i], stderr)
		}
		return outs
	}
}
