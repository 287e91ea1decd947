package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/local"
)

type wireReply struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
	Error  *struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
	Warning string `json:"warning"`
}

func decodeReply(t testing.TB, r result) wireReply {
	t.Helper()
	var w wireReply
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	require.NoError(t, dec.Decode(&w), "stdout: %q stderr: %q", r.stdout, r.stderr)
	require.False(t, dec.More(), "exactly one JSON object: %q", r.stdout)
	return w
}

func code(w wireReply) string {
	if w.Error == nil {
		return ""
	}
	return w.Error.Code
}

// Config precedence: defaults < the user's config file (or --config) < SANDBOXER_* < flags. The
// probe is max-output-bytes: writing 10 bytes fails with TOOL_CONTENT_TOO_LARGE when it is below 10.
func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	write := []string{"tool", "write", "--input", `{"path":"p.txt","content":"0123456789"}`}
	tooLarge := func(r result) bool { return code(decodeReply(t, r)) == "TOOL_CONTENT_TOO_LARGE" }

	r := e.run("", nil, write...)
	require.Equal(t, 0, r.code, "default 200000 allows it: %s", r.stderr)

	e.userConfig("max-output-bytes: 5\n")
	r = e.run("", nil, write...)
	assert.Equal(t, 1, r.code)
	assert.True(t, tooLarge(r), "the config file beats the default")

	r = e.run("", []string{"SANDBOXER_MAX_OUTPUT_BYTES=100"}, write...)
	assert.Equal(t, 0, r.code, "the environment beats the config file: %s", r.stdout)

	r = e.run("", []string{"SANDBOXER_MAX_OUTPUT_BYTES=100"}, append(write, "--max-output-bytes", "5")...)
	assert.True(t, tooLarge(r), "a flag beats the environment")

	r = e.run("", nil, append(write, "--max-output-bytes", "100")...)
	assert.Equal(t, 0, r.code, "a flag beats the config file")

	// --config names another file; it replaces the user's.
	other := filepath.Join(e.base, "other.yaml")
	require.NoError(t, os.WriteFile(other, []byte("max-output-bytes: 100\nrun-id: from-config\n"), 0o644))
	r = e.run("", nil, append(write, "--config", other)...)
	assert.Equal(t, 0, r.code, "--config replaces the user's config file: %s", r.stdout)

	// Other types through every layer: a duration from the environment, a bool from the file.
	r = e.run("", []string{"SANDBOXER_TIMEOUT=100ms"}, "exec", "--", "sleep", "5")
	assert.Equal(t, 124, r.code, "SANDBOXER_TIMEOUT applies to exec")
	r = e.run("", []string{"SANDBOXER_TIMEOUT=soon"}, "exec", "--", "true")
	assert.Equal(t, 2, r.code, "a malformed environment value is a usage error, not zero")
	e.userConfig("require-isolation: false\nallow-network: false\n")
	r = e.run("", nil, "exec", "--", "sh", "-c", "exit 0; curl https://example.com")
	assert.Equal(t, 125, r.code, "allow-network: false from the file keeps the policy on: %s", r.stderr)

	// Hostile config files are usage errors.
	for name, content := range map[string]string{
		"unknown key":  "max-output-byte: 5\n",
		"not yaml":     "{{{{\n",
		"wrong type":   "max-output-bytes: lots\n",
		"bad adapter":  "adapter: nope\n",
		"nested block": "docker:\n  memory: 1\n",
	} {
		e.userConfig(content)
		r = e.run("", nil, write...)
		assert.Equal(t, 2, r.code, "%s: %s", name, r.stderr)
		assert.Empty(t, r.stdout, name)
	}
	r = e.run("", nil, append(write, "--config", filepath.Join(e.base, "missing.yaml"))...)
	assert.Equal(t, 2, r.code, "a named config file that is missing is a usage error")
}

