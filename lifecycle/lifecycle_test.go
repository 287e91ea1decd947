package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// TestMain fails the run when a docker container this process created is left, and removes the
// sandboxerd the remote tests built.
func TestMain(m *testing.M) {
	code := servetest.Main(m)
	if dockerErr == nil && dockerProbed {
		if left := dockerLeftovers(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "containers left behind by the tests:", left)
			code = 1
		}
	}
	os.Exit(code)
}

// newManager returns a Manager over a fresh directory and Options whose adapter state lives
// there too (so that Prune's oci and docker sweeps look at this test's state only).
func newManager(t *testing.T, name string) (*lifecycle.Manager, lifecycle.Options) {
	t.Helper()
	dir := t.TempDir()
	return lifecycle.NewManager(filepath.Join(dir, "records")), lifecycle.Options{Adapter: name, StateDir: filepath.Join(dir, "adapters")}
}

// assertNothingLeft checks that the Manager has no record and no sandbox directory.
func assertNothingLeft(t *testing.T, mgr *lifecycle.Manager) {
	t.Helper()
	recs, err := mgr.List()
	require.NoError(t, err)
	assert.Empty(t, recs, "no record")
	ents, err := os.ReadDir(filepath.Join(mgr.Dir(), "sandboxes"))
	if !errors.Is(err, os.ErrNotExist) {
		require.NoError(t, err)
	}
	assert.Empty(t, ents, "no sandbox directory (no workspace)")
}

func TestAdapters(t *testing.T) {
	t.Parallel()
	var names []string
	for _, a := range lifecycle.Adapters() {
		names = append(names, a.Name)
		assert.NotEmpty(t, a.Enforces, a.Name)
		assert.Equal(t, a.Name == "memory", a.InProcess, a.Name)
	}
	assert.Equal(t, []string{"docker", "kubernetes", "local", "memory", "oci", "remote"}, names)
	_, ok := lifecycle.Lookup("nope")
	assert.False(t, ok)
	_, err := lifecycle.Open(context.Background(), lifecycle.Options{Adapter: "nope"})
	assert.ErrorIs(t, err, errs.InvalidInput)
}

// An ephemeral sandbox is the caller's: Stop (twice is fine) removes the temporary workspace
// and keeps a given one.
func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb, err := lifecycle.Open(ctx, lifecycle.Options{Adapter: "memory"})
	require.NoError(t, err)
	require.NoError(t, sb.WriteFile(ctx, "f", []byte("in memory")))
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "f"}})
	require.NoError(t, err)
	assert.Equal(t, "in memory", string(res.Stdout))
	require.NoError(t, sb.Stop(ctx))
	require.NoError(t, sb.Stop(ctx))

	_, err = lifecycle.Open(ctx, lifecycle.Options{Adapter: "memory", AllowHosts: []string{"example.com"}})
	assert.ErrorIs(t, err, lifecycle.ErrNoNetwork)

	root := t.TempDir()
	sb, err = lifecycle.Open(ctx, lifecycle.Options{Local: lifecycle.LocalOptions{Root: root}}) // "": local
	require.NoError(t, err)
	require.NoError(t, sb.WriteFile(ctx, "kept", []byte("x")))
	require.NoError(t, sb.Stop(ctx))
	b, err := os.ReadFile(filepath.Join(root, "kept"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(b), "a given workspace outlives its sandbox")
}

