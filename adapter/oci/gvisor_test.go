package oci_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
)

// runscCmdlines returns the command lines of the processes whose arguments name dir (runsc's
// sandbox and gofer carry their --root).
func runscCmdlines(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir+"/") {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// gVisor's platform is decided once, as this host allows: kvm where /dev/kvm exists and a probe
// sandbox runs on it, else runsc's default; the sandboxes of the state directory run on it (the
// runsc sandbox process carries it).
func TestPlatformDecision(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runsc)
	ctx := ctxT(t)
	state := ownStateDir(t)
	def := oci.RunscDefaultPlatform(ctx)
	require.NotEmpty(t, def)
	start := time.Now()
	c, err := oci.ProbePlatform(ctx, oci.Config{StateDir: state}, "", "", 0, nil, false)
	require.NoError(t, err)
	t.Logf("decision: %s, in %v", c, time.Since(start))
	assert.Less(t, time.Since(start), oci.DefaultPlatformProbeTimeout+30*time.Second, "bounded")
	if _, err := os.Stat("/dev/kvm"); err != nil {
		assert.Equal(t, def, c.Platform, "no KVM here: runsc's default")
		assert.Equal(t, "kvm: /dev/kvm absent", c.Reason)
		assert.True(t, c.Probed.IsZero(), "nothing to probe")
	} else {
		assert.False(t, c.Probed.IsZero(), "/dev/kvm exists: probed")
		if c.Platform == oci.PlatformKVM {
			assert.Contains(t, c.Reason, "a probe sandbox ran")
		} else {
			assert.Equal(t, def, c.Platform)
			assert.Contains(t, c.Reason, "/dev/kvm present but")
		}
		again, err := oci.ProbePlatform(ctx, oci.Config{StateDir: state}, "", "", 0, nil, false)
		require.NoError(t, err)
		assert.True(t, again.Cached, "the decision is kept")
		assert.Equal(t, c.Platform, again.Platform)
	}
	assert.Empty(t, oci.ProbeLeftovers(state))

	sb := newSandbox(t, oci.Runsc, oci.Config{StateDir: state})
	assert.Equal(t, c.Platform, sb.Platform())
	found := false
	for _, line := range runscCmdlines(state) {
		if strings.Contains(line, " boot ") {
			// runsc passes its sandbox process the flags that differ from its defaults.
			running := def
			if _, after, ok := strings.Cut(line, "--platform="); ok {
				running, _, _ = strings.Cut(after, " ")
			}
			assert.Equal(t, c.Platform, running, "the sandbox process runs on the decided platform: %s", line)
			found = true
		}
	}
	assert.True(t, found, "the runsc sandbox process of %s", sb.ID())
	assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))
}

// A device that exists but is no KVM (/dev/null in place of /dev/kvm): the real runsc fails on
// it, the decision is runsc's default with runsc's reason, kept for later sandboxes, and nothing
// of the probe is left.
func TestPlatformProbeFails(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runsc)
	ctx := ctxT(t)
	state := t.TempDir()
	def := oci.RunscDefaultPlatform(ctx)
	start := time.Now()
	c, err := oci.ProbePlatform(ctx, oci.Config{StateDir: state}, "", "/dev/null", 0, nil, false)
	require.NoError(t, err)
	t.Logf("decision: %s, in %v", c, time.Since(start))
	assert.Equal(t, def, c.Platform)
	assert.Contains(t, c.Reason, "kvm: /dev/null present but a probe sandbox failed")
	assert.False(t, c.Probed.IsZero())
	assert.False(t, c.Cached)
	assert.Empty(t, oci.ProbeLeftovers(state))

	again, err := oci.ProbePlatform(ctx, oci.Config{StateDir: state}, "", "/dev/null", 0, nil, false)
	require.NoError(t, err)
	assert.True(t, again.Cached, "kept in the state directory")
	assert.Equal(t, c.Platform, again.Platform)
	assert.Equal(t, c.Reason, again.Reason)
	fresh, err := oci.ProbePlatform(ctx, oci.Config{StateDir: state}, "", "/dev/null", 0, nil, true)
	require.NoError(t, err)
	assert.False(t, fresh.Cached, "doctor probes afresh")
	assert.True(t, fresh.Probed.After(c.Probed))
	assert.Empty(t, oci.ProbeLeftovers(state))
}