// A config file can never be planted by a sandbox: the current directory (the default workspace)
// is not searched, a file inside the workspace is refused even when named, and no file may lower
// isolation or open the network without a flag or the environment (issue 23, finding 1).
func TestConfigFileCannotBePlantedOrLowerIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// What a command of the previous call wrote into the workspace.
	planted := "isolation: \"off\"\nallow-network: true\nmax-output-bytes: 5\n"
	require.NoError(t, os.WriteFile(filepath.Join(e.work, "sandboxer.yaml"), []byte(planted), 0o644))
	write := []string{"tool", "write", "--input", `{"path":"p.txt","content":"0123456789"}`}
	r := e.run("", nil, write...)
	require.Equal(t, 0, r.code, "./sandboxer.yaml in the workspace is not read: %s %s", r.stdout, r.stderr)
	r = e.run("", nil, "exec", "--", "sh", "-c", "exit 0; curl https://example.com")
	assert.Equal(t, 125, r.code, "the network stays off: %s", r.stderr)

	r = e.run("", nil, append(write, "--config", "sandboxer.yaml")...)
	assert.Equal(t, 2, r.code, "a named config file inside the workspace is refused")
	assert.Contains(t, r.stderr, "where a sandbox can write it")
	r = e.run("", nil, append(write, "--config", filepath.Join(e.work, "sandboxer.yaml"), "--root", e.base)...)
	assert.Equal(t, 2, r.code, "also below the workspace")
	r = e.run("", []string{"SANDBOXER_CONFIG=" + filepath.Join(e.work, "sandboxer.yaml")}, write...)
	assert.Equal(t, 2, r.code, "also through SANDBOXER_CONFIG")

	// Outside the workspace, a file may raise isolation but not lower it on its own.
	e.userConfig("isolation: \"off\"\n")
	r = e.run("", nil, write...)
	assert.Equal(t, 2, r.code, "isolation: off from a file alone is refused: %s", r.stdout)
	assert.Contains(t, r.stderr, "lowers isolation")
	r = e.run("", []string{"SANDBOXER_ISOLATION=off"}, write...)
	assert.Equal(t, 0, r.code, "the environment may: %s", r.stderr)
	r = e.run("", nil, append(write, "--isolation", "off")...)
	assert.Equal(t, 0, r.code, "a flag may: %s", r.stderr)
	e.userConfig("allow-network: true\n")
	r = e.run("", nil, write...)
	assert.Equal(t, 2, r.code, "allow-network: true from a file alone is refused")
	r = e.run("", []string{"SANDBOXER_ALLOW_NETWORK=true"}, "exec", "--", "sh", "-c", "exit 0; curl https://example.com")
	assert.Equal(t, 0, r.code, "the environment may open it: %s", r.stderr)

	// doctor says that the workspace's file is not read.
	e.userConfig("max-output-bytes: 100\n")
	r = e.run("", nil, "doctor", "--json")
	var rep struct {
		Checks []struct {
			Name   string `json:"name"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.NotEmpty(t, rep.Checks)
	assert.Equal(t, "config", rep.Checks[0].Name)
	assert.False(t, rep.Checks[0].OK)
	assert.Contains(t, rep.Checks[0].Detail, "NOT read: "+filepath.Join(e.work, "sandboxer.yaml"))
}

type logRow struct {
	RunID          string `json:"runId"`
	NodeID         string `json:"nodeId"`
	Iteration      int    `json:"iteration"`
	Attempt        int    `json:"attempt"`
	Seq            int    `json:"seq"`
	ToolName       string `json:"toolName"`
	InputJSON      string `json:"inputJson"`
	OutputJSON     string `json:"outputJson"`
	Status         string `json:"status"`
	ErrorJSON      string `json:"errorJson"`
	IdempotencyKey string `json:"idempotencyKey"`
	SideEffect     bool   `json:"sideEffect"`
	Idempotent     bool   `json:"idempotent"`
	StartedAtMs    int64  `json:"startedAtMs"`
	FinishedAtMs   int64  `json:"finishedAtMs"`
}

func (e *env) log(t testing.TB, args ...string) []logRow {
	t.Helper()
	r := e.run("", nil, append([]string{"log", "--json"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var rows []logRow
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for dec.More() {
		var row logRow
		require.NoError(t, dec.Decode(&row))
		rows = append(rows, row)
	}
	return rows
}

// Journal rows and seq continue across separate processes; a retry reuses the keys of the same
// positions and gets the warning; concurrent processes never share a seq.
func TestJournalAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pos := []string{"--run-id", "run", "--node-id", "task"}
	call := func(attempt int, tool, input string) wireReply {
		r := e.run("", nil, append([]string{"tool", tool, "--input", input, "--attempt", fmt.Sprint(attempt)}, pos...)...)
		return decodeReply(t, r)
	}
	secret := "do-not-store-me"
	require.True(t, call(1, "write", `{"path":"a","content":"`+secret+`"}`).OK)
	require.True(t, call(1, "bash", `{"cmd":"true"}`).OK)
	require.False(t, call(1, "edit", `{"path":"a","patch":"@@ -1 +1 @@\n-nope\n+x\n"}`).OK)
	require.True(t, call(1, "read", `{"path":"a"}`).OK)

	rows := e.log(t, "--run-id", "run")
	require.Len(t, rows, 4)
	for i, r := range rows {
		assert.Equal(t, i+1, r.Seq, "seq continues across processes")
		assert.Equal(t, 1, r.Attempt)
		assert.NotZero(t, r.StartedAtMs)
		assert.GreaterOrEqual(t, r.FinishedAtMs, r.StartedAtMs)
	}
	assert.Equal(t, "write", rows[0].ToolName)
	assert.NotContains(t, rows[0].InputJSON, secret, "write content is never stored")
	assert.Contains(t, rows[0].InputJSON, `"sha256":"`)
	assert.Contains(t, rows[0].InputJSON, `"bytes":15`)
	assert.Equal(t, "error", rows[2].Status)
	assert.Contains(t, rows[2].ErrorJSON, "TOOL_PATCH_FAILED")
	assert.Equal(t, `"`+secret+`"`, rows[3].OutputJSON)
	assert.True(t, rows[0].SideEffect && !rows[0].Idempotent)
	assert.True(t, !rows[3].SideEffect && rows[3].Idempotent)
	keys := map[string]bool{}
	for _, r := range rows {
		keys[r.IdempotencyKey] = true
	}
	assert.Len(t, keys, 4, "different calls of one iteration have different keys")

	// Attempt 2: the warning lists write, bash and the failed edit, and the keys repeat.
	w := call(2, "write", `{"path":"a","content":"again"}`)
	require.True(t, w.OK)
	assert.True(t, strings.HasPrefix(w.Warning, "[sandboxer:tool-resume-warning]"), w.Warning)
	for _, want := range []string{"- write (attempt 1, seq 1, success)", "- bash (attempt 1, seq 2, success)", "- edit (attempt 1, seq 3, error)"} {
		assert.Contains(t, w.Warning, want)
	}
	assert.NotContains(t, w.Warning, "- read")
	assert.Contains(t, w.Warning, "idempotency key")
	rows = e.log(t, "--run-id", "run")
	require.Len(t, rows, 5)
	assert.Equal(t, 2, rows[4].Attempt)
	assert.Equal(t, 1, rows[4].Seq, "each attempt counts from 1")
	assert.Equal(t, rows[0].IdempotencyKey, rows[4].IdempotencyKey, "a retry of the same position reuses its key")

	// Concurrent processes on one position: all seqs distinct.
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r := e.run("", nil, "tool", "read", "--input", `{"path":"a"}`, "--run-id", "conc", "--node-id", "x")
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr, "no journal warning under contention")
		})
	}
	wg.Wait()
	rows = e.log(t, "--run-id", "conc")
	require.Len(t, rows, n)
	seen := map[int]bool{}
	for _, r := range rows {
		assert.False(t, seen[r.Seq], "seq %d given twice", r.Seq)
		seen[r.Seq] = true
	}
	for i := 1; i <= n; i++ {
		assert.True(t, seen[i], "seq %d missing", i)
	}
}

