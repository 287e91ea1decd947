//go:build linux && !sandboxer_portable

package local_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// TMPDIR, /tmp, /var/tmp and /dev/shm are size-capped file systems of the sandbox's, charged to
// its memory: a command that fills one (a call wrote 4 GiB into TMPDIR, on the host's /tmp, under
// a 2 GiB limit) gets no further than the sandbox's memory, and nothing of it lands on the host.
func TestTemporaryDirectoriesAreCappedAndNotTheHosts(t *testing.T) {
	requireLayers(t, local.LayerFSView, local.LayerLimits)
	// The helper lives in the sandbox's memory too: under -race it is this test binary with the
	// detector's shadow memory (tens of MiB), and half of 64 MiB full of files leaves it no room
	// (the OOM killer takes the commands, then the helper: "the isolation helper died").
	limit := int64(64 << 20)
	if raceDetector {
		limit = 256 << 20
	}
	sb := newIsolated(t, local.Config{Memory: limit})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo "$TMPDIR"`}})
	hostTmp := strings.TrimSpace(string(res.Stdout))
	require.True(t, strings.HasPrefix(filepath.Base(hostTmp), "sandboxer-tmp-"), hostTmp)
	for _, dir := range []string{"$TMPDIR", "/tmp", "/var/tmp", "/dev/shm"} {
		// Write four times the limit in 1 MiB blocks; print how many bytes are there in the end.
		script := `dd if=/dev/zero of="` + dir + `/fill" bs=1048576 count=` + strconv.FormatInt(4*limit>>20, 10) + ` 2>/dev/null; wc -c < "` + dir + `/fill"; rm -f "` + dir + `/fill"`
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", script}})
		n, err := strconv.ParseInt(strings.TrimSpace(string(res.Stdout)), 10, 64)
		if err == nil {
			assert.LessOrEqual(t, n, limit/2, "%s holds more than half the sandbox's memory", dir)
		} else {
			assert.Equal(t, 137, res.ExitCode, "%s: neither a short file nor the memory limit's kill: %q %q", dir, res.Stdout, res.Stderr)
		}
	}
	entries, err := os.ReadDir(hostTmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the host's TMPDIR got files")
}
