package oci_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
)

func sh(t *testing.T, sb adapter.Sandbox, script string) adapter.Result {
	t.Helper()
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", script}, Timeout: time.Minute})
	require.NoError(t, err, script)
	return res
}

func layers(sb *oci.Sandbox, t *testing.T) []string {
	return sh(t, sb, "true").Isolation.Layers
}

// TestHardeningFromInside checks every layer the sandbox claims with a probe inside it.
func TestHardeningFromInside(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		sb := newSandbox(t, rt, oci.Config{})
		got := layers(sb, t)
		t.Logf("%s layers: %v", rt, got)
		for _, l := range []string{"container", "caps:none", "no-new-privileges", "rootfs:ro", "network:none", "cgroup:memory", "cgroup:pids", "cgroup:cpu"} {
			assert.Contains(t, got, l)
		}
		out := string(sh(t, sb, `id -u; id -g; cat /proc/self/status; echo; cat /proc/self/uid_map; echo;
			grep -E ' / | /tmp | /proc/sys ' /proc/mounts;
			touch /rootfile 2>&1; touch /bin/x 2>&1; touch /workspace/w /tmp/t && echo writable;
			echo masked: kcore=$(wc -c </proc/kcore 2>/dev/null || echo none) keys=$(wc -c </proc/keys 2>/dev/null || echo none);
			echo 1 > /proc/sys/kernel/hostname 2>&1;
			uname -r`).Stdout)
		assert.Contains(t, out, "1000\n1000\n", "a non-root user")
		assert.Contains(t, out, "CapEff:\t0000000000000000")
		assert.Contains(t, out, "CapPrm:\t0000000000000000")
		// The bounding set keeps what the agent needs (agent.Caps): no-new-privileges keeps a
		// command from gaining any of it.
		assert.Contains(t, out, "CapBnd:\t00000000000000e0")
		assert.Contains(t, out, "writable\n", "workspace and /tmp are writable")
		assert.Regexp(t, `(?m)^\S+ / \S+ ro[ ,]`, out, "the root is mounted read-only")
		assert.Regexp(t, `(?m)^\S+ /tmp tmpfs rw`, out, "a private tmpfs on /tmp")
		assert.Regexp(t, `masked: kcore=(0|none) keys=(0|none)\n`, out, "masked /proc paths read as empty")
		switch rt {
		case oci.Runsc:
			assert.Contains(t, got, "gvisor")
			assert.NotContains(t, got, "seccomp", "runsc runs without the OCI profile (see Config.NoSeccomp)")
			assert.Contains(t, out, "4.4.0", "gVisor's kernel answers uname")
			assert.Contains(t, out, "Permission denied", "/ is not the user's")
		default:
			assert.Contains(t, got, "seccomp")
			assert.Contains(t, got, "userns")
			assert.Contains(t, out, "NoNewPrivs:\t1")
			assert.Contains(t, out, "Seccomp:\t2", "the default seccomp profile filters")
			assert.Regexp(t, `(?m)^\s*0\s+2000000000\s+65536$`, out, "the container's root is host uid 2000000000")
			assert.Contains(t, out, "touch: /rootfile: Read-only file system")
			assert.Contains(t, out, "touch: /bin/x: Read-only file system")
			assert.Regexp(t, `(?m)^\S+ /proc/sys proc ro`, out)
			assert.Contains(t, out, "Read-only file system", "/proc/sys is read-only")
		}
		// The seccomp profile refuses what the capabilities would not: unshare of a user
		// namespace (allowed to an unprivileged user by the kernel otherwise).
		if rt != oci.Runsc {
			res := sh(t, sb, "unshare -U true; echo rc=$?")
			assert.Contains(t, string(res.Stdout), "rc=1", "%s", res.Stderr)
		}
	})
}