// The probe's bound, with a probe sandbox that really runs and never ends (its agent idles): it
// is killed at the bound, every process of it is gone, the runtime has no container of it, its
// directory is removed, and the decision is runsc's default. The same probe with a command that
// ends decides the probed platform.
func TestPlatformProbeBounded(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runsc)
	ctx := ctxT(t)
	state := t.TempDir()
	def := oci.RunscDefaultPlatform(ctx)
	const bound = 3 * time.Second
	start := time.Now()
	c, err := oci.ProbePlatform(ctx, oci.Config{StateDir: state}, oci.PlatformPtrace, "/dev/null", bound, []string{"-init", "-idle"}, false)
	took := time.Since(start)
	require.NoError(t, err)
	t.Logf("decision: %s, in %v", c, took)
	assert.Equal(t, def, c.Platform)
	assert.Contains(t, c.Reason, "did not run in 3s (killed)")
	assert.GreaterOrEqual(t, took, bound)
	assert.Less(t, took, bound+20*time.Second, "the kill and the clean-up are bounded too")
	assert.Empty(t, oci.ProbeLeftovers(state))
	assert.Empty(t, runscCmdlines(state), "no process of the probe is left")

	c, err = oci.ProbePlatform(ctx, oci.Config{StateDir: state}, oci.PlatformPtrace, "/dev/null", 0, nil, true)
	require.NoError(t, err)
	assert.Equal(t, oci.PlatformPtrace, c.Platform, "%s", c.Reason)
	assert.Contains(t, c.Reason, "ptrace: a probe sandbox ran on /dev/null in ")
	assert.Empty(t, oci.ProbeLeftovers(state))
}

// A platform forced by RunscPlatform is used without a probe; one that cannot run here (kvm
// without /dev/kvm, a platform this runsc lacks) fails the create with SANDBOX_UNAVAILABLE naming
// it, and leaves nothing.
func TestPlatformForced(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runsc)
	ctx := ctxT(t)
	state := ownStateDir(t)

	_, err := oci.New(ctx, oci.Config{Runtime: oci.Runsc, StateDir: state, RunscPlatform: "bogus"})
	assert.ErrorIs(t, err, errs.InvalidInput)

	sb := newSandbox(t, oci.Runsc, oci.Config{StateDir: state, RunscPlatform: oci.PlatformPtrace})
	assert.Equal(t, oci.PlatformPtrace, sb.Platform())
	assert.Equal(t, "4.4.0\n", string(sh(t, sb, "uname -r").Stdout))

	var failing []string
	if _, err := os.Stat("/dev/kvm"); err != nil {
		failing = append(failing, oci.PlatformKVM)
	}
	if !oci.RunscHasPlatform(ctx, oci.PlatformSystrap) {
		failing = append(failing, oci.PlatformSystrap)
	}
	if len(failing) == 0 {
		t.Log("kvm and systrap may both run here: no forced platform fails")
	}
	for _, p := range failing {
		_, err := oci.New(ctx, oci.Config{Runtime: oci.Runsc, StateDir: state, RunscPlatform: p})
		require.ErrorIs(t, err, errs.SandboxUnavailable, p)
		assert.Contains(t, err.Error(), "runsc platform "+p, "the error names the platform")
		t.Logf("%s: %v", p, err)
	}
	ents, _ := os.ReadDir(filepath.Join(state, "oci", "sandboxes"))
	assert.Len(t, ents, 1, "only the ptrace sandbox: a refused platform makes nothing")
}
