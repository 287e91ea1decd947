package journal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/journal"
)

// openAt opens the journal at path with opts, closed at the end of the test.
func openAt(t testing.TB, path string, opts journal.Options) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

// rawDB opens the journal file as plain SQLite, as a person with sqlite3 would.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// calls records n calls in run, through Begin and Finish, the way the CLI records them (two
// calls begun before the first finishes, so that the chain's order is the order of finishing).
func calls(t testing.TB, j *journal.Journal, run string, n int) {
	t.Helper()
	ctx := context.Background()
	pos := journal.Position{RunID: run, NodeID: "n", Attempt: 1}
	for i := 0; i < n; i += 2 {
		a, err := j.Begin(ctx, entry(pos, 0, "write"))
		require.NoError(t, err)
		if i+1 < n {
			b, err := j.Begin(ctx, entry(pos, 0, "bash"))
			require.NoError(t, err)
			require.NoError(t, j.Finish(ctx, entry(pos, b, "bash")))
		}
		require.NoError(t, j.Finish(ctx, entry(pos, a, "write")))
	}
}

func verify(t testing.TB, j *journal.Journal, run string) *journal.Verification {
	t.Helper()
	v, err := j.Verify(context.Background(), run)
	require.NoError(t, err)
	return v
}

// idAt is the row id at a chain index of run.
func idAt(t testing.TB, db *sql.DB, run string, index int64) int64 {
	t.Helper()
	var id int64
	require.NoError(t, db.QueryRow(`SELECT id FROM tool_calls WHERE run_id = ? AND chain_index = ?`, run, index).Scan(&id))
	return id
}

func TestChainOfManyCallsVerifies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	j := openAt(t, path, journal.Options{})
	calls(t, j, "r", 40)
	calls(t, j, "s", 7)
	pos := journal.Position{RunID: "r", NodeID: "other", Attempt: 1}
	require.NoError(t, j.Record(ctx, entry(pos, 1, "read")))
	other := journal.Position{RunID: "s", NodeID: "batch", Attempt: 1}
	require.NoError(t, j.RecordBatch(ctx, []journal.Entry{entry(pos, 2, "grep"), entry(other, 1, "read"), entry(pos, 3, "edit")}))
	_, err := j.Begin(ctx, entry(pos, 0, "bash")) // left running: linked when it finishes
	require.NoError(t, err)

	v := verify(t, j, "")
	require.Nil(t, v.Mismatch)
	assert.True(t, v.OK)
	assert.EqualValues(t, 51, v.Rows)
	assert.Equal(t, 2, v.Runs)
	assert.EqualValues(t, 1, v.Running)
	assert.Zero(t, v.Unchained)
	require.Len(t, v.Heads, 2)
	assert.Equal(t, journal.Head{RunID: "r", Rows: 43, Hash: v.Heads[0].Hash}, v.Heads[0])
	assert.EqualValues(t, 8, v.Heads[1].Rows)

	only := verify(t, j, "s")
	assert.True(t, only.OK)
	assert.EqualValues(t, 8, only.Rows)
	require.Len(t, only.Heads, 1)

	// The chain is in the order rows were finished, each linked to the one before.
	db := rawDB(t, path)
	rows, err := db.Query(`SELECT chain_index, prev_hash, row_hash, tool_name FROM tool_calls
		WHERE run_id = 's' ORDER BY chain_index`)
	require.NoError(t, err)
	defer rows.Close()
	prev, tools := "", []string{}
	for i := int64(1); rows.Next(); i++ {
		var index int64
		var p, h, tool string
		require.NoError(t, rows.Scan(&index, &p, &h, &tool))
		assert.Equal(t, i, index)
		assert.Equal(t, prev, p)
		prev, tools = h, append(tools, tool)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"bash", "write", "bash", "write", "bash", "write", "write", "read"}, tools)
	assert.Equal(t, v.Heads[1].Hash, prev)
}