// TestPrivateTmp: each sandbox has its own /tmp, and none is the host's.
func TestPrivateTmp(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		a := newSandbox(t, rt, oci.Config{})
		b := newSandbox(t, rt, oci.Config{})
		name := "sandboxer-private-tmp-" + a.ID()
		sh(t, a, "echo a > /tmp/"+name)
		assert.Equal(t, "a\n", string(sh(t, a, "cat /tmp/"+name).Stdout))
		assert.Contains(t, string(sh(t, b, "cat /tmp/"+name+" 2>&1").Stdout), "No such file")
		_, err := os.Stat("/tmp/" + name)
		assert.ErrorIs(t, err, os.ErrNotExist, "the host's /tmp is untouched")
	})
}

// hostTools mounts the host's /usr at /mnt/usr, so that the probes can run the host's bash and
// python3 through its dynamic loader.
var hostTools = []oci.Mount{{Source: "/usr", Target: "/mnt/usr"}}

const (
	loader = "/mnt/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path /mnt/usr/lib/x86_64-linux-gnu"
	bash   = loader + " /mnt/usr/bin/bash"
	python = "PYTHONHOME=/mnt/usr " + loader + " /mnt/usr/bin/python3"
)

// listeners counts what reaches the host: TCP connections to a loopback server and to one on
// every other host address, UDP datagrams to a loopback socket, connections to an abstract unix
// socket.
type listeners struct {
	tcpPort, tcpAnyPort, udpPort int
	abstract                     string
	n                            atomic.Int64
}

func hostListeners(t *testing.T) *listeners {
	l := &listeners{abstract: fmt.Sprintf("sandboxer-probe-%d-%d", os.Getpid(), time.Now().UnixNano())}
	accept := func(ln net.Listener) {
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				l.n.Add(1)
				c.Write([]byte("hello\n"))
				c.Close()
			}
		}()
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	l.tcpPort = ln.Addr().(*net.TCPAddr).Port
	accept(ln)
	ln, err = net.Listen("tcp4", "0.0.0.0:0")
	require.NoError(t, err)
	l.tcpAnyPort = ln.Addr().(*net.TCPAddr).Port
	accept(ln)
	ln, err = net.Listen("unix", "@"+l.abstract)
	require.NoError(t, err)
	accept(ln)
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	l.udpPort = pc.LocalAddr().(*net.UDPAddr).Port
	go func() {
		b := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(b); err != nil {
				return
			}
			l.n.Add(1)
		}
	}()
	return l
}

// hostAddr returns a non-loopback IPv4 address of the host.
func hostAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("the host has no non-loopback IPv4 address")
	return ""
}

// probes tries every way out it knows and prints one line per probe.
func (l *listeners) probes(host string) string {
	p := strconv.Itoa
	py := `
import socket, sys
def tcp(h, port):
    s = socket.socket(); s.settimeout(2)
    try: s.connect((h, port)); print("py-tcp", h, "CONNECTED", s.recv(6))
    except Exception as e: print("py-tcp", h, "refused", type(e).__name__)
def udp(h, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: s.sendto(b"x", (h, port)); print("py-udp sent")
    except Exception as e: print("py-udp refused", type(e).__name__)
def raw():
    for fam, kind, proto in ((socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), (socket.AF_PACKET, socket.SOCK_RAW, 0)):
        try: socket.socket(fam, kind, proto); print("py-raw OPENED", fam)
        except Exception as e: print("py-raw refused", type(e).__name__)
def unix(name):
    s = socket.socket(socket.AF_UNIX)
    try: s.connect("\0" + name); print("py-unix CONNECTED")
    except Exception as e: print("py-unix refused", type(e).__name__)
tcp("127.0.0.1", ` + p(l.tcpPort) + `); tcp("` + host + `", ` + p(l.tcpAnyPort) + `)
udp("127.0.0.1", ` + p(l.udpPort) + `); raw(); unix("` + l.abstract + `")
`
	return `nc -w2 127.0.0.1 ` + p(l.tcpPort) + ` </dev/null; echo nc=$?
nc -w2 ` + host + ` ` + p(l.tcpAnyPort) + ` </dev/null; echo nc-host=$?
echo x | nc -u -w1 127.0.0.1 ` + p(l.udpPort) + `; echo nc-udp=$?
wget -q -T 2 -O - http://127.0.0.1:` + p(l.tcpPort) + `/ 2>&1; echo wget=$?
` + bash + ` -c 'exec 3<>/dev/tcp/127.0.0.1/` + p(l.tcpPort) + ` && echo bash-tcp CONNECTED; echo bash-tcp=$?' 2>&1
` + bash + ` -c 'echo x >/dev/udp/127.0.0.1/` + p(l.udpPort) + `; echo bash-udp=$?' 2>&1
` + python + ` -c '` + py + `' 2>&1
echo links: $(ip -o link | cut -d: -f2)
`
}

