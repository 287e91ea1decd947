package adaptertest

import (
	"context"
	"fmt"
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
	// One fill at a time in this process: the host's free space is shared.
	diskFill.Lock()
	defer diskFill.Unlock()
	before := freeBytes(t, hostDir)
	// Four times the cap, in MiB (dd stops at the first failed write): without the cap the host
	// would lose that much, well past the bound checked. HOME first: its write alone meets the
	// cap; the workspace's then finds the shared file system full.
	for _, c := range []struct {
		path  string
		bytes int64
	}{{"$HOME/fill", wsBytes}, {"/workspace/fill", wsBytes}, {"/tmp/fill", tmpBytes}} {
		res := run(fmt.Sprintf("dd if=/dev/zero of=%s bs=1048576 count=%d 2>&1; echo exit=$?; sync", c.path, 4*c.bytes>>20))
		out := string(res.Stdout)
		assert.Contains(t, out, "No space left on device", "%s: writing four times its cap", c.path)
		assert.NotContains(t, out, "exit=0", "%s: the write failed", c.path)
		syscall.Sync()
		after := freeBytes(t, hostDir)
		// Slack for what other tests and the host write meanwhile.
		assert.Less(t, before-after, wsBytes+wsBytes/4+32<<20,
			"%s: the host lost at most about the workspace's cap (%d bytes): %d", c.path, wsBytes, before-after)
	}
	res := run(`rm /workspace/fill "$HOME/fill" /tmp/fill && echo again > /workspace/again && cat /workspace/again`)
	assert.Equal(t, "again\n", string(res.Stdout), "the sandbox answers, with room again: %s", res.Stderr)
	run("rm -f /workspace/again")
}

// diskFill serializes CheckDiskFill.
var diskFill sync.Mutex

// freeBytes is the space an unprivileged user may still use on the file system of dir.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * int64(st.Bsize)
}