// The encoding docs/journal.md gives (journal.CanonicalSQL) recomputes every row's hash with
// SQL and SHA-256 alone.
func TestCanonicalSQLRecomputesTheHash(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	j := openAt(t, path, journal.Options{})
	calls(t, j, "r", 5)
	ctx := context.Background()
	odd := entry(journal.Position{RunID: "r ü,:1", NodeID: "", Attempt: 1}, 1, "write")
	odd.InputJSON, odd.OutputJSON = "{\n \"a\": \"x:,y\"}", `"日本"`
	require.NoError(t, j.Record(ctx, odd))
	require.True(t, verify(t, j, "").OK)

	db := rawDB(t, path)
	rows, err := db.Query(`SELECT id, row_hash FROM tool_calls`)
	require.NoError(t, err)
	type row struct {
		id   int64
		hash string
	}
	var all []row
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.id, &r.hash))
		all = append(all, r)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	require.Len(t, all, 6)
	for _, r := range all {
		var enc string
		require.NoError(t, db.QueryRow(journal.CanonicalSQL+" WHERE id = ?", r.id).Scan(&enc))
		sum := sha256.Sum256([]byte(enc))
		assert.Equal(t, r.hash, hex.EncodeToString(sum[:]), "row %d: %q", r.id, enc)
	}

	doc, err := os.ReadFile("../docs/journal.md")
	require.NoError(t, err)
	assert.Contains(t, string(doc), journal.CanonicalSQL, "docs/journal.md quotes the canonical query")
}

// tamper builds a journal of two runs (r: 10 calls, s: 4), changes it with plain SQL and
// returns what Verify then finds.
func tamper(t *testing.T, opts journal.Options, change func(db *sql.DB)) *journal.Verification {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.db")
	j := openAt(t, path, opts)
	calls(t, j, "r", 10)
	calls(t, j, "s", 4)
	require.True(t, verify(t, j, "").OK)
	change(rawDB(t, path))
	return verify(t, j, "")
}

func exec1(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	_, err := db.Exec(q, args...)
	require.NoError(t, err)
}

