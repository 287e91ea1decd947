package docker_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/errs"
)

func sh(t *testing.T, sb adapter.Sandbox, script string) adapter.Result {
	t.Helper()
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", script}, Timeout: time.Minute})
	require.NoError(t, err, script)
	return res
}

func inspect(t *testing.T, sb *docker.Sandbox) client.ContainerInspectResult {
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	ins, err := c.ContainerInspect(ctxT(t), sb.ContainerID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	return ins
}

func TestHardeningDefaults(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	hc := inspect(t, sb).Container.HostConfig
	assert.Equal(t, "none", string(hc.NetworkMode))
	assert.Equal(t, []string{"ALL"}, hc.CapDrop)
	assert.Contains(t, hc.SecurityOpt, "no-new-privileges:true")
	assert.True(t, hc.ReadonlyRootfs)
	assert.Equal(t, int64(512<<20), hc.Memory)
	assert.Equal(t, int64(1e9), hc.NanoCPUs)
	require.NotNil(t, hc.PidsLimit)
	assert.Equal(t, int64(256), *hc.PidsLimit)
	for _, b := range hc.Binds {
		assert.NotContains(t, b, "docker.sock")
	}
	labels := inspect(t, sb).Container.Config.Labels
	assert.Equal(t, sb.ID(), labels[docker.LabelID])
	assert.Equal(t, "true", labels[docker.LabelManaged])

	// From the inside: non-root, no capabilities, no-new-privs, read-only root, writable
	// workspace and /tmp, default seccomp filter.
	res := sh(t, sb, `id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status;
		touch /rootfile 2>/dev/null && echo root-writable; touch /workspace/w /tmp/t && echo writable;
		ls -la /var/run/docker.sock 2>&1 | grep -c 'No such'`)
	out := string(res.Stdout)
	assert.Contains(t, out, "1000\n")
	assert.Contains(t, out, "CapEff:\t0000000000000000")
	assert.Contains(t, out, "NoNewPrivs:\t1")
	assert.Contains(t, out, "Seccomp:\t2")
	assert.NotContains(t, out, "root-writable")
	assert.Contains(t, out, "writable\n")
	assert.True(t, strings.HasSuffix(out, "1\n"), "no docker socket inside: %s", out)
}

func TestHardeningConfigurable(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{WritableRootfs: true, MemoryBytes: 256 << 20, Pids: 64, NanoCPUs: -1, CapAdd: []string{"CHOWN"}})
	hc := inspect(t, sb).Container.HostConfig
	assert.False(t, hc.ReadonlyRootfs)
	assert.Equal(t, int64(256<<20), hc.Memory)
	assert.Equal(t, int64(64), *hc.PidsLimit)
	assert.Equal(t, int64(0), hc.NanoCPUs)
	assert.Contains(t, hc.CapAdd, "CAP_CHOWN")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	assert.NoError(t, docker.Config{}.Validate())
	for _, c := range []docker.Config{
		{MemoryBytes: -2}, {Pids: -5}, {NanoCPUs: -3}, {MemoryBytes: 1024}, {TmpBytes: -1},
		{AllowNetwork: true, Network: "host"}, {Network: "bridge"}, {Env: []string{"NOEQUALS"}},
	} {
		assert.ErrorIs(t, c.Validate(), errs.InvalidInput, "%+v", c)
		_, err := docker.New(context.Background(), c)
		assert.ErrorIs(t, err, errs.InvalidInput, "%+v", c)
	}
}

// hostListener accepts connections on every host address and counts them.
// hostListener listens on the host's loopback only and counts accepted connections.
func hostListener(t *testing.T) (port int, accepted func() int64) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, n.Load
}

