package cgstat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
)

// The cgroups of this process are found, and a command run in them shows in the CPU time.
func TestReceiptOwnCgroup(t *testing.T) {
	g := ForPID(os.Getpid())
	if g.Zero() {
		t.Skip("this process is in no cgroup this process can see")
	}
	m := Begin(g)
	require.NoError(t, exec.Command("sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done").Run())
	var r adapter.Receipt
	m.End(&r)
	if r.CPUUs != nil {
		assert.Positive(t, *r.CPUUs, "a busy loop's CPU time")
	}
	// ForPath finds the same directories from a path below each hierarchy's root.
	for _, d := range []string{g.V2, g.Memory, g.CPUAcct} {
		if d != "" {
			assert.DirExists(t, d)
		}
	}
	assert.Equal(t, Group{}, ForPID(-1))
}

// BenchmarkMeter is what the receipt's cgroup reads cost one command (Begin and End), on a new
// empty cgroup v2 (as local's per-command ones) and a new v1 memory cgroup where this process
// may make them, next to a bare read of one cgroup file in the same run.
//
//	go test -run '^$' -bench Meter ./adapter/internal/cgstat/
func BenchmarkMeter(b *testing.B) {
	var g Group
	for _, m := range mounts() {
		if !m.V2 && !slices.Contains(m.Controllers, "memory") {
			continue
		}
		dir := filepath.Join(m.Dir, fmt.Sprintf("sandboxer-bench-%d", os.Getpid()))
		if os.Mkdir(dir, 0o755) != nil {
			continue
		}
		b.Cleanup(func() { os.Remove(dir) })
		g.set(m, dir)
	}
	if g.Zero() {
		b.Skip("cannot make a cgroup")
	}
	b.Logf("%+v", g)
	b.Run("bare-read", func(b *testing.B) {
		for b.Loop() {
			cpuUs(g)
		}
	})
	b.Run("begin+end", func(b *testing.B) {
		for b.Loop() {
			var r adapter.Receipt
			Begin(g).End(&r)
		}
	})
}