// TestNetworkBypassProbes: with the network off, no probe (busybox nc and wget, bash's /dev/tcp
// and /dev/udp, python's TCP, UDP, raw and abstract unix sockets) reaches anything on the host:
// 0 connections and 0 datagrams arrive at loopback listeners, at a listener on the host's own
// address, or at an abstract unix socket (abstract sockets belong to the network namespace). The
// control run with AllowNetwork shows the same probes do reach the host when allowed, so their
// failure means something.
func TestNetworkBypassProbes(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		l := hostListeners(t)
		host := hostAddr(t)
		sb := newSandbox(t, rt, oci.Config{Mounts: hostTools})
		out := string(sh(t, sb, l.probes(host)).Stdout)
		t.Logf("%s, network off:\n%s", rt, out)
		time.Sleep(300 * time.Millisecond) // let a connection that did arrive be counted
		assert.Zero(t, l.n.Load(), "nothing may reach the host")
		assert.NotContains(t, out, "CONNECTED")
		assert.NotContains(t, out, "OPENED", "no raw socket")
		assert.Contains(t, out, "py-tcp 127.0.0.1 refused", "python ran")
		assert.Contains(t, out, "links: lo\n", "loopback only")
		for _, probe := range []string{"nc=0", "nc-host=0", "wget=0", "bash-tcp=0"} {
			assert.NotContains(t, out, probe+"\n")
		}

		// Control: the host's network namespace.
		open := newSandbox(t, rt, oci.Config{Mounts: hostTools, AllowNetwork: true})
		assert.NotContains(t, layers(open, t), "network:none")
		out = string(sh(t, open, l.probes(host)).Stdout)
		t.Logf("%s, network allowed:\n%s", rt, out)
		assert.Contains(t, out, "py-tcp 127.0.0.1 CONNECTED")
		assert.Contains(t, out, "bash-tcp CONNECTED")
		assert.Contains(t, out, "nc=0")
		assert.NotContains(t, out, "OPENED", "no raw socket without CAP_NET_RAW, network or not")
		assert.Eventually(t, func() bool { return l.n.Load() >= 3 }, 5*time.Second, 50*time.Millisecond,
			"the control reaches the host: %d", l.n.Load())
	})
}

// readCgroup reads a number from a file of sandbox id's cgroup on the host (the first number
// after key, when key is set).
func readCgroup(t *testing.T, id, controller, v1, v2, key string) int64 {
	t.Helper()
	p := oci.CgroupFile(id, controller, v1, v2)
	b, err := os.ReadFile(p)
	require.NoError(t, err, p)
	text := string(b)
	if key != "" {
		_, after, ok := strings.Cut(text, key+" ")
		require.True(t, ok, "%s: no %q in %q", p, key, text)
		text = after
	}
	n, err := strconv.ParseInt(strings.Fields(text)[0], 10, 64)
	require.NoError(t, err, "%s: %q", p, text)
	return n
}

