package adaptertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
)

// CheckDiskFill fills the workspace, HOME and /tmp of sb from inside, as a hostile command would
// (issue 34, item 5: a sandbox wrote 3 GiB to the host's root file system): sb's /workspace and
// its HOME share one cap of wsBytes and its /tmp is capped at tmpBytes; hostDir is a directory on
// the host file system that holds the workspace's storage. Each write past a cap must end in "No space left on device",
// the host's file system must lose at most about the cap (free space from statfs of hostDir,
// before and after), and the sandbox must still answer, with room again once the file is gone.
//
// The host's free space is shared with everything else the machine does, other test packages
// included (go test runs them as parallel processes): fills are serialized across processes by
// a lock file, and each write is sixteen times the cap, so a write the cap does not stop costs
// the host a gibibyte where a stopped one costs the cap, and the bound leaves room for what
// others write meanwhile.
func CheckDiskFill(t *testing.T, sb adapter.Sandbox, wsBytes, tmpBytes int64, hostDir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(script string) adapter.Result {
		t.Helper()
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", script}, Timeout: time.Minute})
		require.NoError(t, err, script)
		return res
	}
	defer lockDiskFill(t)()
	before := freeBytes(t, hostDir)
	// Sixteen times the cap, in MiB (dd stops at the first failed write); /tmp is memory, four
	// times its size. HOME first: its write alone meets the cap; the workspace's then finds the
	// shared file system full.
	for _, c := range []struct {
		path  string
		bytes int64
	}{{"$HOME/fill", 16 * wsBytes}, {"/workspace/fill", 16 * wsBytes}, {"/tmp/fill", 4 * tmpBytes}} {
		res := run(fmt.Sprintf("dd if=/dev/zero of=%s bs=1048576 count=%d 2>&1; echo exit=$?; sync", c.path, c.bytes>>20))
		out := string(res.Stdout)
		assert.Contains(t, out, "No space left on device", "%s: writing four times its cap", c.path)
		assert.NotContains(t, out, "exit=0", "%s: the write failed", c.path)
		syscall.Sync()
		after := freeBytes(t, hostDir)
		// Slack for what other tests and the host write meanwhile.
		assert.Less(t, before-after, wsBytes+256<<20,
			"%s: the host lost at most about the workspace's cap (%d bytes): %d", c.path, wsBytes, before-after)
	}
	res := run(`rm /workspace/fill "$HOME/fill" /tmp/fill && echo again > /workspace/again && cat /workspace/again`)
	assert.Equal(t, "again\n", string(res.Stdout), "the sandbox answers, with room again: %s", res.Stderr)
	run("rm -f /workspace/again")
}

// diskFill serializes CheckDiskFill in this process; lockDiskFill adds a lock file for the others.
var diskFill sync.Mutex

// lockDiskFill takes the fill lock of this process and of every test process on the machine,
// and returns its release.
func lockDiskFill(t *testing.T) func() {
	t.Helper()
	diskFill.Lock()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "sandboxer-test-diskfill.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		diskFill.Unlock()
		require.NoError(t, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		diskFill.Unlock()
		require.NoError(t, err)
	}
	return func() {
		f.Close() // releases the flock
		diskFill.Unlock()
	}
}

// freeBytes is the space an unprivileged user may still use on the file system of dir.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * int64(st.Bsize)
}