// TestNetworkIsOff: a sandbox reaches neither a server on the host's 127.0.0.1 nor any name or
// address; it has no interface but loopback. The control shows the probe itself works (it reaches
// a server inside the sandbox), so its failure against the host means something. No packet is
// sent anywhere but to loopback addresses.
func TestNetworkIsOff(t *testing.T) {
	t.Parallel()
	port, accepted := hostListener(t)
	sb := newSandbox(t, docker.Config{})
	script := fmt.Sprintf(`nc -w2 127.0.0.1 %d </dev/null; echo rc=$?;
		nslookup example.com 2>&1 | tail -1; wget -q -T 2 -O - http://example.com/ 2>&1; echo wget=$?;
		echo links: $(ip -o link | cut -d: -f2)`, port)
	res := sh(t, sb, script)
	out := string(res.Stdout)
	assert.NotContains(t, out, "hello", "a sandbox without network reached the host: %s", out)
	assert.NotContains(t, out, "rc=0")
	assert.NotContains(t, out, "wget=0")
	assert.Contains(t, out, "links: lo\n", "network mode none: loopback only")
	time.Sleep(200 * time.Millisecond) // let the listener count a connection that did arrive
	assert.Zero(t, accepted())

	res = sh(t, sb, "(echo hello | nc -l -p 7777 &); sleep 0.3; nc -w2 127.0.0.1 7777 </dev/null")
	assert.Contains(t, string(res.Stdout), "hello", "control: the probe reaches a server inside the sandbox: %s", res.Stderr)
}

func TestForkBombIsContained(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{Pids: 64})
	ctx := ctxT(t)
	start := time.Now()
	// exec: the shell itself needs no fork once the bomb runs (a forked `sleep 60` can fail at
	// the limit, and the shell exit before the timeout).
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", `b() { b | b & }; b; exec sleep 60`}, Timeout: 3 * time.Second})
	t.Logf("fork bomb ended after %s: %v (exit %d)", time.Since(start), err, res.ExitCode)
	// The timeout kills it, or the command fails at the limit first (an oci run saw that once):
	// either way it ends, and then its tree.
	if err != nil {
		require.ErrorIs(t, err, errs.ProcessTimeout)
	} else {
		require.NotZero(t, res.ExitCode, "the bomb ended as if it succeeded")
	}
	// The bomb is killed with its tree; the sandbox works again.
	require.Eventually(t, func() bool {
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "ps -o pid= | wc -l"}, Timeout: 5 * time.Second})
		return err == nil && res.ExitCode == 0 && strings.TrimSpace(string(res.Stdout)) != "" && atoi(string(res.Stdout)) < 10
	}, 30*time.Second, 500*time.Millisecond)
	res = sh(t, sb, "echo alive")
	assert.Equal(t, "alive\n", string(res.Stdout))
}

func atoi(s string) int {
	var n int
	fmt.Sscan(strings.TrimSpace(s), &n)
	return n
}

func TestMemoryHogIsKilled(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{MemoryBytes: 64 << 20})
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{
		Args:    []string{"sh", "-c", `a=aaaaaaaaaaaaaaaa; while :; do a=$a$a; done`},
		Timeout: time.Minute,
	})
	require.NoError(t, err)
	assert.Equal(t, 137, res.ExitCode, "killed by the OOM killer: %s", res.Stderr)
	assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))
}

// psSleep lists the sleep processes of the container.
func psSleep(t *testing.T, sb adapter.Sandbox) string {
	res := sh(t, sb, `ps -o pid,args | grep '[s]leep 31[0-9]' || true`)
	return string(res.Stdout)
}

func TestTimeoutKillsEscapedTree(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	ctx := ctxT(t)
	// A child in the group, one that left the group with setsid, and the main process.
	start := time.Now()
	res, err := sb.ExecuteCommand(ctx, adapter.Command{
		Args:    []string{"sh", "-c", `sleep 311 & setsid sleep 312 & echo started; sleep 313`},
		Timeout: 500 * time.Millisecond,
	})
	require.ErrorIs(t, err, errs.ProcessTimeout)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, "started\n", string(res.Stdout), "partial output is kept")
	assert.Empty(t, psSleep(t, sb))

	// Cancelling the context does the same.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(500 * time.Millisecond); cancel() }()
	_, err = sb.ExecuteCommand(cctx, adapter.Command{Args: []string{"sh", "-c", `setsid sleep 314 & sleep 315`}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, psSleep(t, sb))

	// A normal exit takes its background leftovers along, also ones that left the group.
	res = sh(t, sb, `sleep 316 & setsid sleep 317 & echo done`)
	assert.Equal(t, "done\n", string(res.Stdout))
	assert.Empty(t, psSleep(t, sb))
}

func TestYesIsBounded(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", "yes | head -c 50000000"}, MaxOutputBytes: 1000})
	require.NoError(t, err)
	assert.Len(t, res.Stdout, 1000)
	assert.True(t, res.StdoutTruncated)
	assert.Equal(t, int64(50000000-1000), res.StdoutDropped)
}