func TestVerifyFindsAndNamesTampering(t *testing.T) {
	t.Parallel()
	type want struct {
		run   string
		index int64
		check journal.Check
		id    bool // the row is still there: the mismatch names its id
	}
	cases := []struct {
		name   string
		change func(t *testing.T, db *sql.DB)
		want   want
	}{}
	for _, col := range []string{"output_json = '\"forged\"'", "status = 'error'", "input_json = '{}'",
		"started_at_ms = started_at_ms + 1", "idempotency_key = 'x'", "node_id = 'm'", "side_effect = 0",
		"error_json = '{}'", "tool_name = 'read'", "seq = seq + 100", "attempt = 2"} {
		cases = append(cases, struct {
			name   string
			change func(t *testing.T, db *sql.DB)
			want   want
		}{"update " + col, func(t *testing.T, db *sql.DB) {
			exec1(t, db, `UPDATE tool_calls SET `+col+` WHERE run_id = 'r' AND chain_index = 4`)
		}, want{"r", 4, journal.CheckContentChanged, true}})
	}
	cases = append(cases, []struct {
		name   string
		change func(t *testing.T, db *sql.DB)
		want   want
	}{
		{"a changed row given its new hash", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `UPDATE tool_calls SET output_json = '"forged"' WHERE run_id = 'r' AND chain_index = 4`)
			rehash(t, db, idAt(t, db, "r", 4))
		}, want{"r", 4, journal.CheckContentChanged, true}},
		{"the last row changed and given its new hash", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `UPDATE tool_calls SET output_json = '"forged"' WHERE run_id = 'r' AND chain_index = 10`)
			rehash(t, db, idAt(t, db, "r", 10))
		}, want{"r", 10, journal.CheckContentChanged, true}},
		{"a middle row deleted", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `DELETE FROM tool_calls WHERE run_id = 'r' AND chain_index = 5`)
		}, want{"r", 5, journal.CheckRowDeleted, false}},
		{"the last row deleted", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `DELETE FROM tool_calls WHERE run_id = 'r' AND chain_index = 10`)
		}, want{"r", 10, journal.CheckRowDeleted, false}},
		{"the first row deleted", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `DELETE FROM tool_calls WHERE run_id = 's' AND chain_index = 1`)
		}, want{"s", 1, journal.CheckRowDeleted, false}},
		{"every row of a run deleted", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `DELETE FROM tool_calls WHERE run_id = 's'`)
		}, want{"s", 1, journal.CheckRowDeleted, false}},
		{"the run's head deleted", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `DELETE FROM chain_heads WHERE run_id = 'r'`)
		}, want{"r", 11, journal.CheckRowDeleted, false}},
		{"a row unlinked", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `UPDATE tool_calls SET chain_index = NULL WHERE run_id = 'r' AND chain_index = 3`)
		}, want{"r", 0, journal.CheckRowInserted, true}},
		{"a row inserted", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `INSERT INTO tool_calls (run_id, node_id, iteration, attempt, seq, tool_name, input_json,
				output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent)
				VALUES ('r', 'n', 0, 1, 99, 'bash', '{}', '"ok"', 1, 2, 'success', 'null', 'k', 1, 0)`)
		}, want{"r", 0, journal.CheckRowInserted, true}},
		{"a row inserted past the head, with a valid hash", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `INSERT INTO tool_calls (run_id, node_id, iteration, attempt, seq, tool_name, input_json,
				output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent,
				chain_index, prev_hash)
				SELECT run_id, node_id, iteration, attempt, 99, tool_name, input_json, output_json, started_at_ms,
					finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent, 11, row_hash
				FROM tool_calls WHERE run_id = 'r' AND chain_index = 10`)
			var id int64
			require.NoError(t, db.QueryRow(`SELECT MAX(id) FROM tool_calls`).Scan(&id))
			rehash(t, db, id)
		}, want{"r", 11, journal.CheckRowInserted, true}},
		{"a copy of a row at its chain index", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `INSERT INTO tool_calls (run_id, node_id, iteration, attempt, seq, tool_name, input_json,
				output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent,
				chain_index, prev_hash, row_hash)
				SELECT run_id, node_id, iteration, attempt, 99, tool_name, input_json, output_json, started_at_ms,
					finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent, chain_index, prev_hash, row_hash
				FROM tool_calls WHERE run_id = 'r' AND chain_index = 6`)
		}, want{"r", 6, journal.CheckRowInserted, true}},
		{"two rows reordered (chain indexes swapped)", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `UPDATE tool_calls SET chain_index = 7 - chain_index WHERE run_id = 'r' AND chain_index IN (3, 4)`)
		}, want{"r", 3, journal.CheckContentChanged, true}},
		{"two rows reordered (ids swapped)", func(t *testing.T, db *sql.DB) {
			a, b := idAt(t, db, "r", 3), idAt(t, db, "r", 4)
			exec1(t, db, `UPDATE tool_calls SET id = -1 WHERE id = ?`, a)
			exec1(t, db, `UPDATE tool_calls SET id = ? WHERE id = ?`, a, b)
			exec1(t, db, `UPDATE tool_calls SET id = ? WHERE id = -1`, b)
		}, want{"r", 3, journal.CheckContentChanged, true}},
		{"the chain's start marker deleted (a new journal has no unchained rows to mistake)", func(t *testing.T, db *sql.DB) {
			exec1(t, db, `DELETE FROM chain_start`)
		}, want{}},
	}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var wantID int64
			v := tamper(t, journal.Options{}, func(db *sql.DB) {
				if tc.want.id && tc.want.index > 0 {
					defer func() { wantID = idAt(t, db, tc.want.run, tc.want.index) }()
				}
				tc.change(t, db)
			})
			if tc.want.check == "" {
				assert.True(t, v.OK, "%v", v.Mismatch)
				return
			}
			require.NotNil(t, v.Mismatch, "the change is found")
			assert.False(t, v.OK)
			m := v.Mismatch
			assert.Equal(t, tc.want.check, m.Check, m.Message)
			assert.Equal(t, tc.want.run, m.RunID, m.Message)
			assert.Equal(t, tc.want.index, m.Index, m.Message)
			switch {
			case !tc.want.id:
				assert.Zero(t, m.ID, "the row is gone")
			case wantID != 0 && tc.want.check != journal.CheckRowInserted:
				assert.Equal(t, wantID, m.ID, m.Message)
			default:
				assert.NotZero(t, m.ID)
			}
			assert.NotEmpty(t, m.Message)
		})
	}
}

