package oci_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
)

// memoryServer is a Python process that holds its state in memory only: a token drawn at its
// start, a counter, and mb MiB of random bytes. GET / answers "token count sha256-of-the-bytes"
// and counts; nothing of it is ever written to a file.
const memoryServer = `
import hashlib, http.server, os, sys
mb = int(sys.argv[1])
token = os.urandom(8).hex()
state = bytearray(os.urandom(mb << 20))
count = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global count
        count += 1
        body = ("%s %d %s\n" % (token, count, hashlib.sha256(state).hexdigest())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 8000), H)
print("ready", flush=True)
s.serve_forever()
`

// startMemoryServer starts memoryServer with mb MiB in sb and waits until it answers.
func startMemoryServer(t testing.TB, sb *oci.Sandbox, mb int) {
	t.Helper()
	ctx := ctxT(t)
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"python3", "-c", memoryServer, strconv.Itoa(mb)}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		o, err := p.Output(ctx, 0)
		return err == nil && strings.Contains(string(o.Stdout), "ready")
	}, time.Minute, 50*time.Millisecond)
}

// askMemoryServer asks the server in sb for its state: token, count, hash.
func askMemoryServer(t testing.TB, sb adapter.Sandbox) []string {
	t.Helper()
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Timeout: time.Minute, Args: []string{"python3", "-c",
		`import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8000/").read().decode(), end="")`}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	f := strings.Fields(string(res.Stdout))
	require.Len(t, f, 3, "%q", res.Stdout)
	return f
}

// restored restores dir in the shared state directory, stopped when the test ends.
func restored(t testing.TB, dir string) *oci.Sandbox {
	t.Helper()
	sb, err := oci.Restore(ctxT(t), oci.Config{StateDir: stateDir}, dir)
	require.NoError(t, err)
	track(sb.ID())
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

// TestCheckpointRestore (issue 38): a Python process holding its state in memory (a token drawn
// at its start, a counter, 16 MiB of random bytes) is checkpointed under gVisor; the source goes
// on where it was, and two sandboxes restored from the checkpoint each answer from that memory
// (the same token and bytes, the count going on from the checkpoint's), each independent of the
// other and of the source; the workspace and HOME come along as they were, later changes of the
// source's do not.
func TestCheckpointRestore(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runsc)
	sb := newSandbox(t, oci.Runsc, oci.Config{Image: debianImage(t)})
	require.Equal(t, 0, sh(t, sb, `echo kept > ws-file && echo home > "$HOME/home-file"`).ExitCode)
	startMemoryServer(t, sb, 16)
	before := askMemoryServer(t, sb) // count 1
	require.Equal(t, "1", before[1])

	dir := filepath.Join(t.TempDir(), "ck")
	require.NoError(t, sb.Checkpoint(ctxT(t), dir))
	// The source goes on.
	after := askMemoryServer(t, sb)
	assert.Equal(t, []string{before[0], "2", before[2]}, after)
	require.Equal(t, 0, sh(t, sb, `echo later > ws-file`).ExitCode)

	a, b := restored(t, dir), restored(t, dir)
	assert.NotEqual(t, a.ID(), b.ID())
	assert.Equal(t, []string{before[0], "2", before[2]}, askMemoryServer(t, a), "restored from memory: the same token and bytes, the count goes on")
	assert.Equal(t, []string{before[0], "3", before[2]}, askMemoryServer(t, a))
	assert.Equal(t, []string{before[0], "2", before[2]}, askMemoryServer(t, b), "independent of a")
	assert.Equal(t, []string{before[0], "3", before[2]}, askMemoryServer(t, sb), "independent of the restores")
	for _, r := range []*oci.Sandbox{a, b} {
		assert.Equal(t, "kept\nhome\n", string(sh(t, r, `cat ws-file "$HOME/home-file"`).Stdout), "the files at the checkpoint")
	}
	assert.Equal(t, "later\n", string(sh(t, sb, `cat ws-file`).Stdout))

	// A restored sandbox is a sandbox: it can be checkpointed in turn.
	again := filepath.Join(t.TempDir(), "again")
	require.NoError(t, a.Checkpoint(ctxT(t), again))
	assert.Equal(t, []string{before[0], "4", before[2]}, askMemoryServer(t, restored(t, again)))
}

