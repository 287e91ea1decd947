package doctest

import (
	"bytes"
	"context"
	"fmt"
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

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// blockTimeout bounds one block: a block is meant to take seconds (the slowest, the README's
// `go install` and a `go test` in a sandbox with a cold build cache of its own, 10 to 30 s on
// two cores, minutes at CI's load); this only stops a hung one.
const blockTimeout = 12 * time.Minute

// TestDocCommands runs every runnable block of README.md and docs/*.md (see the package
// comment) on binaries built fresh from this tree, each page's blocks in order in a scratch
// directory of its own, and compares their output with the output block that follows them.
func TestDocCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)

	bin := buildBinaries(t, root)
	total := 0
	for _, page := range pages {
		src, err := os.ReadFile(page)
		require.NoError(t, err)
		blocks := Parse(src)
		total += len(blocks)
		if len(blocks) == 0 {
			continue
		}
		rel, _ := filepath.Rel(root, page)
		t.Run(rel, func(t *testing.T) {
			sc := newScratch(t, root, bin)
			for _, b := range blocks {
				t.Run(fmt.Sprintf("line%d", b.Line), func(t *testing.T) { sc.run(t, rel, b) })
			}
		})
	}
	// The README's set-up command and tour are runnable: a parser that finds nothing must fail.
	require.GreaterOrEqual(t, total, 5, "runnable blocks found in README.md and docs/*.md")
}

// buildBinaries builds the front and the engine into a temporary directory and returns it.
func buildBinaries(t *testing.T, root string) string {
	t.Helper()
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./cmd/sandboxer", "./cmd/sandboxerd")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// scratch is one page's world: a workspace (the blocks' working directory), a home, a GOPATH and
// a server directory, all temporary, and the environment that points every one of them there.
type scratch struct {
	root, work string
	env        []string
}

// newScratch makes a page's scratch directory; its servers and long-lived sandboxes end with
// the test.
func newScratch(t *testing.T, root, bin string) *scratch {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	sc := &scratch{root: root, work: filepath.Join(base, "work")}
	for _, d := range []string{"work", "home", "gopath"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	// A socket's path is at most 107 bytes: the server directory is a short one of its own.
	srv, err := os.MkdirTemp("", "sbx-doc-")
	require.NoError(t, err)
	sc.env = []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(base, "home"),
		"GOPATH=" + filepath.Join(base, "gopath"),
		"LANG=C.UTF-8",
		"SANDBOXER_SERVER_DIR=" + srv,
		// The host's build and module caches: the oci adapter compiles its agent, and `go
		// install` builds the CLI; with the scratch HOME alone both would start cold. This
		// toolchain, no other.
		"GOCACHE=" + goEnv(t, "GOCACHE"),
		"GOMODCACHE=" + goEnv(t, "GOMODCACHE"),
		"GOTOOLCHAIN=local",
		// A command's timeout (default 60 s): the README's `sandboxer exec -- go test ./...`
		// builds the standard library in the sandbox's own cache, which on CI's loaded two cores
		// can take longer than that. Nothing else in the blocks depends on it.
		"SANDBOXER_TIMEOUT=10m",
	}
	for _, v := range []string{"DOCKER_HOST", "GOPROXY", "GOFLAGS", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOSUMDB"} {
		if x, ok := os.LookupEnv(v); ok {
			sc.env = append(sc.env, v+"="+x)
		}
	}
	t.Cleanup(func() {
		sc.removeSandboxes(t, bin)
		stopServers(t, srv)
	})
	return sc
}

// run runs one block and checks its status and output.
func (sc *scratch) run(t *testing.T, page string, b Block) {
	for _, tag := range b.Tags {
		if why := missing(tag); why != "" {
			if testenv.Required(tag) || (tag == "runsc" && testenv.Required("oci")) {
				t.Fatalf("%s:%d needs %s: %s (SANDBOXER_TEST_REQUIRE)", page, b.Line, tag, why)
			}
			t.Skipf("%s:%d needs %s: %s", page, b.Line, tag, why)
		}
	}
	dir := sc.work
	if b.Has("repo") {
		dir = sc.root
	}
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", b.Script)
	cmd.Dir, cmd.Env = dir, sc.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s:%d ran in %s", page, b.Line, time.Since(start).Round(time.Millisecond))
	require.NoError(t, err, "%s:%d:\n%s\noutput:\n%s", page, b.Line, b.Script, out.String())
	if b.Output != nil {
		assert.True(t, Match(*b.Output, out.String()),
			"%s:%d: the output differs from the block's\n--- shown:\n%s--- got:\n%s", page, b.Line, *b.Output, out.String())
	}
}

// missing says why this machine cannot run a block tagged tag, or "" when it can.
func missing(tag string) string {
	switch tag {
	case "repo":
		return ""
	case "docker":
		if err := exec.Command("docker", "image", "inspect", "sandboxer-sandbox:latest").Run(); err != nil {
			return "a Docker daemon with the image sandboxer-sandbox:latest (go run ./cmd/sandboxerd image build): " + err.Error()
		}
		return ""
	case "oci", "runsc":
		if os.Geteuid() != 0 {
			return "root"
		}
		runtime := "runc"
		if tag == "runsc" {
			runtime = "runsc"
		}
		if _, err := exec.LookPath(runtime); err != nil {
			return runtime + " on PATH"
		}
		return ""
	case "node":
		for _, prog := range []string{"node", "tsc"} {
			if _, err := exec.LookPath(prog); err != nil {
				return prog + " on PATH (Debian's nodejs and node-typescript)"
			}
		}
		return ""
	case "python":
		if _, err := exec.LookPath("python3"); err != nil {
			return "python3 on PATH"
		}
		return ""
	}
	return "an unknown tag (the test knows repo, docker, oci, runsc, node and python)"
}

// removeSandboxes removes the long-lived sandboxes a block left (a block that failed halfway
// leaves its container).
func (sc *scratch) removeSandboxes(t *testing.T, bin string) {
	cmd := exec.Command(filepath.Join(bin, "sandboxer"), "sandbox", "ls")
	cmd.Dir, cmd.Env = sc.work, append(sc.env, "SANDBOXER_SERVER=off")
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("sandbox ls: %v", err)
		return
	}
	for _, line := range strings.Split(string(out), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			rm := exec.Command(filepath.Join(bin, "sandboxer"), "sandbox", "rm", f[0])
			rm.Dir, rm.Env = sc.work, append(sc.env, "SANDBOXER_SERVER=off")
			if out, err := rm.CombinedOutput(); err != nil {
				t.Errorf("sandbox rm %s: %v: %s", f[0], err, out)
			}
		}
	}
}

// goEnv is a variable of this user's go environment.
func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// stopServers ends the resident servers of dir (each wrote its pid into its lock file) with
// SIGTERM, waits until they are gone, and removes dir.
func stopServers(t *testing.T, dir string) {
	defer os.RemoveAll(dir)
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	for _, l := range locks {
		b, _ := os.ReadFile(l)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, syscall.SIGTERM) != nil {
			continue
		}
		deadline := time.Now().Add(30 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("server %d did not end on SIGTERM", pid)
		}
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
