package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverDir is the directory of the env's resident servers (SANDBOXER_SERVER_DIR).
func (e *env) serverDir() string {
	for _, kv := range e.vars {
		if v, ok := strings.CutPrefix(kv, "SANDBOXER_SERVER_DIR="); ok {
			return v
		}
	}
	e.t.Fatal("no SANDBOXER_SERVER_DIR")
	return ""
}

// servers are the pids of the env's running servers.
func (e *env) servers() []int { return serverPids(e.serverDir()) }

// serverLog is what the env's servers wrote.
func (e *env) serverLog() string {
	logs, _ := filepath.Glob(filepath.Join(e.serverDir(), "*.log"))
	var b strings.Builder
	for _, l := range logs {
		c, _ := os.ReadFile(l)
		b.Write(c)
	}
	return b.String()
}

func TestServerOnePerEnvironment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "abc")
	for range 3 {
		r := e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, `{"ok":true,"output":"abc"}`+"\n", r.stdout)
	}
	require.Len(t, e.servers(), 1, "the calls share one server")
	// SANDBOXER_* variables travel with the call; another variable is another environment.
	r := e.run("", []string{"SANDBOXER_JOURNAL=off"}, "tool", "read", "--input", `{"path":"a.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, e.servers(), 1)
	// A variable the engine never reads (an id a caller sets per call) is the same environment;
	// one it reads (TZ) is another.
	r = e.run("", []string{"TOOL_CALL_ID=1"}, "tool", "read", "--input", `{"path":"a.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, e.servers(), 1)
	r = e.run("", []string{"TZ=UTC"}, "tool", "read", "--input", `{"path":"a.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, e.servers(), 2)
	// Environments that keep changing start at most MaxServers (8) servers; the calls beyond run
	// in processes of their own.
	for i := range 10 {
		r = e.run("", []string{"TZ=UTC+" + strconv.Itoa(i)}, "tool", "read", "--input", `{"path":"a.txt"}`)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, `{"ok":true,"output":"abc"}`+"\n", r.stdout)
	}
	assert.Len(t, e.servers(), 8)
	// Commands that are not one-shot calls never start one.
	direct := newEnv(t)
	require.Equal(t, 0, direct.run("", nil, "doctor").code)
	assert.Empty(t, direct.servers())
}

func TestServerPerCallSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("sub/b.txt", "in sub")
	// The working directory, relative paths and SANDBOXER_* variables are the caller's, per call.
	r := e.run("", []string{"SANDBOXER_ROOT=sub", "SANDBOXER_JOURNAL=../j.db"}, "tool", "read", "--input", `{"path":"b.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "in sub")
	assert.FileExists(t, filepath.Join(e.base, "j.db"), "relative to the call's directory, outside the workspace (a journal inside it is refused)")
	r = e.run("", nil, "tool", "read", "--root", "sub", "--input", `{"path":"b.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "tool", "read", "--input", `{"path":"b.txt"}`)
	assert.Equal(t, 1, r.code, "the next call's root is the working directory again")
	assert.Contains(t, r.stdout, "NOT_FOUND")
	// A journal written by the server is read by a process of its own.
	r = e.run("", []string{"SANDBOXER_SERVER=off"}, "log", "--json", "--journal", "../j.db")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"toolName":"read"`)
	// A removed journal is made again, not written through the handle the server kept.
	require.NoError(t, os.Remove(filepath.Join(e.base, "j.db")))
	os.Remove(filepath.Join(e.base, "j.db-wal"))
	os.Remove(filepath.Join(e.base, "j.db-shm"))
	r = e.run("", []string{"SANDBOXER_JOURNAL=../j.db"}, "tool", "read", "--input", `{"path":"sub/b.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", []string{"SANDBOXER_SERVER=off"}, "log", "--json", "--journal", "../j.db")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout, `"toolName":"read"`), r.stdout)
	// Soon after the last call the file alone holds every row (the server checkpoints it).
	copied := filepath.Join(e.base, "copy.db")
	assert.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(e.base, "j.db"))
		if err != nil || os.WriteFile(copied, b, 0o644) != nil {
			return false
		}
		r := e.run("", []string{"SANDBOXER_SERVER=off"}, "log", "--json", "--journal", copied)
		return strings.Count(r.stdout, `"toolName":"read"`) == 1
	}, 20*time.Second, 200*time.Millisecond)
}

// A warm sandbox serves the next call as new: what the last call left in its temporary
// directories is gone, and the workspace is never touched.
func TestServerRecyclesSandboxesAsNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bash := func(script string) string {
		r := e.run("", nil, "tool", "bash", "--input", `{"cmd":"sh","args":["-c",`+strconv.Quote(script)+`]}`)
		require.Equal(t, 0, r.code, r.stderr)
		var reply struct{ Output string }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &reply), r.stdout)
		return reply.Output
	}
	tmpdir := func() string { return bash("echo $TMPDIR") }
	// Without a file system view /tmp would be the host's: look before writing there.
	if r := e.run("", nil, "tool", "bash", "--input", `{"cmd":"true"}`); !strings.Contains(r.stdout, `"fs-view"`) {
		t.Skip("no file system view here")
	}
	first := tmpdir()
	assert.Equal(t, first, tmpdir(), "the sandbox is used again")
	bash(`for d in /tmp /var/tmp /dev/shm "$TMPDIR"; do echo x > "$d/left"; mkdir "$d/emptydir"; done`)
	assert.NotContains(t, bash(`ls -a /tmp /var/tmp /dev/shm "$TMPDIR"`), "left", "the next call does not see the last one's files")
	assert.NotContains(t, bash(`ls -a /tmp /var/tmp /dev/shm "$TMPDIR"`), "emptydir", "nor its directories")
	// The workspace is never touched by the reset.
	e.write("keep.txt", "kept")
	tmpdir()
	tmpdir()
	b, err := os.ReadFile(filepath.Join(e.work, "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "kept", string(b))
}

// An interrupted front cancels its call in the server: the command is killed, and the front
// ends as a process of its own would have, with the cancelled call's result and status.
func TestServerCancelsWhenTheFrontIsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "abc")
	require.Equal(t, 0, e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`).code) // the server runs
	cmd := exec.Command(bin, "tool", "bash", "--input", `{"cmd":"sh","args":["-c","echo started > marker; exec sleep 31.7"]}`)
	var stdout bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout = e.work, e.vars, &stdout
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(e.work, "marker")); return err == nil }, time.Minute, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the front catches signals 10 ms into its call
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	start := time.Now()
	err := cmd.Wait()
	assert.Less(t, time.Since(start), 3*time.Second)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode(), "the cancelled call's status: %v", ee)
	assert.Contains(t, stdout.String(), `"cancelled":true`)
	assert.Eventually(t, func() bool { return !sleeping("31.7") }, 30*time.Second, 20*time.Millisecond, "the command outlived its front")
	assert.Len(t, e.servers(), 1, "the server goes on")
	r := e.run("", []string{"SANDBOXER_SERVER=off"}, "log", "--json")
	assert.Contains(t, r.stdout, `\"cancelled\":true`, "the journal says the call was cancelled")
}

