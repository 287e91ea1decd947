//go:build linux && !sandboxer_portable

package local_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
)

// usage is what the tree at dir takes on disk (allocated blocks, delayed allocations included).
func usage(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err == nil {
			n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return err
	}))
	return n
}

// fill writes up to 64 MiB into the workspace file name, and says what the command printed.
const fill = `dd if=/dev/zero of="$1" bs=1048576 count=64 2>&1; echo "exit=$?"`

// escape is a hostile command's attempts to leave the workspace's project: change the project id
// and the inherit flag of everything (chattr's FS_IOC_FSSETXATTR), and rename or link a file into
// the directory "other" (of another project, where the test made one).
const escape = `chattr -R -p 0 . 2>&1 && echo ESCAPED-p; chattr -R -P . 2>&1 && echo ESCAPED-P
python3 -c '
import errno, os
for op, dst in (("rename", "other/moved"), ("link", "other/linked")):
    try:
        getattr(os, op)("f", dst)
        print("ESCAPED-" + op)
    except OSError as e:
        print(op, errno.errorcode[e.errno])
'`

// Config.Disk caps what the sandbox adds to its workspace, where project quotas are enforced:
// a command writing 64 MiB under a 16 MiB cap gets EDQUOT and the workspace grows by 16 MiB at
// most, files by one per 4 KiB; what the workspace held before counts as its baseline and keeps
// working, and what commands delete makes room again. A hostile command cannot take its files out
// of the project. Stop gives the workspace back as it was (project 0), and a new sandbox of it, as
// a recycled one, has a fresh budget.
func TestDiskCapsWhatTheWorkspaceAdds(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	needTool(t, "python3")
	ws := filepath.Join(local.QuotaFS(t), "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	old := make([]byte, 8<<20)
	old[0] = 'x'
	require.NoError(t, os.WriteFile(filepath.Join(ws, "old.bin"), old, 0o644))
	const disk = 16 << 20
	sb, err := local.New(local.Config{Root: ws, Disk: disk})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = sb.Stop(context.Background())
		}
	})

	before := usage(t, ws)
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", fill, "sh", "fill"}})
	assert.Contains(t, string(res.Stdout), "Disk quota exceeded")
	assert.NotContains(t, string(res.Stdout), "exit=0")
	assert.Contains(t, res.Isolation.Layers, local.LayerDisk)
	grown := usage(t, ws) - before
	assert.LessOrEqual(t, grown, int64(disk+1<<20), "the workspace grew past the cap")
	assert.GreaterOrEqual(t, grown, int64(disk-1<<20), "the cap is what may be added, the baseline aside")
	id, inherit, err := local.ProjectOf(ws)
	require.NoError(t, err)
	assert.Greater(t, id, uint32(local.ProjectBase))
	assert.True(t, inherit)

	// The baseline keeps working; deleting makes room.
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `wc -c < old.bin && rm fill && dd if=/dev/zero of=f bs=1048576 count=4 2>/dev/null && echo wrote`}})
	assert.Equal(t, "8388608\nwrote\n", string(res.Stdout), "%s", res.Stderr)

	// Inodes: one per 4 KiB of the cap. (touch goes on past a failure; a shell's redirection
	// that fails ends the shell.)
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `seq 0 19999 | sed 's/^/n/' | xargs touch 2>/dev/null; ls | grep -c '^n[0-9]*$'`}})
	made, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	require.NoError(t, err, "%q %q", res.Stdout, res.Stderr)
	assert.InDelta(t, disk/4096, made, 16, "files made under a cap of %d inodes", disk/4096)
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `rm -f n*`}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)

	// A hostile command tries to leave the project, then to write past the cap.
	require.NoError(t, os.Mkdir(filepath.Join(ws, "other"), 0o755))
	require.NoError(t, local.SetProject(filepath.Join(ws, "other"), id+1))
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", escape + "\n" + fill, "sh", "fill2"}})
	assert.NotContains(t, string(res.Stdout), "ESCAPED")
	assert.Contains(t, string(res.Stdout), "rename EXDEV")
	assert.Contains(t, string(res.Stdout), "Disk quota exceeded")
	for _, p := range []string{"", "old.bin", "f", "fill2"} {
		got, _, err := local.ProjectOf(filepath.Join(ws, p))
		require.NoError(t, err)
		assert.Equal(t, id, got, "project of %s", p)
	}
	require.NoError(t, os.Remove(filepath.Join(ws, "other")))

	// A recycled sandbox's call has the whole budget again.
	require.NoError(t, sb.Recycle(context.Background()))
	before = usage(t, ws)
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", fill, "sh", "fill3"}})
	assert.Contains(t, string(res.Stdout), "Disk quota exceeded")
	assert.InDelta(t, disk, usage(t, ws)-before, 1<<20)

	// Stop gives the workspace back as it was; a new sandbox has a fresh budget.
	require.NoError(t, sb.Stop(context.Background()))
	stopped = true
	for _, p := range []string{"", "old.bin", "f", "fill2", "fill3"} {
		got, inh, err := local.ProjectOf(filepath.Join(ws, p))
		require.NoError(t, err)
		assert.Equal(t, uint32(0), got, "project of %s after Stop", p)
		assert.False(t, inh, "inherit flag of %s after Stop", p)
	}
	leases, err := local.ProjectLeaseDir()
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(leases, strconv.Itoa(int(id))))
	again := newIsolated(t, local.Config{Root: ws, Disk: disk})
	before = usage(t, ws)
	res = run(t, again, adapter.Command{Args: []string{"sh", "-c", fill, "sh", "fill4"}})
	assert.Contains(t, string(res.Stdout), "Disk quota exceeded")
	assert.InDelta(t, disk, usage(t, ws)-before, 1<<20)
}

