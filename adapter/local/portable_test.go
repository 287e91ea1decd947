//go:build !linux || sandboxer_portable

package local_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
)

// The adapter as it is off Linux (macOS). On Linux these tests run with the sandboxer_portable
// tag, which builds the portable code in place of the Linux code (.ci/run does so):
//
//	go test -tags sandboxer_portable ./adapter/local

func TestPortableProbeHasNoLayer(t *testing.T) {
	t.Parallel()
	assert.False(t, local.KernelIsolation)
	rep := local.Probe()
	names := map[string]bool{}
	for _, l := range rep.Layers {
		names[l.Name] = true
		assert.False(t, l.Available, l.Name)
		assert.Contains(t, l.Reason, "needs Linux", l.Name)
	}
	for _, n := range []string{local.LayerUserNS, local.LayerPIDNS, local.LayerIPCNS, local.LayerUTSNS, local.LayerProc, local.LayerKeyring, local.LayerNoCaps,
		local.LayerNoSetuid, local.LayerFSView, local.LayerNetNS, local.LayerLandlock, local.LayerLandlockScope,
		local.LayerLandlockNet, local.LayerCgroup, local.LayerLimits, local.LayerPIDNSCommand, local.LayerUnprivileged} {
		assert.True(t, names[n], "Probe reports %s", n)
	}
	assert.False(t, rep.Network || rep.Filesystem || rep.ProcessTree)
	assert.Zero(t, rep.LandlockABI)
}

// With every layer turned off by name (and no limits), a command runs with a private TMPDIR, and
// its result says that nothing was enforced.
func TestPortableReportsNothingEnforced(t *testing.T) {
	t.Parallel()
	sb, err := local.New(local.Config{Root: t.TempDir(), Memory: local.NoLimit, Pids: local.NoLimit, DisableLayers: []string{
		local.LayerUserNS, local.LayerPIDNS, local.LayerIPCNS, local.LayerUTSNS, local.LayerProc, local.LayerFSView,
		local.LayerLandlock, local.LayerKeyring, local.LayerNoCaps, local.LayerNoSetuid, local.LayerNetNS,
		local.LayerLandlockNet, local.LayerLandlockScope, local.LayerUnprivileged, local.LayerUIDPerSandbox, local.LayerCgroup, local.LayerPIDNSCommand}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	c := sb.Capabilities()
	assert.Equal(t, adapter.FSNone, c.FSIsolation)
	assert.Equal(t, adapter.NetHost, c.Network)
	for _, allow := range []bool{false, true} {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo "$TMPDIR" && touch "$TMPDIR/x"`}, AllowNetwork: allow})
		assert.Equal(t, adapter.Isolation{}, res.Isolation, "network, filesystem, processTree and limits are all not enforced")
		tmp := strings.TrimSpace(string(res.Stdout))
		assert.Contains(t, tmp, "sandboxer-tmp-", "a private TMPDIR")
		assert.NotEqual(t, sb.Dir(), tmp)
	}
}

// Isolation on fails closed: every command is refused, with the code Linux uses for a missing
// layer, saying what each command would lack; nothing runs. RequireIsolation changes nothing.
func TestPortableFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	helper := []string{local.LayerUserNS, local.LayerPIDNS, local.LayerIPCNS, local.LayerUTSNS, local.LayerProc,
		local.LayerFSView, local.LayerLandlock, local.LayerKeyring, local.LayerNoCaps, local.LayerNoSetuid}
	root := func(l ...string) []string {
		if os.Geteuid() == 0 {
			return append(l, local.LayerUnprivileged, local.LayerUIDPerSandbox) // commands would be the host's root
		}
		return l
	}
	// With the network, unix-connect tells the sandbox's sockets by its own uid: root callers only.
	rootNet := func(l ...string) []string {
		if os.Geteuid() == 0 {
			return append(root(l...), local.LayerUnixConnect)
		}
		return l
	}
	for _, tc := range []struct {
		cfg   local.Config
		cmd   adapter.Command
		wants []string
	}{
		{local.Config{}, adapter.Command{}, slices.Concat(helper, root(local.LayerNetNS, local.LayerUnixConnect), []string{local.LayerLimits, "processTree"})},
		{local.Config{RequireIsolation: true}, adapter.Command{}, slices.Concat(helper, root(local.LayerNetNS, local.LayerUnixConnect), []string{local.LayerLimits, "processTree"})},
		{local.Config{Memory: local.NoLimit, Pids: local.NoLimit}, adapter.Command{AllowNetwork: true}, slices.Concat(helper, rootNet(local.LayerLandlockScope), []string{"processTree"})},
		{local.Config{DisableLayers: []string{local.LayerLimits, local.LayerFSView}}, adapter.Command{AllowNetwork: true},
			slices.Concat(slices.DeleteFunc(slices.Clone(helper), func(l string) bool { return l == local.LayerFSView }), rootNet(local.LayerLandlockScope), []string{"processTree"})},
	} {
		tc.cfg.Root = t.TempDir()
		sb, err := local.New(tc.cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sb.Stop(context.Background()) })
		tc.cmd.Args = []string{"sh", "-c", "echo ran > ran.txt; echo ran"}
		res, err := sb.ExecuteCommand(ctx, tc.cmd)
		require.ErrorIs(t, err, errs.IsolationUnavailable)
		assert.Contains(t, err.Error(), "needs Linux")
		var e *errs.Error
		require.True(t, errors.As(err, &e))
		assert.Equal(t, tc.wants, e.Details["missing"], "%+v", tc.cfg)
		assert.Empty(t, res.Stdout)
		assert.Equal(t, adapter.Isolation{}, res.Isolation)
		_, rerr := sb.ReadFile(ctx, "ran.txt")
		assert.ErrorIs(t, rerr, errs.NotFound, "a refused command must not run")
	}
}

// The process group is what ends a command here: a background child left in it dies when the
// command exits, and on a timeout the whole group goes.
func TestPortableProcessGroupKill(t *testing.T) {
	t.Parallel()
	sb := newIsolated(t, local.Config{})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", "sleep 60 & echo $!"}})
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 20*time.Millisecond, "the background child dies with its command")

	res, err = sb.ExecuteCommand(context.Background(), adapter.Command{
		Args: []string{"sh", "-c", "sleep 60 & echo $!; wait"}, Timeout: 300 * time.Millisecond})
	require.ErrorIs(t, err, errs.ProcessTimeout)
	pid, err = strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 20*time.Millisecond, "the group dies on timeout")
}

// gone reports whether pid has exited: no such process, or a zombie its new parent has not reaped
// yet (ps says so on Linux and macOS alike; an init that reaps orphans slowly is not the adapter's
// doing).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}
