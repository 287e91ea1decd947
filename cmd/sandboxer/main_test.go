package main_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/internal/servetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// bin is the sandboxer binary (the front), built once for the whole run with the engine,
// sandboxerd, beside it.
var bin string

func TestMain(m *testing.M) {
	if mode := os.Getenv(floorEnv); mode != "" {
		if err := runFloor(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "sandboxer-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "sandboxer")
	out, err := exec.Command("go", "build", "-tags", "sandboxer_testhooks", "-o", dir+"/", ".", "../sandboxerd").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := servetest.Main(m) // and removes the sandboxerd the remote tests' servers run
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's isolated world: a workspace (the current directory of every run), a state
// directory and a home, all under one temporary directory.
type env struct {
	t     testing.TB
	base  string // the temporary directory; masked as $TMP in goldens
	work  string
	state string
	vars  []string
	// timeout bounds each run; 0 is 2 minutes.
	timeout time.Duration
}

func newEnv(t testing.TB) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	e := &env{t: t, base: base, work: filepath.Join(base, "work"), state: filepath.Join(base, "state")}
	require.NoError(t, os.MkdirAll(e.work, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "home"), 0o755))
	e.vars = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(base, "home"),
		"SANDBOXER_STATE_DIR=" + e.state,
		"LANG=C.UTF-8",
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		e.vars = append(e.vars, "DOCKER_HOST="+h)
	}
	// The resident server of this environment has a directory of its own (short: a socket's
	// path is at most 107 bytes), and ends with the test.
	srv, err := os.MkdirTemp("", "sbx-")
	require.NoError(t, err)
	e.vars = append(e.vars, "SANDBOXER_SERVER_DIR="+srv)
	t.Cleanup(func() { stopServers(t, srv) })
	if c := goCache(); c != "" {
		// The oci adapter compiles its agent with the Go toolchain: with the run's HOME alone,
		// every run would rebuild the standard library.
		e.vars = append(e.vars, "GOCACHE="+c)
	}
	return e
}

// stopServers ends the servers of dir and removes dir.
func stopServers(t testing.TB, dir string) {
	endServers(t, dir)
	os.RemoveAll(dir)
}

// endServers ends the servers of dir (SIGTERM) and waits until they are gone.
func endServers(t testing.TB, dir string) {
	for _, pid := range serverPids(dir) {
		if syscall.Kill(pid, syscall.SIGTERM) != nil {
			continue
		}
		deadline := time.Now().Add(30 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("server %d did not end on SIGTERM", pid)
		}
	}
}

// serverPids are the running servers of dir (each wrote its pid into its lock file; a lock that
// is not a regular file, planted by a test, is no server's and is not read: a FIFO would block).
func serverPids(dir string) []int {
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	var pids []int
	for _, l := range locks {
		if fi, err := os.Lstat(l); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, _ := os.ReadFile(l)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid runs (a zombie, the server once it ended and until init reaps it,
// does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// goCache is this user's Go build cache.
var goCache = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

// userConfig writes the user's config file (~/.config/sandboxer/sandboxer.yaml of the run's HOME).
func (e *env) userConfig(content string) {
	e.t.Helper()
	p := filepath.Join(e.base, "home", ".config", "sandboxer", "sandboxer.yaml")
	require.NoError(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(e.t, os.WriteFile(p, []byte(content), 0o644))
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary in the workspace with extra environment entries ("K=V") and stdin.
func (e *env) run(stdin string, extraEnv []string, args ...string) result {
	e.t.Helper()
	return e.runWith("", e.work, stdin, extraEnv, args...)
}

// runIn runs the front in dir with the env's variables and extra ones.
func (e *env) runIn(dir string, extraEnv []string, args ...string) result {
	e.t.Helper()
	return e.runWith("", dir, "", extraEnv, args...)
}

// runWith runs binary (the test's front when "") in dir with stdin.
func (e *env) runWith(binary, dir, stdin string, extraEnv []string, args ...string) result {
	e.t.Helper()
	if binary == "" {
		binary = bin
	}
	limit := e.timeout
	if limit == 0 {
		limit = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), e.vars...), extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return result{stdout: out.String(), stderr: errb.String(), code: ee.ExitCode()}
	}
	require.NoError(e.t, err)
	return result{stdout: out.String(), stderr: errb.String()}
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.work, rel)
	require.NoError(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(e.t, os.WriteFile(p, []byte(content), 0o644))
}

var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"durationMs":\d+`), `"durationMs":0`},
	// A receipt's measurements: what the adapter can count depends on the kernel's cgroups
	// (docs/receipts.md); the goldens keep the exact output counts and the path diff.
	{regexp.MustCompile(`"wallUs":\d+`), `"wallUs":0`},
	{regexp.MustCompile(`,"(cpuUs|peakMemoryBytes|processes|diskReadBytes|diskWriteBytes)":\d+`), ``},
	// What the local adapter enforces depends on the kernel (user namespaces, Landlock): the
	// adapter's own tests cover it; the goldens keep only that the members are there.
	{regexp.MustCompile(`"enforced":(true|false)`), `"enforced":ENFORCED`},
	{regexp.MustCompile(`"isolation":\{[^{}]*\}`), `"isolation":ISOLATION`},
	{regexp.MustCompile(`"(startedAtMs|finishedAtMs)":\d+`), `"$1":0`},
	{regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b`), `TIME`},
	{regexp.MustCompile(`\b(\d+(\.\d+)?(ns|µs|ms|s)|0s)\b`), `DUR`},
	{regexp.MustCompile(`\bsbx-[0-9a-f]{12}\b`), `sbx-ID`},
	// Commands search the caller's PATH (what they can see of it, then the default): it is the
	// machine's; adapter/local's TestPathFromTheCaller checks how it is made.
	{regexp.MustCompile(`(not found in PATH )[^"\n]*`), `${1}PATH`},
	{regexp.MustCompile(`  +`), `  `}, // table columns whose width depends on masked values
}

// mask replaces what changes between runs: the temporary directory, durations, times and
// sandbox ids. Idempotency keys are deterministic and stay.
func (e *env) mask(s string) string {
	s = strings.ReplaceAll(s, e.base, "$TMP")
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}