// TestForkBombIsContained: the pids limit holds (the host's pids cgroup refused forks, and never
// let the sandbox past it). Under runc the bomb's tree is killed at the timeout and the sandbox
// works again. Under runsc the host limit is on gVisor's host tasks (scaled from Pids): a bomb
// that reaches it ends the whole sandbox (its calls are then SANDBOX_UNAVAILABLE), one that does
// not is killed at the timeout; the host stays inside the limit either way.
func TestForkBombIsContained(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		sb := newSandbox(t, rt, oci.Config{Pids: 64})
		ctx := ctxT(t)
		start := time.Now()
		// exec: the shell itself needs no fork once the bomb runs (a `sleep 60` it had to fork
		// failed at the limit within 33 ms once, and the shell exited before the timeout).
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", `b() { b | b & }; b; exec sleep 60`}, Timeout: 3 * time.Second})
		t.Logf("%s: fork bomb ended after %s: %v (exit %d, %.200q)", rt, time.Since(start), err, res.ExitCode, res.Stderr)
		hostMax := int64(64) // runsc: scaled for gVisor's host tasks (see oci.Config.Pids)
		if rt == oci.Runsc {
			hostMax = 64*16 + 128
		}
		assert.Equal(t, hostMax, readCgroup(t, sb.ID(), "pids", "pids.max", "pids.max", ""))
		if rt == oci.Runsc {
			// gVisor forks slowly on its ptrace platform: on a loaded machine the bomb may not
			// reach the scaled host limit before the timeout kills it. Either way the host's
			// cgroup bounds it.
			require.Error(t, err)
			assert.True(t, errs.CodeOf(err) == errs.ProcessTimeout || errs.CodeOf(err) == errs.SandboxUnavailable, "%v", err)
			return
		}
		assert.Positive(t, readCgroup(t, sb.ID(), "pids", "pids.events", "pids.events", "max"), "forks were refused at the limit")
		// The timeout kills it, or (on a quiet machine the bomb fills the limit within tens of
		// milliseconds) the command fails at the limit first: either way it ends, and then its tree.
		if err != nil {
			require.ErrorIs(t, err, errs.ProcessTimeout)
		} else {
			require.NotZero(t, res.ExitCode, "the bomb ended as if it succeeded")
		}
		// The bomb is killed with its tree; the sandbox works again.
		require.Eventually(t, func() bool {
			res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "ps -o pid= | wc -l"}, Timeout: 10 * time.Second})
			return err == nil && res.ExitCode == 0 && atoi(string(res.Stdout)) > 0 && atoi(string(res.Stdout)) < 10
		}, 60*time.Second, 500*time.Millisecond)
		assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))
	})
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// TestMemoryHogIsKilled: the memory limit holds (the host's memory cgroup never let the sandbox
// past it and had to refuse it). Under runc the OOM killer ends the hog alone (exit 137) and the
// sandbox works on; under runsc the limit applies to the sandbox as a whole, gVisor's kernel
// included, and the whole sandbox ends.
func TestMemoryHogIsKilled(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		const limit = 64 << 20
		sb := newSandbox(t, rt, oci.Config{MemoryBytes: limit})
		res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{
			Args:    []string{"sh", "-c", `a=aaaaaaaaaaaaaaaa; while :; do a=$a$a; done`},
			Timeout: time.Minute,
		})
		t.Logf("%s: memory hog: exit %d, %v", rt, res.ExitCode, err)
		// The peak may pass the limit by what the kernel charges in batches (a few pages).
		assert.LessOrEqual(t, readCgroup(t, sb.ID(), "memory", "memory.max_usage_in_bytes", "memory.peak", ""), int64(limit+limit/64))
		assert.Positive(t, readCgroup(t, sb.ID(), "memory", "memory.oom_control", "memory.events", "oom_kill"), "the OOM killer acted")
		if rt == oci.Runsc {
			assert.ErrorIs(t, err, errs.SandboxUnavailable)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, 137, res.ExitCode, "killed by the OOM killer: %s", res.Stderr)
		assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))
	})
}

