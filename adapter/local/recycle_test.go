package local_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// Recycle hands a sandbox on only when nothing of the last call runs on, and never touches the
// workspace.
func TestRecycle(t *testing.T) {
	ctx := context.Background()
	for _, iso := range []string{local.IsolationAuto, local.IsolationOff} {
		t.Run(iso, func(t *testing.T) {
			// The workspace under the system's temporary directory, as the view's /tmp is: the
			// reset must see it as the view's mount, not as a file left in /tmp.
			sb := newIsolated(t, local.Config{Isolation: iso})
			require.NoError(t, sb.Recycle(ctx), "a new sandbox")
			require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "keep.txt"), []byte("kept"), 0o644))
			run(t, sb, adapter.Command{Args: []string{"sh", "-c", "echo hi > out.txt"}})
			require.NoError(t, sb.Recycle(ctx), "files in the workspace do not count")

			if iso == local.IsolationAuto && local.KernelIsolation { // without isolation, commands have no TMPDIR of their own
				run(t, sb, adapter.Command{Args: []string{"sh", "-c", `mkdir "${TMPDIR:?}/d" && echo x > "$TMPDIR/d/left" && chmod 777 "$TMPDIR"`}})
				require.NoError(t, sb.Recycle(ctx))
				res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `ls -A "$TMPDIR"; stat -c %a "$TMPDIR"`}})
				assert.Equal(t, "700\n", string(res.Stdout), "TMPDIR is made as new")
			}

			p, err := sb.Start(ctx, adapter.Command{Args: []string{"sleep", "30"}})
			require.NoError(t, err)
			assert.Error(t, sb.Recycle(ctx), "a background process")
			require.NoError(t, p.Signal(ctx, "KILL"))
			_, err = p.Wait(ctx)
			require.NoError(t, err)
			assert.Error(t, sb.Recycle(ctx), "an exited one too: the next call would list it")

			for name, want := range map[string]string{"keep.txt": "kept", "out.txt": "hi\n"} {
				b, err := os.ReadFile(filepath.Join(sb.Dir(), name))
				require.NoError(t, err)
				assert.Equal(t, want, string(b), "Recycle changed the workspace")
			}
			require.NoError(t, sb.Stop(ctx))
			assert.Error(t, sb.Recycle(ctx), "a stopped sandbox")
		})
	}
}

// leaveScript leaves in a sandbox what its next caller must not find: files, an empty directory,
// modes and times in its temporary directories, a System V shared memory segment and keys in its session and user keyrings (add_key(2) through python3's ctypes).
const leaveScript = `set -e
for d in /tmp /var/tmp /dev/shm "$TMPDIR"; do
	mkdir -p "$d/emptydir/sub"; echo x > "$d/left"; chmod 1700 "$d/emptydir"; touch -d 2001-01-01 "$d"
done
ipcmk -M 65536 >/dev/null
python3 -c '
import ctypes, platform
nr = {"x86_64": 248, "aarch64": 217}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
for ring in (-3, -4):
    if libc.syscall(nr, b"user", b"sandboxer-probe", b"secret", 6, ring) < 0:
        raise OSError(ctypes.get_errno(), "add_key")
'
`

// lookScript prints, for each temporary directory, its entries and its mode and time; then the
// number of System V shared memory segments, the hostname (commands cannot change it: they have
// no capability) and the number of keyrings (session, user) where keyctl(KEYCTL_SEARCH) finds the
// probe key.
const lookScript = `for d in /tmp /var/tmp /dev/shm "$TMPDIR"; do
	for e in "$d"/* "$d"/.[!.]*; do
		# what the view mounts there (the workspace, TMPDIR, this binary) is not the sandbox's
		[ -e "$e" ] && [ "$(stat -c %d "$e")" = "$(stat -c %d "$d")" ] && echo "$e"
	done
	stat -c '%a %Y' "$d"
done
ipcs -m | grep -c '^0x' || true
cat /proc/sys/kernel/hostname
python3 -c '
import ctypes, platform
nr = {"x86_64": 250, "aarch64": 219}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
print(sum(libc.syscall(nr, 10, ring, b"user", b"sandboxer-probe", 0) >= 0 for ring in (-3, -4)))
'`

// A recycled sandbox's next caller finds nothing of the last one's but the workspace. Each helper
// (with and without the network) has its own view, namespaces and keyrings; the host's System V
// objects stay as they were.
func TestRecycleRenewsWhatTheLastCallLeft(t *testing.T) {
	ctx := context.Background()
	// Without a view these would be the host's directories: look before writing anything.
	requireLayers(t, local.LayerFSView, local.LayerIPCNS, local.LayerUTSNS)
	sb := newIsolated(t, local.Config{})
	res := run(t, sb, adapter.Command{Args: []string{"true"}})
	require.Subset(t, res.Isolation.Layers, []string{local.LayerFSView, local.LayerIPCNS, local.LayerUTSNS})
	hostShm := hostSysV(t)
	for _, network := range []bool{false, true} {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", leaveScript}, AllowNetwork: network})
		require.Equal(t, 0, res.ExitCode, "%s%s", res.Stdout, res.Stderr)
		before := run(t, sb, adapter.Command{Args: []string{"sh", "-c", lookScript}, AllowNetwork: network}).Stdout
		require.Contains(t, string(before), "left", "the probe left files")
		// What the reset must remove is there before it: one segment, and the key in both rings.
		assert.True(t, strings.HasSuffix(string(before), "\n1\nsandbox\n2\n"), "%s", before)
		assert.Equal(t, hostShm, hostSysV(t), "the sandbox's segment is not the host's")

		require.NoError(t, sb.Recycle(ctx))
		after := run(t, sb, adapter.Command{Args: []string{"sh", "-c", lookScript}, AllowNetwork: network}).Stdout
		// The view's way to its mounts under /tmp (the workspace's and this binary's parents) stays.
		exe, err := os.Executable()
		require.NoError(t, err)
		lines := slices.DeleteFunc(strings.Split(strings.TrimSpace(string(after)), "\n"), func(l string) bool {
			return strings.HasPrefix(sb.Dir(), l+"/") || strings.HasPrefix(exe, l+"/")
		})
		require.Len(t, lines, 7, "one line per directory (no entries), then three: %s", after)
		for i, want := range []string{"1777", "1777", "1777", "700"} {
			mode, mtime, _ := strings.Cut(lines[i], " ")
			assert.Equal(t, want, mode, "directory %d: %s", i, after)
			sec, err := strconv.ParseInt(mtime, 10, 64)
			require.NoError(t, err)
			assert.Greater(t, sec, int64(1_000_000_000), "directory %d keeps the last call's time", i)
		}
		assert.Equal(t, []string{"0", "sandbox", "0"}, lines[4:], "IPC segments, hostname and keys of the last call")
	}
	assert.Equal(t, hostShm, hostSysV(t), "the host's System V shared memory did not change")
}

// hostSysV lists the host's System V shared memory segments (this process's IPC namespace).
func hostSysV(t *testing.T) string {
	b, err := os.ReadFile("/proc/sysvipc/shm")
	require.NoError(t, err)
	return string(b)
}