// rehash gives row id the hash of its columns as they are now, as an editor who read
// docs/journal.md would (without the key: the signature, if any, stays the old one).
func rehash(t *testing.T, db *sql.DB, id int64) {
	t.Helper()
	var enc string
	require.NoError(t, db.QueryRow(journal.CanonicalSQL+" WHERE id = ?", id).Scan(&enc))
	sum := sha256.Sum256([]byte(enc))
	exec1(t, db, `UPDATE tool_calls SET row_hash = ? WHERE id = ?`, hex.EncodeToString(sum[:]), id)
}

func TestSignedJournal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := []byte("0123456789abcdef0123456789abcdef")
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := journal.Open(ctx, path, journal.Options{Key: key})
	require.NoError(t, err)
	calls(t, j, "r", 10)
	require.NoError(t, j.Close())

	signed := openAt(t, path, journal.Options{Key: key})
	v := verify(t, signed, "")
	require.True(t, v.OK, "%v", v.Mismatch)
	assert.EqualValues(t, 10, v.Signed)
	assert.Equal(t, journal.KeyID(key), v.KeyID)
	assert.Len(t, v.KeyID, 16)

	wrong := openAt(t, path, journal.Options{Key: []byte("another key, 32 bytes long......")})
	v = verify(t, wrong, "")
	require.False(t, v.OK)
	assert.Equal(t, journal.CheckSignatureWrong, v.Mismatch.Check)
	assert.EqualValues(t, 1, v.Mismatch.Index)

	none := openAt(t, path, journal.Options{})
	v = verify(t, none, "")
	require.False(t, v.OK)
	assert.Equal(t, journal.CheckKeyMissing, v.Mismatch.Check)

	// Without the key, a row changed and given its new hash still fails: its signature is the
	// old hash's. Stripping the signature does not help either.
	db := rawDB(t, path)
	exec1(t, db, `UPDATE tool_calls SET output_json = '"forged"' WHERE chain_index = 10`)
	id := idAt(t, db, "r", 10)
	rehash(t, db, id)
	var h string
	require.NoError(t, db.QueryRow(`SELECT row_hash FROM tool_calls WHERE id = ?`, id).Scan(&h))
	exec1(t, db, `UPDATE chain_heads SET head_hash = ?`, h)
	v = verify(t, signed, "")
	require.False(t, v.OK)
	assert.Equal(t, journal.Mismatch{RunID: "r", Index: 10, ID: id, Check: journal.CheckSignatureWrong, Message: v.Mismatch.Message}, *v.Mismatch)
	assert.True(t, verify(t, none, "").Mismatch.Check == journal.CheckKeyMissing, "hashes alone cannot see it")
	exec1(t, db, `UPDATE tool_calls SET row_sig = NULL, sig_key_id = NULL WHERE id = ?`, id)
	v = verify(t, signed, "")
	require.False(t, v.OK)
	assert.Equal(t, journal.CheckSignatureWrong, v.Mismatch.Check)
	assert.Contains(t, v.Mismatch.Message, "not signed")

	// The key is never stored.
	require.NoError(t, signed.Checkpoint(ctx))
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err == nil {
			assert.False(t, bytes.Contains(b, key), "%s holds the key", f)
		}
	}
}

func TestChainOfConcurrentWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	a := openAt(t, path, journal.Options{})
	b := openAt(t, path, journal.Options{}) // a second connection, as another process has
	var wg sync.WaitGroup
	for g := range 8 {
		j := a
		if g%2 == 1 {
			j = b
		}
		wg.Go(func() {
			ctx := context.Background()
			pos := journal.Position{RunID: "r", NodeID: fmt.Sprint("n", g), Attempt: 1}
			for i := range 25 {
				if i%5 == 4 {
					assert.NoError(t, j.Record(ctx, entry(pos, 1000+i, "read")))
					continue
				}
				s, err := j.Begin(ctx, entry(pos, 0, "bash"))
				if assert.NoError(t, err) {
					assert.NoError(t, j.Finish(ctx, entry(pos, s, "bash")))
				}
			}
		})
	}
	wg.Wait()
	v := verify(t, a, "")
	require.True(t, v.OK, "%v", v.Mismatch)
	assert.EqualValues(t, 200, v.Rows)
}

