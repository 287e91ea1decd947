package sdk_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The TypeScript SDK's tests (sdk/typescript/test, node --test) against a real server of this
// module: once with the local adapter, once with docker where the daemon and the default image
// are there, and once with tokens. Without node or tsc the tests skip, except where
// SANDBOXER_TEST_REQUIRE names node (CI): then they fail.

const tsDir = "typescript"

// needNode returns the paths of node (18 or later: its global fetch) and tsc.
func needNode(t testing.TB) (node, tsc string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		if testenv.Required("node") {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (SANDBOXER_TEST_REQUIRE=node fails instead)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		fail("no node: %v", err)
	}
	tsc, err = exec.LookPath("tsc")
	if err != nil {
		fail("no tsc (Debian: node-typescript): %v", err)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		fail("node --version: %v", err)
	}
	m := regexp.MustCompile(`^v(\d+)\.`).FindSubmatch(out)
	if m == nil {
		fail("node --version: %q", out)
	}
	if major, _ := strconv.Atoi(string(m[1])); major < 18 {
		fail("node %s: the SDK needs 18 or later (global fetch)", strings.TrimSpace(string(out)))
	}
	return node, tsc
}

var tsBuild struct {
	once sync.Once
	out  []byte
	err  error
}

// buildTS compiles the SDK (tsc -p sdk/typescript) once per test process, then type-checks the
// examples against it: they hold flow-state-dev's Sandbox interface and the AI SDK's tool shape,
// so a drop-in that stops fitting fails here.
func buildTS(t testing.TB, tsc string) {
	t.Helper()
	tsBuild.once.Do(func() {
		for _, p := range []string{tsDir, filepath.Join(tsDir, "examples")} {
			out, err := exec.Command(tsc, "-p", p).CombinedOutput()
			if err != nil {
				tsBuild.out, tsBuild.err = out, fmt.Errorf("tsc -p sdk/%s: %w", p, err)
				return
			}
		}
	})
	if tsBuild.err != nil {
		t.Fatalf("%v\n%s", tsBuild.err, tsBuild.out)
	}
}

// runNodeTests runs the test files (names in sdk/typescript/test) with env added, and fails the
// test with node's report when one of them fails.
func runNodeTests(t *testing.T, node string, env []string, files ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	args := []string{"--test", "--test-reporter=spec"}
	for _, f := range files {
		args = append(args, filepath.Join("test", f))
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = tsDir
	// The server's URL and tokens come from the test alone, never from the caller's environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SANDBOXER_URL=") && !strings.HasPrefix(kv, "SANDBOXER_TOKEN=") &&
			!strings.HasPrefix(kv, "SANDBOXER_OTHER_TOKEN=") && !strings.HasPrefix(kv, "SANDBOXER_SANDBOX_ID=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	t.Logf("node --test %s:\n%s", strings.Join(files, " "), out)
}

var tsTests = []string{"client.test.mjs", "flowstate.test.mjs", "smithers.test.mjs"}

func TestTypeScriptSDKLocal(t *testing.T) {
	t.Parallel()
	node, tsc := needNode(t)
	buildTS(t, tsc)
	s := servetest.Start(t, "--adapter", "local")
	runNodeTests(t, node, []string{"SANDBOXER_URL=" + s.URL}, tsTests...)
}

func TestTypeScriptSDKDocker(t *testing.T) {
	t.Parallel()
	node, tsc := needNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := image.Exists(ctx, "", image.DefaultTag); err != nil || !ok {
		if testenv.Required("docker") {
			t.Fatalf("docker daemon or image %s not available: %v", image.DefaultTag, err)
		}
		t.Skipf("docker daemon or image %s not available (SANDBOXER_TEST_REQUIRE=docker fails instead): %v", image.DefaultTag, err)
	}
	buildTS(t, tsc)
	s := servetest.Start(t, "--adapter", "docker")
	runNodeTests(t, node, []string{"SANDBOXER_URL=" + s.URL}, tsTests...)
}

func TestTypeScriptSDKTokens(t *testing.T) {
	t.Parallel()
	node, tsc := needNode(t)
	buildTS(t, tsc)
	file := filepath.Join(t.TempDir(), "tokens.json")
	ci := addToken(t, file, "ci")
	other := addToken(t, file, "other", "--max-sandboxes", "1")
	s := servetest.Start(t, "--adapter", "local", "--tokens", file)
	runNodeTests(t, node, []string{"SANDBOXER_URL=" + s.URL, "SANDBOXER_TOKEN=" + ci, "SANDBOXER_OTHER_TOKEN=" + other}, "tokens.test.mjs")
}

// addToken makes a token with `sandboxerd serve token add` and returns it.
func addToken(t *testing.T, file, name string, flags ...string) string {
	t.Helper()
	args := append([]string{"serve", "token", "add", name, "--tokens", file}, flags...)
	out, err := exec.Command(servetest.Binary(t), args...).Output()
	if err != nil {
		t.Fatalf("sandboxerd %s: %v", strings.Join(args, " "), err)
	}
	tok := strings.TrimSpace(string(out))
	if !strings.HasPrefix(tok, "sbx_") {
		t.Fatalf("sandboxerd %s printed %q, want a token", strings.Join(args, " "), tok)
	}
	return tok
}
