package oci_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// stateDir is the state directory every test of this process shares (one root file system,
// one runtime state per runtime), removed at the end.
var stateDir string

// runtimeErr says, per runtime, why its tests skip (nil: it runs sandboxes here).
var runtimeErr = map[string]error{}

// required are the runtimes SANDBOXER_TEST_REQUIRE=oci makes mandatory: all three (crun runs on
// a hybrid cgroup host such as this project's CI through the adapter's private mount namespace).
var required = []string{oci.Runc, oci.Runsc, oci.Crun}

// created lists the ids of every sandbox the tests made, for the leftover check.
var (
	createdMu sync.Mutex
	created   []string
)

// TestMain makes the state directory, probes each runtime with a sandbox, and checks after the
// run that nothing is left: no sandbox directory or workspace, no container in any runtime's
// state, no cgroup of any sandbox made here, no mount under the state directory.
func TestMain(m *testing.M) {
	if os.Getenv("SANDBOXER_OCI_ATTACH") != "" || os.Getenv("SANDBOXER_OCI_ORPHAN") != "" {
		os.Exit(m.Run()) // a helper process of a test: it brings its own state directory
	}
	var err error
	stateDir, err = os.MkdirTemp("", "sandboxer-oci-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	for _, rt := range oci.Runtimes {
		runtimeErr[rt] = probe(ctx, rt)
	}
	cancel()
	code := 0
	if testenv.Required("oci") {
		for _, rt := range required {
			if runtimeErr[rt] != nil {
				fmt.Fprintf(os.Stderr, "SANDBOXER_TEST_REQUIRE=oci but %s cannot run sandboxes here: %v\n", rt, runtimeErr[rt])
				code = 1
			}
		}
	}
	if code == 0 {
		code = m.Run()
		if left := leftovers(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "left behind by the tests:", strings.Join(left, "\n  "))
			code = 1
		}
	}
	removeStateDir()
	os.Exit(code)
}

func probe(ctx context.Context, rt string) error {
	if _, err := exec.LookPath(rt); err != nil {
		return err
	}
	sb, err := oci.New(ctx, oci.Config{Runtime: rt, StateDir: stateDir})
	if err != nil {
		return err
	}
	defer sb.Stop(context.Background())
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
	}
	return nil
}

// leftovers lists what the tests left on the host.
func leftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	createdMu.Lock()
	ids := created
	createdMu.Unlock()
	for _, id := range ids {
		out = append(out, oci.Leftovers(ctx, oci.Config{StateDir: stateDir}, id)...)
	}
	for _, d := range []string{"oci/sandboxes", "oci/workspaces", "oci/probes"} {
		ents, _ := os.ReadDir(filepath.Join(stateDir, d))
		for _, e := range ents {
			out = append(out, filepath.Join(stateDir, d, e.Name()))
		}
	}
	for _, rt := range oci.Runtimes {
		root := filepath.Join(stateDir, "oci", "runtime", rt)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		if list, err := exec.Command(rt, "--root", root, "list", "--quiet").Output(); err == nil && strings.TrimSpace(string(list)) != "" {
			out = append(out, rt+" containers: "+strings.TrimSpace(string(list)))
		}
	}
	out = append(out, oci.ProbeCgroups()...)
	// Every thread's view: a private mount namespace of a runtime start must never stick to one.
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		mi, err := os.ReadFile("/proc/self/task/" + task.Name() + "/mountinfo")
		if err == nil && strings.Contains(string(mi), stateDir) {
			out = append(out, "mounts under "+stateDir+" seen by thread "+task.Name())
		}
	}
	return out
}

// removeStateDir removes the state directory (the root file system's directories are read-only).
func removeStateDir() {
	filepath.WalkDir(stateDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(stateDir)
}

func needRuntime(t testing.TB, rt string) {
	t.Helper()
	if err := runtimeErr[rt]; err != nil {
		t.Skipf("%s cannot run sandboxes here (SANDBOXER_TEST_REQUIRE=oci makes it mandatory): %v", rt, err)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newSandbox makes a sandbox of runtime rt in the shared state directory, stopped when the test
// ends.
func newSandbox(t testing.TB, rt string, cfg oci.Config) *oci.Sandbox {
	t.Helper()
	needRuntime(t, rt)
	cfg.Runtime = rt
	if cfg.StateDir == "" {
		cfg.StateDir = stateDir
	}
	sb, err := oci.New(ctxT(t), cfg)
	require.NoError(t, err)
	track(sb.ID())
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

// ownStateDir is a state directory of the test's own (Prune looks at all of it), pruned of every
// sandbox at the end.
func ownStateDir(t *testing.T) string {
	state := t.TempDir()
	t.Cleanup(func() { oci.Prune(context.Background(), oci.Config{StateDir: state}, oci.PruneOptions{All: true}) })
	return state
}

func track(id string) {
	createdMu.Lock()
	created = append(created, id)
	createdMu.Unlock()
}

// eachRuntime runs fn as a subtest per runtime (skipped where the runtime cannot run). With
// -short (CI's race-detector run, which looks at this package's goroutines, the same under every
// runtime) only runc runs: the plain run covers the others.
func eachRuntime(t *testing.T, fn func(t *testing.T, rt string)) {
	for _, rt := range oci.Runtimes {
		t.Run(rt, func(t *testing.T) {
			if testing.Short() && rt != oci.Runc {
				t.Skip("-short: runc only")
			}
			needRuntime(t, rt)
			fn(t, rt)
		})
	}
}
