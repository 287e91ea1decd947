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

// TestUnprivilegedFallsBackWithoutIdmap: a writable directory on a file system without idmapped
// mounts (ramfs) keeps the sandbox usable with the host's root, reports the layer missing, and
// fails closed under RequireIsolation.
func TestUnprivilegedFallsBackWithoutIdmap(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root (to mount a ramfs, and to run commands as HostUID at all)")
	}
	requireLayers(t, local.LayerUnprivileged, local.LayerFSView)
	extra := t.TempDir()
	require.NoError(t, unix.Mount("ramfs", extra, "ramfs", 0, "mode=0755"))
	t.Cleanup(func() { unix.Unmount(extra, unix.MNT_DETACH) })

	sb := newIsolated(t, local.Config{WritePaths: []string{extra}})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", "echo x > " + extra + "/f && cat " + extra + "/f"}})
	assert.Equal(t, "x\n", string(res.Stdout), "%s", res.Stderr)
	assert.NotContains(t, res.Isolation.Layers, local.LayerUnprivileged)
	assert.Contains(t, res.Isolation.Layers, local.LayerFSView)

	strict := newIsolated(t, local.Config{WritePaths: []string{extra}, RequireIsolation: true})
	_, err := strict.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"true"}})
	require.ErrorIs(t, err, errs.IsolationUnavailable)
	assert.Contains(t, err.Error(), local.LayerUnprivileged)
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