// Where the workspace's file system does not enforce project quotas (or the caller is not root),
// Config.Disk fails closed: every command is refused, naming the layer and why, nothing run.
// Turning the layer off by name runs commands, and their results do not claim it; doctor lists it.
func TestDiskFailsClosedWhereItCannotBeEnforced(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	ws := t.TempDir()
	if err := local.QuotaUsable(ws); err == nil {
		t.Skipf("%s enforces project quotas: nothing to refuse", ws)
	}
	sb := newIsolated(t, local.Config{Root: ws, Disk: 16 << 20})
	for range 2 {
		res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", "echo ran > ran.txt"}})
		require.ErrorIs(t, err, errs.IsolationUnavailable)
		assert.Contains(t, errs.As(err).Details["missing"], local.LayerDisk)
		assert.ErrorContains(t, err, "disk: ")
		assert.Contains(t, err.Error(), "project quotas")
		assert.Empty(t, res.Stdout)
		assert.NoFileExists(t, filepath.Join(ws, "ran.txt"), "a refused command ran")
	}

	optOut := newIsolated(t, local.Config{Root: t.TempDir(), Disk: 16 << 20, DisableLayers: []string{local.LayerDisk}})
	res := run(t, optOut, adapter.Command{Args: []string{"sh", "-c", "echo ran"}})
	assert.Equal(t, "ran\n", string(res.Stdout), "%s", res.Stderr)
	assert.NotContains(t, res.Isolation.Layers, local.LayerDisk)

	var listed bool
	for _, l := range local.Probe().Layers {
		listed = listed || l.Name == local.LayerDisk
	}
	assert.True(t, listed, "doctor lists the disk layer")
}

// The ground the disk layer stands on, checked from inside wherever files have project ids: a
// command cannot change its files' project id or inherit flag, nor rename or link a file into a
// directory of another project (the kernel refuses both in a user namespace, quotas or not).
func TestCommandsCannotLeaveTheirProject(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	needTool(t, "python3")
	ws := filepath.Join(local.ProjectFS(t), "ws")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "d"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(ws, "other"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644))
	const id, otherID = local.ProjectBase + 40000, local.ProjectBase + 40001
	for _, p := range []string{"", "d", "f"} {
		require.NoError(t, local.SetProject(filepath.Join(ws, p), id))
	}
	require.NoError(t, local.SetProject(filepath.Join(ws, "other"), otherID))

	sb := newIsolated(t, local.Config{Root: ws})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", escape}})
	assert.NotContains(t, string(res.Stdout), "ESCAPED")
	assert.Contains(t, string(res.Stdout), "rename EXDEV", "%s", res.Stderr)
	assert.Contains(t, string(res.Stdout), "link EXDEV")
	for p, want := range map[string]uint32{"": id, "d": id, "f": id, "other": otherID} {
		got, inherit, err := local.ProjectOf(filepath.Join(ws, p))
		require.NoError(t, err)
		assert.Equal(t, want, got, "project of %q", p)
		assert.Equal(t, p != "f", inherit, "inherit flag of %q", p)
	}
	entries, err := os.ReadDir(filepath.Join(ws, "other"))
	require.NoError(t, err)
	assert.Empty(t, entries)
	require.FileExists(t, filepath.Join(ws, "f"))
}