// sleeping reports whether a process runs "sleep ARG".
func sleeping(arg string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Equal(b, []byte("sleep\x00"+arg+"\x00")) {
			return true
		}
	}
	return false
}

// The server ends when idle, when its socket is removed, and on SIGTERM (stopServers); a call
// while it ends, or after, starts a new one.
func TestServerEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "abc")
	idle := []string{"SANDBOXER_SERVER_IDLE=1s"}
	require.Equal(t, 0, e.run("", idle, "tool", "read", "--input", `{"path":"a.txt"}`).code)
	pids := e.servers()
	require.Len(t, pids, 1)
	assert.Eventually(t, func() bool { return !alive(pids[0]) }, 20*time.Second, 20*time.Millisecond, "idle")
	socks, _ := filepath.Glob(filepath.Join(e.serverDir(), "*.sock"))
	assert.Empty(t, socks, "the socket is removed")

	require.Equal(t, 0, e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`).code)
	pids = e.servers()
	require.Len(t, pids, 1)
	socks, _ = filepath.Glob(filepath.Join(e.serverDir(), "*.sock"))
	require.Len(t, socks, 1)
	require.NoError(t, os.Remove(socks[0]))
	assert.Eventually(t, func() bool { return !alive(pids[0]) }, 20*time.Second, 20*time.Millisecond, "socket removed")
	assert.Contains(t, e.serverLog(), "why=idle")
	assert.Contains(t, e.serverLog(), `why="socket removed"`)
}

// A server that dies during a call: the front says so and fails; the next call starts another.
func TestServerKilledDuringACall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "abc")
	require.Equal(t, 0, e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`).code)
	pids := e.servers()
	require.Len(t, pids, 1)
	done := make(chan result, 1)
	go func() {
		done <- e.run("", nil, "tool", "bash", "--input", `{"cmd":"sh","args":["-c","echo started > marker; exec sleep 32.3"]}`)
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(e.work, "marker")); return err == nil }, time.Minute, 10*time.Millisecond)
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGKILL))
	r := <-done
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "the server ended during the call")
	assert.Eventually(t, func() bool { return !sleeping("32.3") }, 30*time.Second, 20*time.Millisecond, "the janitor kills what the server left")
	r = e.run("", nil, "tool", "read", "--input", `{"path":"marker"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, e.servers(), pids[0])
}

// A peer in other namespaces (a command in a sandbox runs in its own user, mount and PID
// namespaces) is refused; its front runs the call in a process of its own.
func TestServerRefusesOtherNamespaces(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	e := newEnv(t)
	e.write("a.txt", "abc")
	require.Equal(t, 0, e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`).code)
	cmd := exec.Command("unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", bin, "tool", "read", "--journal", "off", "--input", `{"path":"a.txt"}`)
	cmd.Dir, cmd.Env = e.work, e.vars
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("unshare: %v", err)
	}
	assert.Equal(t, `{"ok":true,"output":"abc"}`+"\n", string(out))
	assert.Contains(t, e.serverLog(), "refused")
}