// The local adapter's long-lived sandboxes: create, attach from a "second process" (a second
// Manager), list, fork, remove, prune, and nothing left.
func TestLocalLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mgr, o := newManager(t, "local")

	rec, err := mgr.Create(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, "local", rec.Adapter)
	assert.Equal(t, filepath.Join(mgr.Dir(), "sandboxes", rec.ID, "workspace"), rec.Workspace)
	assert.DirExists(t, rec.Workspace)

	ls, err := mgr.Attach(ctx, rec.ID, o)
	require.NoError(t, err)
	assert.Equal(t, rec, ls.Record)
	require.NoError(t, ls.Sandbox.WriteFile(ctx, "f", []byte("kept")))
	var wg sync.WaitGroup
	for range 2 { // Detach twice at once, then Close: one detach
		wg.Go(func() { assert.NoError(t, ls.Detach(ctx)) })
	}
	wg.Wait()
	require.NoError(t, ls.Close())

	other := lifecycle.NewManager(mgr.Dir())
	ls, err = other.Attach(ctx, rec.ID, o)
	require.NoError(t, err)
	b, err := ls.Sandbox.ReadFile(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(b), "the workspace outlives the session")

	fork, rep, err := mgr.Fork(ctx, ls, o)
	require.NoError(t, err)
	assert.Empty(t, rep.Skipped)
	require.NoError(t, ls.Close())
	assert.Equal(t, rec.ID, fork.ForkOf)
	assert.NotEqual(t, rec.ID, fork.ID)
	b, err = os.ReadFile(filepath.Join(fork.Workspace, "f"))
	require.NoError(t, err)
	assert.Equal(t, "kept", string(b))

	recs, err := mgr.List()
	require.NoError(t, err)
	assert.Equal(t, []string{rec.ID, fork.ID}, ids(recs), "oldest first")
	for _, r := range recs {
		alive, err := mgr.Alive(ctx, r, o)
		require.NoError(t, err)
		assert.True(t, alive, r.ID)
	}

	require.NoError(t, mgr.Remove(ctx, fork.ID, o))
	assert.NoDirExists(t, fork.Workspace)
	assert.ErrorIs(t, mgr.Remove(ctx, fork.ID, o), errs.NotFound)
	_, err = mgr.Attach(ctx, fork.ID, o)
	assert.ErrorIs(t, err, errs.SandboxUnavailable, "removed")

	// Its workspace removed behind its back: gone, and Prune removes the record.
	require.NoError(t, os.RemoveAll(rec.Workspace))
	alive, err := mgr.Alive(ctx, rec, o)
	require.NoError(t, err)
	assert.False(t, alive)
	_, err = mgr.Attach(ctx, rec.ID, o)
	assert.ErrorIs(t, err, errs.SandboxUnavailable, "its workspace is gone")
	pr, err := mgr.Prune(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, []string{rec.ID}, pr.Removed)
	assertNothingLeft(t, mgr)
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mgr, o := newManager(t, "memory")
	_, err := mgr.Create(ctx, o)
	assert.ErrorIs(t, err, lifecycle.ErrInProcess)
	_, err = mgr.Create(ctx, lifecycle.Options{Adapter: "nope"})
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = mgr.Create(ctx, lifecycle.Options{Local: lifecycle.LocalOptions{Isolation: "sometimes"}})
	assert.ErrorIs(t, err, errs.InvalidInput, "an invalid local configuration")
	_, err = mgr.Attach(ctx, "sbx-000000000000", o)
	assert.ErrorIs(t, err, errs.SandboxUnavailable, "no such sandbox")
	_, err = mgr.Attach(ctx, "../etc", o)
	assert.ErrorIs(t, err, errs.InvalidInput)
	assertNothingLeft(t, mgr)
}

func ids(recs []lifecycle.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

var (
	dockerOnce   sync.Once
	dockerProbed bool
	dockerErr    error
)

// needDocker skips without a usable daemon and image (fails with SANDBOXER_TEST_REQUIRE=docker).
func needDocker(t *testing.T) {
	t.Helper()
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		dockerProbed = true
		if _, dockerErr = docker.List(ctx, docker.Config{}); dockerErr == nil {
			_, dockerErr = image.Build(ctx, image.Options{})
		}
	})
	if dockerErr != nil {
		if testenv.Required("docker") {
			t.Fatal("SANDBOXER_TEST_REQUIRE=docker but the Docker daemon is not usable:", dockerErr)
		}
		t.Skip("Docker daemon not usable (set SANDBOXER_TEST_REQUIRE=docker to fail instead):", dockerErr)
	}
}

// dockerLeftovers lists the containers this test process created that are still there.
func dockerLeftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	infos, err := docker.List(ctx, docker.Config{})
	if err != nil {
		return []string{err.Error()}
	}
	host, _ := os.Hostname()
	var out []string
	for _, i := range infos {
		if i.Owner == fmt.Sprintf("%s:%d", host, os.Getpid()) {
			out = append(out, i.ID)
		}
	}
	return out
}

// dockerIDs are the sandbox ids of the daemon's sandboxer containers.
func dockerIDs(t *testing.T) map[string]bool {
	t.Helper()
	infos, err := docker.List(context.Background(), docker.Config{})
	require.NoError(t, err)
	out := map[string]bool{}
	for _, i := range infos {
		out[i.ID] = true
	}
	return out
}