// chainHelperEnv names the journal a child process of TestChainOfConcurrentProcesses writes to.
const chainHelperEnv = "JOURNAL_TEST_CHAIN_IN"

func TestChainOfConcurrentProcesses(t *testing.T) {
	const per = 60
	if path := os.Getenv(chainHelperEnv); path != "" {
		ctx := context.Background()
		j, err := journal.Open(ctx, path, journal.Options{Key: []byte("a shared key of the two writers")})
		require.NoError(t, err)
		defer j.Close()
		pos := journal.Position{RunID: "r", NodeID: fmt.Sprint("p", os.Getpid()), Attempt: 1}
		for i := range per {
			if i%3 == 2 {
				require.NoError(t, j.Record(ctx, entry(pos, 1000+i, "read")))
				continue
			}
			s, err := j.Begin(ctx, entry(pos, 0, "bash"))
			require.NoError(t, err)
			require.NoError(t, j.Finish(ctx, entry(pos, s, "bash")))
		}
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	key := []byte("a shared key of the two writers")
	j := openAt(t, path, journal.Options{Key: key})
	const procs = 2
	wait := inChildren(t, "TestChainOfConcurrentProcesses", chainHelperEnv+"="+path, procs)
	calls(t, j, "r", 20) // and this process too, meanwhile
	wait()
	v := verify(t, j, "r")
	require.True(t, v.OK, "%v", v.Mismatch)
	assert.EqualValues(t, procs*per+20, v.Rows)
	assert.EqualValues(t, procs*per+20, v.Signed)
	// The children's rows interleave in the one chain.
	var nodes int
	require.NoError(t, rawDB(t, path).QueryRow(`SELECT COUNT(DISTINCT node_id) FROM tool_calls`).Scan(&nodes))
	assert.Equal(t, procs+1, nodes)
}

// A journal of schema version 2 is migrated at Open: its rows stay, reported as unchained; a
// row running then is linked when it finishes; new rows are chained; a finished row inserted
// without a chain later is an insertion, not an old row.
func TestOpenMigratesVersion2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	db := rawDB(t, path)
	exec1(t, db, journal.SchemaV2+`
INSERT INTO tool_calls VALUES (1, 'r', 'n', 0, 1, 1, 'write', '{}', '"ok"', 10, 20, 'success', 'null', 'k1', 1, 0);
INSERT INTO tool_calls VALUES (2, 'r', 'n', 0, 1, 2, 'bash', '{}', '"ok"', 30, 40, 'error', '{}', 'k2', 1, 0);
INSERT INTO tool_calls VALUES (3, 'r', 'n', 0, 1, 3, 'bash', '{}', 'null', 50, 0, 'running', 'null', 'k3', 1, 0);
PRAGMA user_version = 2;`)

	j := openAt(t, path, journal.Options{})
	var ver int
	require.NoError(t, db.QueryRow(`PRAGMA user_version`).Scan(&ver))
	assert.Equal(t, 3, ver)
	v := verify(t, j, "")
	require.True(t, v.OK, "%v", v.Mismatch)
	assert.EqualValues(t, 2, v.Unchained)
	assert.EqualValues(t, 1, v.Running)
	assert.Zero(t, v.Rows)

	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	require.NoError(t, j.Finish(ctx, entry(pos, 3, "bash")), "the row running before the migration finishes")
	calls(t, j, "r", 3)
	v = verify(t, j, "")
	require.True(t, v.OK, "%v", v.Mismatch)
	assert.EqualValues(t, 2, v.Unchained)
	assert.EqualValues(t, 4, v.Rows)
	assert.Equal(t, int64(3), idAt(t, db, "r", 1))
	rows, err := j.List(ctx, journal.Filter{RunID: "r"})
	require.NoError(t, err)
	assert.Len(t, rows, 6)

	exec1(t, db, `INSERT INTO tool_calls (run_id, node_id, iteration, attempt, seq, tool_name, input_json,
		output_json, started_at_ms, finished_at_ms, status, error_json, idempotency_key, side_effect, idempotent)
		VALUES ('r', 'n', 0, 1, 99, 'bash', '{}', '"ok"', 1, 2, 'success', 'null', 'k', 1, 0)`)
	v = verify(t, j, "")
	require.False(t, v.OK)
	assert.Equal(t, journal.CheckRowInserted, v.Mismatch.Check)
	assert.True(t, strings.Contains(v.Mismatch.Message, "outside the chain"), v.Mismatch.Message)
}

