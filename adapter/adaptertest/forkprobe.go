package adaptertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// SwapToLinkLoop is a hostile command for the fork tests of adapters that copy a workspace on the
// host (sh -c SwapToLinkLoop sh TARGET): forever, it renames the workspace's file f away, puts a
// symbolic link to TARGET (a host file) in its place, and puts the file back.
const SwapToLinkLoop = `while :; do mv -f -T f .f; ln -sfn "$1" .l; mv -f -T .l f; mv -f -T .f f; done`

// RequireNoFileHolds walks the host directory dir without following links and fails t when a
// regular file there holds content (a small host file's content copied in through a link; files
// above 1 MiB, such as a sparse file of the test, are not read). It returns how many symbolic
// links it saw.
func RequireNoFileHolds(t testing.TB, dir, content string) (links int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type() == os.ModeSymlink {
			links++
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.Size() > 1<<20 {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.False(t, strings.Contains(string(data), content), "%s holds %q", p, content)
		return nil
	})
	require.NoError(t, err)
	return links
}