// The docker adapter's long-lived sandboxes: a persistent container per sandbox, which Prune
// leaves and Remove removes.
func TestDockerLifecycle(t *testing.T) {
	needDocker(t)
	t.Parallel()
	ctx := context.Background()
	mgr, o := newManager(t, "docker")

	rec, err := mgr.Create(ctx, o)
	require.NoError(t, err)
	t.Cleanup(func() { mgr.Remove(context.Background(), rec.ID, o) })
	assert.Equal(t, image.DefaultTag, rec.Image)
	require.NotEmpty(t, rec.Backend)
	assert.True(t, dockerIDs(t)[rec.Backend], "its container")

	ls, err := mgr.Attach(ctx, rec.ID, o)
	require.NoError(t, err)
	require.NoError(t, ls.Sandbox.WriteFile(ctx, "f", []byte("kept")))
	require.NoError(t, ls.Close())
	require.NoError(t, ls.Close())

	ls, err = mgr.Attach(ctx, rec.ID, o)
	require.NoError(t, err)
	res, err := ls.Sandbox.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "f"}})
	require.NoError(t, err)
	assert.Equal(t, "kept", string(res.Stdout), "the container outlives the session")
	fork, _, err := mgr.Fork(ctx, ls, o)
	require.NoError(t, err)
	t.Cleanup(func() { mgr.Remove(context.Background(), fork.ID, o) })
	require.NoError(t, ls.Close())
	assert.Equal(t, rec.ID, fork.ForkOf)
	assert.NotEqual(t, rec.Backend, fork.Backend)

	fs, err := mgr.Attach(ctx, fork.ID, o)
	require.NoError(t, err)
	b, err := fs.Sandbox.ReadFile(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(b), "the fork has the source's files")
	require.NoError(t, fs.Close())

	pr, err := mgr.Prune(ctx, o)
	require.NoError(t, err)
	assert.Empty(t, pr.Removed, "both are alive")
	for _, l := range pr.Leftovers {
		assert.NotContains(t, []string{rec.Backend, fork.Backend}, l.ID, "Prune leaves long-lived sandboxes")
	}
	for _, r := range []lifecycle.Record{rec, fork} {
		alive, err := mgr.Alive(ctx, r, o)
		require.NoError(t, err)
		assert.True(t, alive, r.ID)
	}

	require.NoError(t, mgr.Remove(ctx, rec.ID, o))
	require.NoError(t, mgr.Remove(ctx, fork.ID, o))
	live := dockerIDs(t)
	assert.False(t, live[rec.Backend], "no container left")
	assert.False(t, live[fork.Backend], "no container of the fork left")
	assertNothingLeft(t, mgr)

	// A create that fails leaves nothing either.
	bad := o
	bad.Image = "sandboxer-no-such-image:nope"
	_, err = mgr.Create(ctx, bad)
	assert.Error(t, err)
	assertNothingLeft(t, mgr)
}

// The oci adapter's long-lived sandboxes: everything under Options.StateDir, found again by the
// record's Backend; Remove leaves no container.
func TestOCILifecycle(t *testing.T) {
	testenv.NeedOCIRuntime(t, "runc")
	t.Parallel()
	ctx := context.Background()
	mgr, o := newManager(t, "oci")

	rec, err := mgr.Create(ctx, o)
	require.NoError(t, err)
	t.Cleanup(func() { mgr.Remove(context.Background(), rec.ID, o) })
	assert.Empty(t, rec.Image, "its own root file system")
	ls, err := mgr.Attach(ctx, rec.ID, o)
	require.NoError(t, err)
	require.NoError(t, ls.Sandbox.WriteFile(ctx, "f", []byte("kept")))
	require.NoError(t, ls.Close())

	ls, err = mgr.Attach(ctx, rec.ID, o)
	require.NoError(t, err)
	fork, _, err := mgr.Fork(ctx, ls, o)
	require.NoError(t, err)
	t.Cleanup(func() { mgr.Remove(context.Background(), fork.ID, o) })
	require.NoError(t, ls.Close())
	fs, err := mgr.Attach(ctx, fork.ID, o)
	require.NoError(t, err)
	res, err := fs.Sandbox.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "f"}})
	require.NoError(t, err)
	assert.Equal(t, "kept", string(res.Stdout), "the fork has the source's files")
	require.NoError(t, fs.Close())

	pr, err := mgr.Prune(ctx, o)
	require.NoError(t, err)
	assert.Empty(t, pr.Removed, "both are alive")
	for _, r := range []lifecycle.Record{rec, fork} {
		alive, err := mgr.Alive(ctx, r, o)
		require.NoError(t, err)
		assert.True(t, alive, r.ID)
		require.NoError(t, mgr.Remove(ctx, r.ID, o))
	}
	infos, err := oci.List(ctx, o.OCIConfig())
	require.NoError(t, err)
	assert.Empty(t, infos, "no container left")
	assertNothingLeft(t, mgr)
}