// A journal that cannot be written never costs the tool's result.
func TestJournalFailureKeepsResult(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "content")
	// A directory where the journal file should be: SQLite cannot open it.
	bad := filepath.Join(e.base, "journal-is-a-dir")
	require.NoError(t, os.MkdirAll(bad, 0o755))
	r := e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`, "--journal", bad)
	assert.Equal(t, 0, r.code)
	w := decodeReply(t, r)
	assert.True(t, w.OK)
	assert.Equal(t, "content", w.Output)
	assert.Contains(t, r.stderr, "warning", "the journal failure is reported on stderr")

	r = e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`, "--journal", "off")
	assert.Equal(t, 0, r.code)
	assert.Empty(t, r.stderr)
	_, err := os.Stat(filepath.Join(e.state, "journal.db"))
	assert.True(t, os.IsNotExist(err), "--journal off writes no journal")
}

// --store hydrates the workspace from a directory store and flushes tool changes back to it.
func TestStoreHydrateAndFlush(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(e.base, "store.db")
	r := e.run("", nil, "tool", "write", "--store", store, "--input", `{"path":"docs/a.md","content":"from the agent"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Empty(t, r.stderr)

	// A second, empty workspace hydrated from the same store sees the file.
	e2 := newEnv(t)
	r = e2.run("", nil, "tool", "read", "--store", store, "--input", `{"path":"docs/a.md"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "from the agent", decodeReply(t, r).Output)

	// bash changes flow back too, deletions included.
	r = e2.run("", nil, "tool", "bash", "--store", store, "--input", `{"cmd":"sh","args":["-c","rm docs/a.md; echo new > b.txt"]}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	e3 := newEnv(t)
	r = e3.run("", nil, "exec", "--store", store, "--", "sh", "-c", "ls -R")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "b.txt")
	assert.NotContains(t, r.stdout, "a.md")
}

// The report of issue 19 through the CLI: chmod +x and ln -s in one workspace, a second hydrated
// from the same store runs the script and keeps the link; a link out is never stored; a file over
// --sync-max-file-bytes is skipped, not stored.
func TestStoreKeepsExecutableBitAndLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(e.base, "store.db")
	r := e.run("", nil, "exec", "--store", store, "--sync-max-file-bytes", "1KiB", "--", "sh", "-c",
		"printf '#!/bin/sh\necho ran\n' > run.sh && chmod +x run.sh && ln -s run.sh link && ln -s /etc/passwd out && head -c 2048 /dev/zero > big")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)

	e2 := newEnv(t)
	r = e2.run("", nil, "exec", "--store", store, "--", "sh", "-c", "./run.sh && readlink link && ./link && ls")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "ran\nrun.sh\nran\nlink\nrun.sh\n", r.stdout, "out (a link out) and big (over the limit) were not stored")
}

// Issue 33's item 10 through the CLI: a command makes two files whose names differ in one byte
// that is not UTF-8; a directory store keeps both, and later --store calls work and see both.
func TestDirStoreNamesAreBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := "dir:" + filepath.Join(e.base, "store")
	r := e.run("", nil, "exec", "--store", store, "--", "sh", "-c", `printf one > "$(printf 'a\377')" && printf two > "$(printf 'a\376')"`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Empty(t, r.stderr)
	r = e.run("", nil, "exec", "--store", store, "--", "sh", "-c", `printf more >> "$(printf 'a\377')"`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Empty(t, r.stderr, "no conflict: each name kept its own base")
	e2 := newEnv(t)
	r = e2.run("", nil, "exec", "--store", store, "--", "sh", "-c", `cat "$(printf 'a\377')" "$(printf 'a\376')"`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "onemoretwo", r.stdout)
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	shareGoCache(e) // doctor probes each oci runtime with a sandbox
	r := e.run("", nil, "doctor", "--json")
	var rep struct {
		Checks []struct {
			Name   string `json:"name"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"checks"`
		Adapters []struct {
			Name         string          `json:"name"`
			Available    bool            `json:"available"`
			Capabilities json.RawMessage `json:"capabilities"`
			NotProbed    string          `json:"notProbed"`
		} `json:"adapters"`
		OCIRuntimes []struct {
			Name     string `json:"name"`
			Works    bool   `json:"works"`
			Error    string `json:"error"`
			Platform *struct {
				Platform string `json:"platform"`
				Reason   string `json:"reason"`
			} `json:"platform"`
		} `json:"ociRuntimes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout+r.stderr)
	// gVisor's platform: which one runs, and why.
	_, kvmErr := os.Stat("/dev/kvm")
	for _, rt := range rep.OCIRuntimes {
		if rt.Name != "runsc" || !rt.Works {
			continue
		}
		require.NotNil(t, rt.Platform, "doctor says runsc's platform")
		assert.NotEmpty(t, rt.Platform.Platform)
		if kvmErr != nil {
			assert.Equal(t, "kvm: /dev/kvm absent", rt.Platform.Reason)
			forced := e.run("", nil, "doctor", "--json", "--runsc-platform", "kvm")
			assert.Contains(t, forced.stdout, "runsc platform kvm was asked for", "a forced platform that cannot run says why")
		}
	}
	var names []string
	allOK := true
	ok := map[string]bool{}
	for _, c := range rep.Checks {
		names = append(names, c.Name)
		assert.NotEmpty(t, c.Detail, c.Name)
		allOK = allOK && c.OK
		ok[c.Name] = c.OK
	}
	assert.Equal(t, []string{"config", "workspace", "platform", "ripgrep", "docker daemon", "docker image", "network namespace", "landlock"}, names)
	assert.True(t, ok["workspace"], "the test's workspace is a project directory")
	if allOK {
		assert.Equal(t, 0, r.code)
	} else {
		assert.Equal(t, 1, r.code, "a failed probe is exit status 1")
	}
	_, rgErr := exec.LookPath("rg")
	assert.Equal(t, rgErr == nil, ok["ripgrep"], "the rg probe tells the truth")
	byName := map[string]bool{}
	for _, a := range rep.Adapters {
		byName[a.Name] = a.Available
		switch a.Name {
		case "local", "memory": // each row probes its own adapter
			assert.Contains(t, string(a.Capabilities), `"adapter":"`+a.Name+`"`)
		case "remote":
			assert.Contains(t, a.NotProbed, "not configured", "no --url: not probed, not a failure")
		}
	}
	assert.True(t, byName["local"])
	assert.True(t, byName["remote"])
	assert.Contains(t, byName, "docker")
	assert.Contains(t, byName, "memory")

	text := e.run("", nil, "doctor")
	assert.Equal(t, r.code, text.code)
	assert.Contains(t, text.stdout, "adapter local:")
	if strings.Contains(text.stdout, "oci runtime runsc: runsc version") && !strings.Contains(text.stdout, "cannot run a sandbox") {
		assert.Contains(t, text.stdout, "  gVisor platform: ")
	}

	// In / the workspace check fails, and so does doctor.
	slash := e.runIn("/", nil, "doctor", "--json")
	assert.Equal(t, 1, slash.code)
	assert.Contains(t, slash.stdout, `"name":"workspace","ok":false`)
}

func TestIsolationSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bash := []string{"tool", "bash", "--input", `{"cmd":"true"}`}
	isolation := func(r result) map[string]any {
		t.Helper()
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		iso, _ := out["isolation"].(map[string]any)
		return iso
	}

	r := e.run("", nil, append(bash, "--isolation", "off")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, false, isolation(r)["network"], "isolation off enforces nothing")

	r = e.run("", nil, append(bash, "--isolation", "sometimes")...)
	assert.Equal(t, 2, r.code, "an unknown isolation mode is a usage error")
	r = e.run("", nil, append(bash, "--isolation", "off", "--require-isolation")...)
	assert.Equal(t, 2, r.code, "requiring isolation while turning it off is a usage error")

	// The config file accepts SPEC.md's spelling, require_isolation.
	e.userConfig("require_isolation: true\n")
	r = e.run("", nil, append(bash, "--isolation", "off")...)
	assert.Equal(t, 2, r.code, "require_isolation from the file is read: %s", r.stdout)

	if rep := local.Probe(); rep.Network && rep.Filesystem && rep.ProcessTree {
		r = e.run("", nil, bash...)
		require.Equal(t, 0, r.code, r.stdout)
		iso := isolation(r)
		assert.Equal(t, true, iso["network"])
		assert.Equal(t, true, iso["filesystem"])
		assert.Equal(t, true, iso["processTree"])
	} else {
		t.Logf("kernel isolation incomplete here (%+v): the enforced case is covered by adapter/local", rep)
	}
}

// --memory, --pids and --cpus reach the local adapter; a kill by the memory limit is reported.
func TestResourceLimitFlags(t *testing.T) {
	t.Parallel()
	if !local.Probe().Available(local.LayerLimits) || !local.Probe().Available(local.LayerUserNS) {
		t.Skip("resource limits are not available here")
	}
	e := newEnv(t)
	alloc := []string{"tool", "bash", "--input", `{"cmd":"python3","args":["-c","b = bytearray(256 << 20)"]}`}
	r := e.run("", nil, append(alloc, "--memory", "64MiB")...)
	w := decodeReply(t, r)
	require.Equal(t, "TOOL_COMMAND_FAILED", code(w), r.stdout)
	assert.EqualValues(t, 137, w.Error.Details["exitCode"])
	assert.Equal(t, "memory", w.Error.Details["limit"])

	r = e.run("", nil, append(alloc, "--memory", "0", "--pids", "0")...)
	w = decodeReply(t, r)
	require.True(t, w.OK, r.stdout)
	r = e.run("", nil, append(alloc, "--memory", "lots")...)
	assert.Equal(t, 2, r.code, "a malformed size is a usage error")
	r = e.run("", nil, append(alloc, "--cpus", "-1")...)
	assert.Equal(t, 2, r.code)
}

// --ro-bind and --rw-bind show commands more of the host, never a daemon's socket (issue 18).
func TestBindFlags(t *testing.T) {
	t.Parallel()
	if !local.Probe().Available(local.LayerFSView) {
		t.Skip("no file system view here")
	}
	e := newEnv(t)
	data := filepath.Join(e.base, "data")
	out := filepath.Join(e.base, "out")
	require.NoError(t, os.MkdirAll(data, 0o755))
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "in.txt"), []byte("input"), 0o644))
	script := fmt.Sprintf("cat %s/in.txt; echo x > %s/w || echo refused; echo y > %s/w && echo wrote", data, data, out)
	bash := []string{"tool", "bash", "--input", fmt.Sprintf(`{"cmd":"sh","args":["-c",%q]}`, script)}
	r := e.run("", nil, append(bash, "--ro-bind", data, "--rw-bind", out)...)
	w := decodeReply(t, r)
	require.True(t, w.OK, r.stdout)
	assert.Contains(t, w.Output, "input")
	assert.Contains(t, w.Output, "refused")
	assert.Contains(t, w.Output, "wrote")
	assert.NoFileExists(t, filepath.Join(data, "w"))
	assert.FileExists(t, filepath.Join(out, "w"))

	// A directory holding a unix socket is refused.
	sockDir := filepath.Join(e.base, "run")
	require.NoError(t, os.MkdirAll(sockDir, 0o755))
	l, err := net.Listen("unix", filepath.Join(sockDir, "daemon.sock"))
	require.NoError(t, err)
	defer l.Close()
	for _, flag := range []string{"--ro-bind", "--rw-bind"} {
		r = e.run("", nil, append(bash, flag, sockDir)...)
		w = decodeReply(t, r)
		assert.Equal(t, "INVALID_INPUT", code(w), "%s: %s", flag, r.stdout)
		assert.Contains(t, w.Error.Message, "daemon.sock")
	}
}
