package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counterScript counts in a shell variable, from a token drawn at its start, and writes
// "TOKEN COUNT" to the file count every 50 ms: its state is in its memory, the file only shows it.
const counterScript = `t=$(head -c6 /dev/urandom | od -An -tx1 | tr -d ' \n'); n=0; while :; do n=$((n+1)); echo "$t $n" > count.tmp; mv count.tmp count; sleep 0.05; done`

// TestCheckpointFromTheCLI (issue 38): `sandbox checkpoint ID DIR` of an oci sandbox under
// gVisor running a background counter, then `sandbox create --from-checkpoint DIR --count 2`:
// both new sandboxes' counters go on from the checkpoint's count with the same token (the
// process's memory), each on its own; the source goes on too. The local adapter refuses, naming
// the one that can; an existing DIR is a usage error.
func TestCheckpointFromTheCLI(t *testing.T) {
	t.Parallel()
	requireRuntime(t, "runsc")
	e := newEnv(t)
	e.timeout = 5 * time.Minute
	r := e.run("", nil, "sandbox", "create", "--adapter", "oci", "--runtime", "runsc")
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "tool", "bash", "--sandbox", id, "--input",
		`{"cmd":"sh","args":["-c",`+strconv.Quote(counterScript)+`],"opts":{"background":true}}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	count := func(id string) (string, int) {
		t.Helper()
		r := e.run("", nil, "exec", "--sandbox", id, "--", "cat", "count")
		require.Equal(t, 0, r.code, r.stderr)
		f := strings.Fields(r.stdout)
		require.Len(t, f, 2, r.stdout)
		n, err := strconv.Atoi(f[1])
		require.NoError(t, err)
		return f[0], n
	}
	require.Eventually(t, func() bool {
		r := e.run("", nil, "exec", "--sandbox", id, "--", "cat", "count")
		return r.code == 0
	}, time.Minute, 100*time.Millisecond)

	// DIR relative to the caller's directory, not the resident server's (that is /).
	parent := t.TempDir()
	dir := filepath.Join(parent, "ck")
	r = e.runIn(parent, nil, "sandbox", "checkpoint", id, "ck")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"checkpoint":"`+dir+`"`)
	saved, err := os.ReadFile(filepath.Join(dir, "workspace", "count"))
	require.NoError(t, err)
	f := strings.Fields(string(saved))
	require.Len(t, f, 2)
	token := f[0]
	atCheckpoint, err := strconv.Atoi(f[1])
	require.NoError(t, err)

	r = e.runIn(parent, nil, "sandbox", "create", "--from-checkpoint", "ck", "--count", "2")
	require.Equal(t, 0, r.code, r.stderr)
	var made struct{ IDs []string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &made), r.stdout)
	require.Len(t, made.IDs, 2)
	for _, nid := range made.IDs {
		t.Cleanup(func() { e.run("", nil, "sandbox", "rm", nid) })
	}
	for _, nid := range append(made.IDs, id) {
		tok, n := count(nid)
		assert.Equal(t, token, tok, "%s: the counter's memory", nid)
		assert.GreaterOrEqual(t, n, atCheckpoint, "%s: the count goes on from the checkpoint's, not from 1", nid)
		require.Eventually(t, func() bool { _, m := count(nid); return m > n }, time.Minute, 100*time.Millisecond, "%s: the counter goes on", nid)
	}
	r = e.run("", nil, "sandbox", "checkpoint", id, dir)
	assert.Equal(t, 2, r.code, "an existing directory: %s", r.stderr)
	assert.Contains(t, r.stderr, "exists")

	r = e.run("", nil, "sandbox", "create")
	require.Equal(t, 0, r.code, r.stderr)
	local := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", local) })
	r = e.run("", nil, "sandbox", "checkpoint", local, filepath.Join(t.TempDir(), "l"))
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "oci with --runtime runsc")
}
