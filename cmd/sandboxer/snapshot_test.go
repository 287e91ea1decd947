package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotsThroughTheCLI: a long-lived local sandbox's workspace is snapshotted, branched
// three ways (docker too where the daemon is), each branch independent; a snapshot altered in
// the catalog fails the restore naming the path; retention and deletion.
func TestSnapshotsThroughTheCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	create := func(args ...string) []string {
		t.Helper()
		r := e.run("", nil, append([]string{"sandbox", "create"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var out struct {
			ID  string   `json:"id"`
			IDs []string `json:"ids"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		ids := out.IDs
		if out.ID != "" {
			ids = []string{out.ID}
		}
		for _, id := range ids {
			t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
		}
		return ids
	}
	sh := func(id, script string) string {
		t.Helper()
		r := e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", script)
		require.Equal(t, 0, r.code, r.stderr)
		return r.stdout
	}
	src := create()[0]
	sh(src, "mkdir -p pkg empty/dir && echo one > pkg/a.txt && printf '#!/bin/sh\\necho run\\n' > run.sh && chmod +x run.sh && ln -s pkg/a.txt link")

	r := e.run("", nil, "snapshot", "take", src, "base")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"files":2`)
	r = e.run("", nil, "snapshot", "take", src, "base")
	assert.NotEqual(t, 0, r.code, "a name is taken once")

	forks := create("--from-snapshot", "base", "--count", "3")
	require.Len(t, forks, 3)
	for i, id := range forks {
		assert.Equal(t, "one\nrun\none\n", sh(id, "cat pkg/a.txt; ./run.sh; cat link; test -d empty/dir"), "fork %d", i)
	}
	sh(forks[0], "echo changed > pkg/a.txt")
	assert.Equal(t, "one\n", sh(forks[1], "cat pkg/a.txt"), "each fork is independent")

	// Roll the first fork back in place.
	r = e.run("", nil, "snapshot", "restore", "base", forks[0])
	assert.NotEqual(t, 0, r.code, "a workspace that holds files needs --replace")
	r = e.run("", nil, "snapshot", "restore", "base", forks[0], "--replace")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "one\n", sh(forks[0], "cat pkg/a.txt"))

	t.Run("OnDocker", func(t *testing.T) {
		requireDocker(t)
		d := create("--adapter", "docker", "--from-snapshot", "base")
		assert.Equal(t, "one\nrun\none\n", sh(d[0], "cat pkg/a.txt; ./run.sh; cat link"))
	})

	// A blob altered in the catalog: the restore fails with the path named, never partly.
	packs, err := filepath.Glob(filepath.Join(e.state, "snapshots", "blobs", "*.pack"))
	require.NoError(t, err)
	require.NotEmpty(t, packs)
	for _, p := range packs {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		if i := strings.Index(string(b), "one\n"); i >= 0 {
			b[i] = 'X'
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}
	}
	dst := create()[0]
	r = e.run("", nil, "snapshot", "restore", "base", dst)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "pkg/a.txt")

	r = e.run("", nil, "snapshot", "take", src, "second")
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "snapshot", "ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"name":"base"`)
	r = e.run("", nil, "snapshot", "keep", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"deleted":["base"]`)
	r = e.run("", nil, "snapshot", "rm", "second")
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "snapshot", "ls", "--json")
	assert.Equal(t, "[]\n", r.stdout)
}