// TestCheckpointRefusals: a directory that exists, files altered, added or removed in the
// checkpoint, an altered memory image, a checkpoint without its record (a Checkpoint that failed
// midway) and runc (no gVisor) are refused with their codes, and a refused Checkpoint leaves the
// sandbox running.
func TestCheckpointRefusals(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runsc)
	ctx := ctxT(t)
	sb := newSandbox(t, oci.Runsc, oci.Config{})
	exists := t.TempDir()
	err := sb.Checkpoint(ctx, exists)
	require.ErrorIs(t, err, errs.InvalidInput)
	assert.Contains(t, err.Error(), "exists")
	assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))

	require.Equal(t, 0, sh(t, sb, "echo mine > kept && mkdir d && echo x > d/y").ExitCode)
	dir := filepath.Join(t.TempDir(), "ck")
	require.NoError(t, sb.Checkpoint(ctx, dir))
	assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))

	// Files altered, added or removed in the checkpoint fail every restore, naming them, and
	// leave nothing behind (TestMain's leftover check).
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace", "kept"), []byte("forged\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "home", "planted"), nil, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "workspace", "d", "y")))
	_, err = oci.Restore(ctx, oci.Config{StateDir: stateDir}, dir)
	require.ErrorIs(t, err, errs.VerifyFailed)
	assert.Contains(t, err.Error(), "kept (differs)")
	assert.Contains(t, err.Error(), "d/y (missing)")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace", "kept"), []byte("mine\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace", "d", "y"), []byte("x\n"), 0o644))
	_, err = oci.Restore(ctx, oci.Config{StateDir: stateDir}, dir)
	require.ErrorIs(t, err, errs.VerifyFailed)
	assert.Contains(t, err.Error(), "planted (not in the checkpoint)")
	require.NoError(t, os.Remove(filepath.Join(dir, "home", "planted")))
	r, err := oci.Restore(ctx, oci.Config{StateDir: stateDir}, dir)
	require.NoError(t, err, "put back as it was: restored")
	track(r.ID())
	assert.Equal(t, "mine\nx\n", string(sh(t, r, "cat kept d/y").Stdout))
	require.NoError(t, r.Stop(ctx))

	image := filepath.Join(dir, "memory", "checkpoint.img")
	f, err := os.OpenFile(image, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff, 0xfe}, 4096)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = oci.Restore(ctx, oci.Config{StateDir: stateDir}, dir)
	require.ErrorIs(t, err, errs.VerifyFailed)
	assert.Contains(t, err.Error(), "memory image")

	require.NoError(t, os.Remove(filepath.Join(dir, "checkpoint.json")))
	_, err = oci.Restore(ctx, oci.Config{StateDir: stateDir}, dir)
	require.ErrorIs(t, err, errs.InvalidInput)
	assert.Contains(t, err.Error(), "not a whole checkpoint")

	needRuntime(t, oci.Runc)
	rc := newSandbox(t, oci.Runc, oci.Config{})
	rcDir := filepath.Join(t.TempDir(), "rc")
	err = rc.Checkpoint(ctx, rcDir)
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.Contains(t, err.Error(), "criu")
	assert.NoDirExists(t, rcDir)
}

// BenchmarkCheckpointRestore (issue 38's figure: a checkpoint and a restore of a sandbox running a
// Python process with 100 MB of state, each ≤ 2 s, the restored process answering from its
// memory). The baseline, in the same run, is what a restore saves: a new sandbox of the same
// image whose process builds the state afresh.
//
//	go test -run '^$' -bench CheckpointRestore -benchtime 3x ./adapter/oci/
func BenchmarkCheckpointRestore(b *testing.B) {
	needRuntime(b, oci.Runsc)
	img := debianImage(b)
	b.Run("baseline-new-and-start", func(b *testing.B) {
		for b.Loop() {
			sb, err := oci.New(ctxT(b), oci.Config{Runtime: oci.Runsc, StateDir: stateDir, Image: img})
			require.NoError(b, err)
			track(sb.ID())
			startMemoryServer(b, sb, 100)
			b.StopTimer()
			require.NoError(b, sb.Stop(context.Background()))
			b.StartTimer()
		}
	})
	sb := newSandbox(b, oci.Runsc, oci.Config{Image: img})
	startMemoryServer(b, sb, 100)
	want := askMemoryServer(b, sb)
	var dirs []string
	tmp := b.TempDir()
	b.Run("checkpoint", func(b *testing.B) {
		for b.Loop() {
			dir := filepath.Join(tmp, strconv.Itoa(len(dirs)))
			require.NoError(b, sb.Checkpoint(ctxT(b), dir))
			dirs = append(dirs, dir)
		}
	})
	dir := dirs[len(dirs)-1]
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			r, err := oci.Restore(ctxT(b), oci.Config{StateDir: stateDir}, dir)
			require.NoError(b, err)
			track(r.ID())
			b.StopTimer()
			got := askMemoryServer(b, r)
			assert.Equal(b, want[0], got[0], "the restored process answers from its memory")
			assert.Equal(b, want[2], got[2])
			require.NoError(b, r.Stop(context.Background()))
			b.StartTimer()
		}
	})
}