// Only a process that can read the server's key uses the server: a wrong key is refused (and
// the front runs the call itself), and a sandboxed command cannot read the key.
func TestServerKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "abc")
	require.Equal(t, 0, e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`).code)
	keys, _ := filepath.Glob(filepath.Join(e.serverDir(), "*.key"))
	require.Len(t, keys, 1)
	fi, err := os.Stat(keys[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	r := e.run("", nil, "tool", "bash", "--input", `{"cmd":"sh","args":["-c","cat \"$0\" && echo READ","`+keys[0]+`"]}`)
	assert.NotContains(t, r.stdout, "READ", "a sandboxed command read the server's key")

	real, err := os.ReadFile(keys[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keys[0], []byte("not-the-key"), 0o600))
	r = e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `{"ok":true,"output":"abc"}`+"\n", r.stdout, "the front ran the call itself")
	assert.Contains(t, e.serverLog(), "key is not this server's")
	require.NoError(t, os.WriteFile(keys[0], real, 0o600))
}

// A stdout closed early (sandboxer log | head) ends a served call as SIGPIPE ends a process:
// status 141, nothing on stderr.
func TestServerBrokenStdout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", strings.Repeat("x", 100000))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	r.Close() // the reader is gone before the first write
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "tool", "read", "--input", `{"path":"a.txt"}`)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.work, e.vars, w, &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 141, ee.ExitCode())
	assert.Empty(t, stderr.String())
	assert.Len(t, e.servers(), 1, "the call was served")
}