// TestCPULimit: two busy loops for two seconds get a tenth of a CPU between them under a 0.1 CPU
// limit: the host's accounting of the sandbox's cgroup says so, and that the quota throttled it,
// and, under runc, so do the loops' own CPU times read from /proc inside the sandbox (gVisor's
// kernel keeps its own clock for its tasks). The limit is low so that the quota, not other load
// of a busy machine, is what holds the loops back.
func TestCPULimit(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		sb := newSandbox(t, rt, oci.Config{MilliCPUs: 100})
		before := readCgroup(t, sb.ID(), "cpuacct", "cpuacct.usage", "cpu.stat", "")
		start := time.Now()
		res := sh(t, sb, `
			(while :; do :; done) & a=$!; (while :; do :; done) & b=$!
			sleep 2
			ta=$(cut -d' ' -f14,15 /proc/$a/stat); tb=$(cut -d' ' -f14,15 /proc/$b/stat)
			kill $a $b
			set -- $ta $tb; echo $(( $1 + $2 + $3 + $4 ))`)
		wall := time.Since(start)
		used := time.Duration(readCgroup(t, sb.ID(), "cpuacct", "cpuacct.usage", "cpu.stat", "") - before)
		ticks := atoi(string(res.Stdout))
		t.Logf("%s: the sandbox used %s of CPU in %s under a 0.1 CPU limit; inside, the loops counted %d ticks (1/100 s)", rt, used, wall, ticks)
		assert.Less(t, used, wall*3/10, "a tenth of a CPU, with a margin; unlimited, two loops take two CPUs")
		assert.Positive(t, readCgroup(t, sb.ID(), "cpu", "cpu.stat", "cpu.stat", "nr_throttled"), "the quota throttled the sandbox")
		if rt != oci.Runsc {
			assert.Positive(t, ticks)
			assert.Less(t, ticks, 60, "a tenth of a CPU for 2 s is 20 ticks; two unlimited loops take up to 400")
		}
	})
}

// A command cannot stop, signal, trace or read the agents of its sandbox (the container's and an
// attached handle's), nor reach their hub: it could answer the host in their place (issue 34).
func TestAgentUntouchable(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		sb := newSandbox(t, rt, oci.Config{})
		other, err := oci.Attach(ctxT(t), oci.Config{StateDir: stateDir}, sb.ID())
		require.NoError(t, err)
		assert.Contains(t, layers(sb, t), "agent:own-user")
		var seen []string
		if rt == oci.Runsc {
			seen = []string{"open environ", "list fd"} // gVisor's /proc (see CheckAgentUntouchable)
		}
		adaptertest.CheckAgentUntouchable(t, sb, other, seen...)
	})
}

// A handle whose agent breaks the protocol (a bad exit frame, a result flood from a stand-in agent)
// fails that call and every later one that needs an agent with SANDBOX_UNAVAILABLE: no other
// agent is exec'd (issue 34).
func TestAgentThatBreaksTheProtocolIsNotReplaced(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		adaptertest.CheckProtocolBreaker(t,
			func(t *testing.T) adapter.Sandbox { return newSandbox(t, rt, oci.Config{}) },
			func(sb adapter.Sandbox, c *agent.Client) func() { return oci.UseAgent(sb.(*oci.Sandbox), c) })
	})
}

// Sandboxes in the host's network namespace (AllowNetwork) share no hub: each agent serves its own
// in its container's /tmp, nothing is an abstract name of the host's namespace, and a process
// started in one sandbox is not another's (issue 34, item 4: calls for B ran in A).
func TestNoSharedHubWithHostNetwork(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		a := newSandbox(t, rt, oci.Config{AllowNetwork: true})
		b := newSandbox(t, rt, oci.Config{AllowNetwork: true})
		p, err := a.Start(ctx, adapter.Command{Args: []string{"sleep", "60"}})
		require.NoError(t, err)
		t.Cleanup(func() { p.Signal(context.Background(), "KILL") })
		// B's second handle relays to B's hub, not to whichever bound a shared name first.
		other, err := oci.Attach(ctx, oci.Config{StateDir: stateDir}, b.ID())
		require.NoError(t, err)
		for _, h := range []adapter.Sandbox{b, other} {
			ps, err := h.(adapter.Starter).Processes(ctx)
			require.NoError(t, err)
			assert.Empty(t, ps, "A's process is not B's")
		}
		ps, err := a.Processes(ctx)
		require.NoError(t, err)
		assert.Len(t, ps, 1)
		unix, err := os.ReadFile("/proc/net/unix")
		require.NoError(t, err)
		assert.NotContains(t, string(unix), "@sandboxer-agent", "no agent name in the host's namespace")
	})
}
