//go:build linux

package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
)

// TestRootOnlyFilesStayRootOnly: run as root, commands are an unprivileged host uid (finding 10):
// a root-only file of a system directory that no deny rule names is unreadable, as is a file in a
// root-only directory; the workspace stays theirs to use, and what they create there is the
// caller's on disk.
func TestRootOnlyFilesStayRootOnly(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the caller is not root: commands run as the caller, as unprivileged as it")
	}
	requireLayers(t, local.LayerUnprivileged, local.LayerFSView)
	secret := filepath.Join("/etc", "sandboxer-dac-"+strconv.Itoa(os.Getpid()))
	require.NoError(t, os.WriteFile(secret, []byte("ROOT ONLY"), 0o600))
	t.Cleanup(func() { os.Remove(secret) })
	secretDir := secret + ".d"
	require.NoError(t, os.Mkdir(secretDir, 0o700))
	t.Cleanup(func() { os.RemoveAll(secretDir) })
	require.NoError(t, os.WriteFile(filepath.Join(secretDir, "open"), []byte("ROOT ONLY"), 0o644))

	sb := newIsolated(t, local.Config{})
	require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "mine.txt"), []byte("caller's\n"), 0o600))
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c",
		"cat " + secret + "; cat " + secretDir + "/open; cat /proc/self/uid_map; " +
			"cat mine.txt && echo more >> mine.txt && mkdir -p d && echo new > d/new.txt && echo wrote"}})
	assert.NotContains(t, string(res.Stdout), "ROOT ONLY")
	assert.Contains(t, string(res.Stderr), secret+": Permission denied")
	assert.Contains(t, string(res.Stderr), secretDir+"/open: Permission denied")
	assert.Regexp(t, `^\s*0\s+20000\d{5}\s+1\n`, strings.SplitAfter(string(res.Stdout), "\n")[0], "a sandbox uid (HostUID+1..)")
	assert.Contains(t, string(res.Stdout), "caller's\nwrote\n", "%s", res.Stderr)
	assert.Contains(t, res.Isolation.Layers, local.LayerUnprivileged)
	for _, p := range []string{"mine.txt", "d", "d/new.txt"} {
		fi, err := os.Stat(filepath.Join(sb.Dir(), p))
		require.NoError(t, err)
		assert.EqualValues(t, 0, fi.Sys().(*syscall.Stat_t).Uid, "%s is the caller's on disk", p)
	}
}

// Fail closed, and no failure remembered: where a writable directory cannot be idmapped (a
// ramfs), commands cannot run as an unprivileged uid, and every command is refused naming the
// layer, nothing run; the next command tries again, and runs once the obstacle is gone. Turning
// the layer off by name is the explicit way to run there (as the host's root, reported).
func TestUnprivilegedFailsClosedWithoutIdmap(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root (to mount a ramfs, and to run commands as HostUID at all)")
	}
	requireLayers(t, local.LayerUnprivileged, local.LayerFSView)
	extra := t.TempDir()
	require.NoError(t, unix.Mount("ramfs", extra, "ramfs", 0, "mode=0755"))
	mounted := true
	t.Cleanup(func() {
		if mounted {
			unix.Unmount(extra, unix.MNT_DETACH)
		}
	})

	sb := newIsolated(t, local.Config{WritePaths: []string{extra}})
	for range 2 {
		res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", "echo ran > ran.txt"}})
		require.ErrorIs(t, err, errs.IsolationUnavailable)
		assert.Contains(t, errs.As(err).Details["missing"], local.LayerUnprivileged)
		assert.Empty(t, res.Stdout)
		_, err = os.Stat(filepath.Join(sb.Dir(), "ran.txt"))
		require.ErrorIs(t, err, os.ErrNotExist, "a refused command ran")
	}
	require.NoError(t, unix.Unmount(extra, unix.MNT_DETACH))
	mounted = false
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", "echo x > " + extra + "/f && cat " + extra + "/f"}})
	assert.Equal(t, "x\n", string(res.Stdout), "%s", res.Stderr)
	assert.Contains(t, res.Isolation.Layers, local.LayerUnprivileged, "tried again, and in force")

	ramfs := t.TempDir()
	require.NoError(t, unix.Mount("ramfs", ramfs, "ramfs", 0, "mode=0755"))
	t.Cleanup(func() { unix.Unmount(ramfs, unix.MNT_DETACH) })
	optOut := newIsolated(t, local.Config{WritePaths: []string{ramfs}, DisableLayers: []string{local.LayerUnprivileged}})
	res = run(t, optOut, adapter.Command{Args: []string{"sh", "-c", "echo x > " + ramfs + "/f && cat " + ramfs + "/f"}})
	assert.Equal(t, "x\n", string(res.Stdout), "%s", res.Stderr)
	assert.NotContains(t, res.Isolation.Layers, local.LayerUnprivileged)
	assert.Contains(t, res.Isolation.Layers, local.LayerFSView)
}

// The private TMPDIR exists for commands whoever started the helper first: Capabilities (or
// DialPort) before any command once started it without making TMPDIR, and every command of that
// sandbox then found no TMPDIR.
func TestTmpdirWhenCapabilitiesCameFirst(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	sb := newIsolated(t, local.Config{})
	_ = sb.Capabilities()
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", `echo x > "$TMPDIR/f" && cat "$TMPDIR/f"`}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
	assert.Equal(t, "x\n", string(res.Stdout))
}
