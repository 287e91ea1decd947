package cli

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/journal"
)

// `sandboxer log --verify` over a journal that tool calls signed with --journal-key-file: ok,
// with the rows and heads; without the key, with another key and after an UPDATE, VERIFY_FAILED
// (exit 1) naming the row and the check.
func TestLogVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state, path := filepath.Join(dir, "state"), filepath.Join(dir, "journal.db")
	key, other := filepath.Join(dir, "key"), filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(key, []byte("6f1c0e2d9a8b7c6d5e4f3a2b1c0d9e8f\n"), 0o600))
	require.NoError(t, os.WriteFile(other, []byte("another key of thirty-two bytes!"), 0o600))
	common := []string{"--journal", path, "--state-dir", state}
	for i, run := range []string{"r1", "r1", "r1", "r2", "r2"} {
		code, stdout, stderr := runMain(t, "", append([]string{"tool", "write", "--adapter", "memory",
			"--run-id", run, "--journal-key-file", key, "--input", `{"path":"f` + string(rune('a'+i)) + `","content":"x"}`}, common...)...)
		require.Equal(t, 0, code, "%s%s", stdout, stderr)
	}

	logCmd := func(args ...string) (int, string, string) {
		return runMain(t, "", append(append([]string{"log"}, common...), args...)...)
	}
	code, stdout, stderr := logCmd("--verify", "--journal-key-file", key)
	require.Equal(t, 0, code, stderr)
	keyBytes, err := os.ReadFile(key)
	require.NoError(t, err)
	id := journal.KeyID(keyBytes[:len(keyBytes)-1]) // white space trimmed
	assert.Contains(t, stdout, "ok: 5 rows in 2 runs, 5 signatures (key id "+id+")")
	assert.Regexp(t, `(?m)^r1 +3 +[0-9a-f]{64}$`, stdout)

	code, stdout, _ = logCmd("--verify", "--json", "--run-id", "r2", "--journal-key-file", key)
	require.Equal(t, 0, code)
	var v journal.Verification
	require.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
	assert.True(t, v.OK)
	assert.EqualValues(t, 2, v.Rows)
	assert.EqualValues(t, 2, v.Signed)
	require.Len(t, v.Heads, 1)
	assert.Equal(t, "r2", v.Heads[0].RunID)

	failed := func(check journal.Check, args ...string) journal.Mismatch {
		t.Helper()
		code, stdout, stderr := logCmd(append([]string{"--verify", "--json"}, args...)...)
		require.Equal(t, 1, code, "%s%s", stdout, stderr)
		assert.Contains(t, stderr, string(errs.VerifyFailed))
		assert.Contains(t, stderr, string(check))
		var v journal.Verification
		require.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
		assert.False(t, v.OK)
		require.NotNil(t, v.Mismatch)
		assert.Equal(t, check, v.Mismatch.Check, v.Mismatch.Message)
		return *v.Mismatch
	}
	failed(journal.CheckKeyMissing)
	failed(journal.CheckSignatureWrong, "--journal-key-file", other)

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var rowID int64
	require.NoError(t, db.QueryRow(`SELECT id FROM tool_calls WHERE run_id = 'r1' AND chain_index = 2`).Scan(&rowID))
	_, err = db.Exec(`UPDATE tool_calls SET output_json = '{"bytes":0}' WHERE id = ?`, rowID)
	require.NoError(t, err)
	m := failed(journal.CheckContentChanged, "--journal-key-file", key)
	assert.Equal(t, journal.Mismatch{RunID: "r1", Index: 2, ID: rowID, Check: journal.CheckContentChanged, Message: m.Message}, m)
	code, stdout, stderr = logCmd("--verify", "--journal-key-file", key)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "VERIFY_FAILED")
	assert.Contains(t, stderr, `run "r1", chain index 2`)

	code, _, stderr = logCmd("--verify", "--node-id", "n")
	assert.Equal(t, 2, code, stderr)

	for _, f := range []string{path, path + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			assert.NotContains(t, string(b), string(keyBytes[:len(keyBytes)-1]), "%s holds the key", f)
		}
	}
}

// The journal key file comes from --journal-key-file, SANDBOXER_JOURNAL_KEY_FILE or the config
// file's journal-key-file (a relative path is the call's directory's); a short or missing key is a usage
// error; no local command may read the file or have it in its workspace. The journal being off,
// no key is read.
func TestJournalKeyFileSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte("  0123456789abcdef0123\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "short"), []byte("0123456789\n"), 0o600))
	cfg := filepath.Join(dir, "sandboxer.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("journal-key-file: "+key+"\n"), 0o644))
	empty := filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	call := filepath.Join(dir, "project")
	require.NoError(t, os.Mkdir(call, 0o755))
	load := func(env map[string]string, args ...string) (Settings, error) {
		t.Helper()
		c := newMCPCmd(Streams{})
		require.NoError(t, c.Flags().Parse(append([]string{"--state-dir", filepath.Join(dir, "state")}, args...)))
		all := map[string]string{"SANDBOXER_CONFIG": empty}
		for k, v := range env {
			all[k] = v
		}
		return loadIn(invocation{env: all, dir: call}, c.Flags())
	}
	want := []byte("0123456789abcdef0123")

	s, err := load(nil, "--journal-key-file", "../key")
	require.NoError(t, err)
	assert.Equal(t, want, s.journalOptions().Key)
	assert.Equal(t, key, s.journalKeyFile)
	assert.Contains(t, denyRead(s), key)
	assert.True(t, slices.Contains(ownFiles(s), key))

	s, err = load(map[string]string{"SANDBOXER_JOURNAL_KEY_FILE": key})
	require.NoError(t, err)
	assert.Equal(t, want, s.journalKey)

	s, err = load(map[string]string{"SANDBOXER_CONFIG": cfg})
	require.NoError(t, err)
	assert.Equal(t, want, s.journalKey)

	_, err = load(nil, "--journal-key-file", filepath.Join(dir, "short"))
	assert.ErrorContains(t, err, "at least 16")
	_, err = load(nil, "--journal-key-file", filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "--journal-key-file")
	s, err = load(nil, "--journal-key-file", filepath.Join(dir, "missing"), "--journal", "off")
	require.NoError(t, err)
	assert.Nil(t, s.journalKey)
	assert.Nil(t, s.journalOptions().Key)
}
