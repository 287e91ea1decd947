//go:build linux && !sandboxer_portable

package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 33, item 11: where cgroup v2 has the memory and pids controllers (a v2-only host), a
// sandbox's cgroup gets them, wherever this process stands: in the root cgroup, alone in a
// service's cgroup (it moves into a leaf of its own), or beside a login shell in a session's scope
// (an ancestor's subtree). The limits are set there, and the v1 hierarchies are not needed.
// .ci/vm.sh runs it in each of these places; on a hybrid host (v1 memory) it skips.
func TestLimitsComeFromCgroupV2(t *testing.T) {
	mnt, err := cgroup2Mount()
	if err != nil || !controllersIn(filepath.Join(mnt, "cgroup.controllers")) {
		t.Skip("cgroup v2 has no memory and pids controllers here (hybrid host: the limits are v1's)")
	}
	parent, err := cgroupParent()
	require.NoError(t, err)
	own, _ := os.ReadFile("/proc/self/cgroup") // after cgroupParent, which may move this process
	t.Logf("this process: %s; sandboxes' cgroups in %s", strings.TrimSpace(string(own)), parent)
	p := newCgroupPool(-1)
	require.NotNil(t, p, "a sandbox's cgroup under %s", parent)
	defer p.close()
	assert.True(t, controllersIn(filepath.Join(p.base, "cgroup.controllers")), "the sandbox's cgroup has the controllers")

	l, err := newLimitGroups(limitValues{memory: 96 << 20, pids: 64}, p)
	require.NoError(t, err)
	defer l.release()
	assert.Empty(t, l.dirs, "no v1 cgroup")
	for file, want := range map[string]string{"memory.max": "100663296", "pids.max": "64"} {
		got, err := os.ReadFile(filepath.Join(p.base, file))
		require.NoError(t, err)
		assert.Equal(t, want, strings.TrimSpace(string(got)), file)
	}
	// A process's own cgroup holds no process once it passes controllers on (the root excepted).
	ownDir := filepath.Join(mnt, strings.TrimSpace(strings.TrimPrefix(string(own), "0::")))
	if parent != mnt && parent == ownDir {
		t.Fatalf("this process is still in %s, which passes the controllers on", parent)
	}
}
