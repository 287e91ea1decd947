package workspace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter/workspace"
)

// A bind mount of / is / by identity (device and inode), wherever it is mounted.
func TestBindMountOfRootIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, unix.Mount("/", mnt, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	refused(t, workspace.RuleSystem, mnt)
}
