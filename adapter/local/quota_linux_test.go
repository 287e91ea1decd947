//go:build linux && !sandboxer_portable

package local

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// projectFS is a workspace ws on a file system with project ids (no quotas needed: these tests
// tag and lease, they set no limit), and a directory outside it on the same file system.
func projectFS(t *testing.T) (ws, outside string) {
	m := ProjectFS(t)
	ws, outside = filepath.Join(m, "ws"), filepath.Join(m, "outside")
	require.NoError(t, os.Mkdir(ws, 0o755))
	require.NoError(t, os.Mkdir(outside, 0o755))
	return ws, outside
}

func openDir(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func assertProject(t *testing.T, p string, id uint32, inherit bool) {
	t.Helper()
	got, inh, err := ProjectOf(p)
	require.NoError(t, err)
	assert.Equal(t, id, got, "project of %s", p)
	assert.Equal(t, inherit, inh, "inherit flag of %s", p)
}

// The workspace's directories and regular files get the project, directories with the inherit
// flag (so what is made there later is the project's); links are not followed (what they lead
// to outside keeps its project), FIFOs are not opened (the walk would hang); untagging gives
// everything back to project 0.
func TestTagTreeTagsTheWorkspaceOnly(t *testing.T) {
	ws, outside := projectFS(t)
	for _, d := range []string{"d", "d/e"} {
		require.NoError(t, os.Mkdir(filepath.Join(ws, d), 0o755))
	}
	for _, f := range []string{"a.txt", "d/b.txt", "../outside/o.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "o.txt"), filepath.Join(ws, "link")))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "dlink")))

	const id = ProjectBase + 7
	require.NoError(t, tagTree(openDir(t, ws), id))
	for _, d := range []string{"", "d", "d/e"} {
		assertProject(t, filepath.Join(ws, d), id, true)
	}
	for _, f := range []string{"a.txt", "d/b.txt"} {
		assertProject(t, filepath.Join(ws, f), id, false)
	}
	assertProject(t, outside, 0, false)
	assertProject(t, filepath.Join(outside, "o.txt"), 0, false)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "d/e/new.txt"), []byte("x"), 0o644))
	assertProject(t, filepath.Join(ws, "d/e/new.txt"), id, false)

	require.NoError(t, untagTree(openDir(t, ws), id))
	for _, p := range []string{"", "d", "d/e", "a.txt", "d/b.txt", "d/e/new.txt"} {
		assertProject(t, filepath.Join(ws, p), 0, false)
	}
}

// What a project of the workspace's could not cap is refused: a file of an administrator's
// project (left as it is), and another file system mounted inside the workspace (which untagging
// passes by).
func TestTagTreeRefusesWhatItCannotCap(t *testing.T) {
	ws, _ := projectFS(t)
	admin := filepath.Join(ws, "admin.txt")
	require.NoError(t, os.WriteFile(admin, []byte("x"), 0o644))
	require.NoError(t, SetProject(admin, 7))
	err := tagTree(openDir(t, ws), ProjectBase+7)
	require.ErrorContains(t, err, "project 7")
	assertProject(t, admin, 7, false)
	require.NoError(t, os.Remove(admin))

	mnt := filepath.Join(ws, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	require.ErrorIs(t, tagTree(openDir(t, ws), ProjectBase+7), errOtherFS)
	require.NoError(t, untagTree(openDir(t, ws), ProjectBase+7))
	assertProject(t, ws, 0, false)
}

// Sandboxes of one workspace running at once share its project: the second joins the first's,
// the first to stop leaves the workspace in it, the last gives it back to project 0 and frees
// the id. A dead owner's lease is the janitor's to clear the same way.
func TestProjectLeaseIsSharedAndClearedByTheLast(t *testing.T) {
	ws, _ := projectFS(t)
	lease := func() *diskQuota {
		l, err := leaseProject(openDir(t, ws))
		require.NoError(t, err)
		q := &diskQuota{lease: l, root: ws}
		t.Cleanup(func() { _ = q.release() })
		return q
	}
	a := lease()
	assertProject(t, ws, uint32(a.lease.id), true)
	b := lease()
	require.Equal(t, a.lease.id, b.lease.id, "the second sandbox of the workspace joins its project")
	_ = a.release() // the limit cannot be lifted here (no quotas): what is checked is the tags and the lock file
	assertProject(t, ws, uint32(a.lease.id), true)
	require.FileExists(t, a.lease.path())
	_ = b.release()
	assertProject(t, ws, 0, false)
	require.NoFileExists(t, a.lease.path(), "the id is free again")

	c := lease()
	path := c.lease.path()
	c.lease.file.Close() // its owner died: the kernel dropped the lock
	removeStaleLease(path, clearStaleProject)
	assertProject(t, ws, 0, false)
	require.NoFileExists(t, path)
}
