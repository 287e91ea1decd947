//go:build linux && !sandboxer_portable

package local

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
)

// The probe (what doctor prints) judges the layers on a workspace of its own, as a sandbox has:
// a mount an idmapped mount cannot take (here a proc instance, as another tool's namespace files
// or overlays) in the system's temporary directory does not make it report `unprivileged`
// missing while every sandbox has it.
func TestProbeIgnoresMountsInTheTempDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("idmapped mounts need root")
	}
	layer := func(r Report, name string) LayerStatus {
		for _, l := range r.Layers {
			if l.Name == name {
				return l
			}
		}
		t.Fatalf("no layer %s in the report", name)
		return LayerStatus{}
	}
	// Whether a sandbox has the layer here decides what the probe must say.
	sb, err := New(Config{Root: t.TempDir()})
	require.NoError(t, err)
	defer sb.Stop(context.Background())
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"true"}})
	require.NoError(t, err)
	if !slices.Contains(res.Isolation.Layers, LayerUnprivileged) {
		t.Skip("a sandbox has no unprivileged layer here:", res.Isolation.Layers)
	}
	dir, err := os.MkdirTemp("", "probe-mount-")
	require.NoError(t, err)
	require.NoError(t, unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""))
	t.Cleanup(func() {
		assert.NoError(t, unix.Unmount(dir, unix.MNT_DETACH))
		assert.NoError(t, os.Remove(dir))
	})
	l := layer(probe(), LayerUnprivileged)
	assert.True(t, l.Available, "with a proc mount in %s: %s", os.TempDir(), l.Reason)
}