// The Python verifier docs/journal.md gives checks a journal as Verify does: ok on a signed
// journal with its key, and the changed row, the deleted last row and a wrong signature found.
func TestDocsPythonVerifier(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here:", err)
	}
	doc, err := os.ReadFile("../docs/journal.md")
	require.NoError(t, err)
	_, script, ok := strings.Cut(string(doc), "```python\n")
	require.True(t, ok, "docs/journal.md has a Python block")
	script, _, ok = strings.Cut(script, "```")
	require.True(t, ok)
	dir := t.TempDir()
	key, other := filepath.Join(dir, "key"), filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	require.NoError(t, os.WriteFile(other, []byte("fedcba9876543210fedcba9876543210\n"), 0o600))
	run := func(path string, args ...string) (string, error) {
		cmd := exec.Command(python, append([]string{"-", path}, args...)...)
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	build := func() string {
		path := filepath.Join(t.TempDir(), "j.db")
		j, err := journal.Open(context.Background(), path, journal.Options{Key: []byte("0123456789abcdef0123456789abcdef")})
		require.NoError(t, err)
		calls(t, j, "r", 6)
		calls(t, j, "s", 3)
		require.NoError(t, j.Close())
		return path
	}

	path := build()
	out, err := run(path, key)
	require.NoError(t, err, out)
	assert.Equal(t, "ok: 9 rows in 2 runs\n", out)
	out, err = run(path, other)
	assert.Error(t, err)
	assert.Regexp(t, `^run 'r', chain index 1, row id \d+: signature wrong\n$`, out)

	db := rawDB(t, path)
	exec1(t, db, `UPDATE tool_calls SET status = 'error' WHERE run_id = 'r' AND chain_index = 3`)
	out, err = run(path)
	assert.Error(t, err)
	assert.Contains(t, out, fmt.Sprintf("run 'r', chain index 3, row id %d: content changed", idAt(t, db, "r", 3)))

	path = build()
	exec1(t, rawDB(t, path), `DELETE FROM tool_calls WHERE run_id = 's' AND chain_index = 3`)
	out, err = run(path, key)
	assert.Error(t, err)
	assert.Contains(t, out, "run 's': the head is (3, ")
}

// A row begun through one journal and finished through another (another process's), and heads
// moved by the other in between, still form one chain: Finish reads what it does not know.
func TestFinishOfARowBegunElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	a, b := openAt(t, path, journal.Options{}), openAt(t, path, journal.Options{})
	pos := journal.Position{RunID: "r", NodeID: "n", Attempt: 1}
	for range 3 {
		s, err := a.Begin(ctx, entry(pos, 0, "bash"))
		require.NoError(t, err)
		require.NoError(t, b.Finish(ctx, entry(pos, s, "bash")))
		s, err = a.Begin(ctx, entry(pos, 0, "write"))
		require.NoError(t, err)
		require.NoError(t, a.Finish(ctx, entry(pos, s, "write")), "a's head is stale: b moved it")
	}
	s, err := a.Begin(ctx, entry(pos, 0, "read"))
	require.NoError(t, err)
	require.NoError(t, a.Finish(ctx, entry(pos, s, "read")))
	err = b.Finish(ctx, entry(pos, s, "read"))
	require.ErrorContains(t, err, "no running call at that seq")
	v := verify(t, a, "")
	require.True(t, v.OK, "%v", v.Mismatch)
	assert.EqualValues(t, 7, v.Rows)
}
