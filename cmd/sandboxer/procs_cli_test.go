package main_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startedID is the process id in a background bash's reply (its output is the result's JSON).
func startedID(t *testing.T, r result) string {
	t.Helper()
	w := decodeReply(t, r)
	require.True(t, w.OK, "%s %s", r.stdout, r.stderr)
	var started struct {
		Process string `json:"process"`
	}
	require.NoError(t, json.Unmarshal([]byte(w.Output), &started), w.Output)
	require.NotEmpty(t, started.Process)
	return started.Process
}

// syncBuf is a buffer a child process writes while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// logsJSON is one `logs --json` record.
type logsJSON struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Offset   int64  `json:"offset"`
	Dropped  int64  `json:"dropped"`
	Running  bool   `json:"running"`
	ExitCode *int   `json:"exitCode"`
}

// Background processes of a docker or oci sandbox outlive the CLI process that started them: ps,
// logs, kill and port-forward reach them from other processes.
func TestDockerProcessesAcrossCLIProcesses(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	processesAcrossCLIProcesses(t, newEnv(t), "docker")
}

func TestOCIProcessesAcrossCLIProcesses(t *testing.T) {
	t.Parallel()
	requireRuntime(t, "runc")
	e := newEnv(t)
	shareGoCache(e)
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })
	processesAcrossCLIProcesses(t, e, "oci")
}

func processesAcrossCLIProcesses(t *testing.T, e *env, adapterName string) {
	r := e.run("", nil, "sandbox", "create", "--adapter", adapterName)
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })

	r = e.run("", nil, "tool", "write", "--sandbox", id, "--input", `{"path":"www/index.html","content":"served\n"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	r = e.run("", nil, "tool", "bash", "--sandbox", id, "--input",
		`{"cmd":"busybox","args":["httpd","-f","-v","-p","127.0.0.1:8080","-h","."],"opts":{"cwd":"www","background":true}}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	srv := startedID(t, r)

	// ps, from another process.
	r = e.run("", nil, "ps", "--sandbox", id)
	require.Equal(t, 0, r.code, r.stderr)
	var ps struct {
		Processes []struct {
			ID      string   `json:"id"`
			Args    []string `json:"args"`
			Running bool     `json:"running"`
		} `json:"processes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ps), r.stdout)
	require.Len(t, ps.Processes, 1)
	assert.Equal(t, srv, ps.Processes[0].ID)
	assert.True(t, ps.Processes[0].Running)

	// port-forward: the server from the host, through the agent.
	pf := exec.Command(bin, "port-forward", "--sandbox", id, "0:8080")
	var pfErr syncBuf
	pf.Dir, pf.Env, pf.Stderr = e.work, e.vars, &pfErr
	out, err := pf.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, pf.Start())
	t.Cleanup(func() { _ = pf.Process.Kill(); _ = pf.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	var listening struct {
		Listen string `json:"listen"`
		Port   int    `json:"port"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &listening), line)
	assert.Equal(t, 8080, listening.Port)
	assert.True(t, strings.HasPrefix(listening.Listen, "127.0.0.1:"), "listens on loopback only: %s", listening.Listen)
	var body []byte
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + listening.Listen + "/index.html")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == 200
	}, time.Minute, 100*time.Millisecond, "port-forward's stderr: %s", &pfErr)
	assert.Equal(t, "served\n", string(body))
	require.NoError(t, pf.Process.Signal(syscall.SIGINT))
	require.NoError(t, pf.Wait(), "port-forward ends cleanly on an interrupt")

	// logs: the access log (busybox httpd -v logs each response to stderr).
	require.Eventually(t, func() bool {
		r := e.run("", nil, "logs", "--sandbox", id, srv)
		return r.code == 0 && strings.Contains(r.stderr, "response:200")
	}, time.Minute, 200*time.Millisecond)

	// kill, then the exit shows in logs --json.
	r = e.run("", nil, "kill", "--sandbox", id, srv)
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `{"process":"`+srv+`","signal":"TERM"}`, r.stdout)
	require.Eventually(t, func() bool {
		r := e.run("", nil, "logs", "--sandbox", id, "--json", srv)
		var rec logsJSON
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &rec) == nil && !rec.Running && rec.ExitCode != nil
	}, time.Minute, 200*time.Millisecond)

	// logs -f follows until the process exits.
	r = e.run("", nil, "tool", "bash", "--sandbox", id, "--input",
		`{"cmd":"sh","args":["-c","for i in 1 2 3; do echo $i; sleep 0.3; done; echo bye >&2"],"opts":{"background":true}}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	counter := startedID(t, r)
	r = e.run("", nil, "logs", "--sandbox", id, "-f", counter)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "1\n2\n3\n", r.stdout)
	assert.Equal(t, "bye\n", r.stderr)

	// Errors.
	r = e.run("", nil, "kill", "--sandbox", id, "p-nope")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "TOOL_NOT_FOUND")
	r = e.run("", nil, "kill", "--sandbox", id, "--signal", "BOGUS", counter)
	assert.Equal(t, 2, r.code, r.stderr)
}

func TestProcessCommandsUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{
		{"ps"},
		{"logs", "p1"},
		{"kill", "p1"},
		{"port-forward", "8080"},
		{"port-forward", "--sandbox", "sbx-000000000000", "x:80"},
		{"port-forward", "--sandbox", "sbx-000000000000", "70000"},
		{"logs", "--sandbox", "sbx-000000000000"},
		{"logs", "--sandbox", "sbx-000000000000", "--since", "-1", "p1"},
	} {
		r := e.run("", nil, args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}
	// A local sandbox's processes end with the process that started them: another finds none.
	r := e.run("", nil, "sandbox", "create", "--adapter", "local")
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "ps", "--sandbox", id)
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `{"processes":[]}`, r.stdout)
	r = e.run("", nil, "logs", "--sandbox", id, "p1")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "TOOL_NOT_FOUND")
}
