//go:build linux && !sandboxer_portable

package local_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// System V IPC objects and the hostname are each sandbox's own: a segment one sandbox makes is
// seen neither by another sandbox nor by the host, a host segment is not seen inside, and the
// hostname is "sandbox" whatever the host's is.
func TestSysVIPCAndHostnameAreTheSandboxsOwn(t *testing.T) {
	requireLayers(t, local.LayerIPCNS, local.LayerUTSNS)
	needTool(t, "ipcmk")
	hostSize := hostSegment(t)
	before := hostSysV(t)
	a := newIsolated(t, local.Config{})
	b := newIsolated(t, local.Config{})
	res := run(t, a, adapter.Command{Args: []string{"sh", "-c", "ipcmk -M 1048576 && ipcs -m"}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.NotContains(t, string(res.Stdout), hostSize, "the host's segment is seen inside")
	assert.Equal(t, before, hostSysV(t), "the sandbox's segment is the host's")
	for _, sb := range []*local.Sandbox{a, b} {
		for _, network := range []bool{false, true} {
			res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", "cat /proc/sysvipc/shm /proc/sys/kernel/hostname"}, AllowNetwork: network})
			assert.NotContains(t, string(res.Stdout), hostSize)
			assert.True(t, strings.HasSuffix(string(res.Stdout), "\nsandbox\n"), "%s", res.Stdout)
			if sb == b || network {
				assert.NotContains(t, string(res.Stdout), " 1048576 ", "sandbox a's segment is seen elsewhere")
			}
		}
	}
}

// hostSegment makes a System V shared memory segment of a size no one else uses on the host,
// removed at the end of the test, and returns that size as /proc/sysvipc/shm and ipcs print it.
func hostSegment(t *testing.T) string {
	t.Helper()
	const size = "12347"
	out, err := exec.Command("ipcmk", "-M", size).CombinedOutput()
	require.NoError(t, err, "%s", out)
	id := strings.TrimSpace(strings.TrimPrefix(string(out), "Shared memory id:"))
	t.Cleanup(func() { _ = exec.Command("ipcrm", "-m", id).Run() })
	require.Contains(t, hostSysV(t), " "+size+" ")
	return " " + size + " "
}

// A command's cgroups are the root of every hierarchy it sees, v1 included (the limits of a hybrid
// host): /proc/self/cgroup names no cgroup of the host's, and not the owner's pid.
func TestCgroupPathsAreRelative(t *testing.T) {
	requireLayers(t, local.LayerLimits)
	sb := newIsolated(t, local.Config{})
	for _, network := range []bool{false, true} {
		res := run(t, sb, adapter.Command{Args: []string{"cat", "/proc/self/cgroup"}, AllowNetwork: network})
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
		require.NotEmpty(t, lines)
		for _, l := range lines {
			parts := strings.SplitN(l, ":", 3)
			require.Len(t, parts, 3, l)
			assert.NotContains(t, parts[2], "sandboxer-", "a host cgroup's name: %s", l)
			assert.NotContains(t, parts[2], strconv.Itoa(os.Getpid()), "the owner's pid: %s", l)
		}
	}
}
