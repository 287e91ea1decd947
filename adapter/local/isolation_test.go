package local_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireLayers skips (visibly, with the probe's reason) when a layer cannot be applied here, or
// fails when SANDBOXER_TEST_REQUIRE contains "isolation" (CI on a kernel that must have them).
func requireLayers(t *testing.T, names ...string) {
	t.Helper()
	rep := local.Probe()
	for _, n := range names {
		if rep.Available(n) {
			continue
		}
		reason := "unknown"
		for _, l := range rep.Layers {
			if l.Name == n {
				reason = l.Reason
			}
		}
		if strings.Contains(os.Getenv("SANDBOXER_TEST_REQUIRE"), "isolation") {
			t.Fatalf("isolation layer %s unavailable: %s", n, reason)
		}
		t.Skipf("isolation layer %s unavailable on this machine: %s", n, reason)
	}
}

// runnable is cfg as the tests that run commands use it on this build. The portable code (no
// kernel isolation) fails closed: isolation on refuses every command there, so those tests say
// isolation off, as a user of macOS must (TestPortable* check the refusal).
func runnable(cfg local.Config) local.Config {
	if !local.KernelIsolation && !cfg.RequireIsolation && (cfg.Isolation == "" || cfg.Isolation == local.IsolationAuto) {
		cfg.Isolation = local.IsolationOff
	}
	return cfg
}

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed", name)
	}
}

func newIsolated(t *testing.T, cfg local.Config) *local.Sandbox {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	sb, err := local.New(runnable(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

func run(t *testing.T, sb adapter.Sandbox, c adapter.Command) adapter.Result {
	t.Helper()
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	res, err := sb.ExecuteCommand(context.Background(), c)
	require.NoError(t, err, "%q", c.Args)
	return res
}

// countingServer listens on the host's loopback only and counts accepted connections.
func countingServer(t *testing.T) (port int, count func() int64) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	return l.Addr().(*net.TCPAddr).Port, countAccepts(t, l, []byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))
}

// countAccepts serves l until the test ends: it counts each connection, writes reply and closes it.
func countAccepts(t *testing.T, l net.Listener, reply []byte) (count func() int64) {
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_, _ = c.Write(reply)
			c.Close()
		}
	}()
	return n.Load
}

func networkClients(t *testing.T, sb *local.Sandbox, port int) map[string][]string {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	script := fmt.Sprintf("#!/bin/sh\nexec curl -sS --max-time 3 http://%s/\n", addr)
	require.NoError(t, sb.WriteFile(context.Background(), "fetch.sh", []byte(script)))
	require.NoError(t, os.Chmod(filepath.Join(sb.Dir(), "fetch.sh"), 0o755))
	return map[string][]string{
		"curl":      {"curl", "-sS", "--max-time", "3", "http://" + addr + "/"},
		"env curl":  {"env", "curl", "-sS", "--max-time", "3", "http://" + addr + "/"},
		"python3":   {"python3", "-c", fmt.Sprintf("import socket; s=socket.create_connection(('127.0.0.1', %d), 3); print(s.recv(10))", port)},
		"bash tcp":  {"bash", "-c", fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d", port)},
		"busybox":   {"busybox", "nc", "-w", "3", "127.0.0.1", fmt.Sprint(port)},
		"script":    {"./fetch.sh"},
		"sh script": {"sh", "-c", "sh ./fetch.sh"},
	}
}

func TestNetworkOffReachesNothingOutside(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerNetNS)
	for _, tool := range []string{"curl", "python3", "bash", "busybox"} {
		needTool(t, tool)
	}
	port, count := countingServer(t)
	sb := newIsolated(t, local.Config{})
	for name, argv := range networkClients(t, sb, port) {
		res := run(t, sb, adapter.Command{Args: argv})
		assert.NotEqual(t, 0, res.ExitCode, "%s must fail to connect: %s %s", name, res.Stdout, res.Stderr)
		assert.True(t, res.Isolation.Network, name)
		assert.Contains(t, res.Isolation.Layers, local.LayerNetNS, name)
	}
	time.Sleep(200 * time.Millisecond) // let the server count any connection that did arrive
	assert.Zero(t, count(), "the host's loopback server saw connections from a network-off command")

	// With the network allowed, the same clients reach it.
	for name, argv := range networkClients(t, sb, port) {
		before := count()
		res := run(t, sb, adapter.Command{Args: argv, AllowNetwork: true})
		assert.Equal(t, 0, res.ExitCode, "%s: %s %s", name, res.Stdout, res.Stderr)
		assert.False(t, res.Isolation.Network, name)
		// The server counts after Accept returns, which can trail the client's exit.
		assert.Eventually(t, func() bool { return count() > before }, 5*time.Second, 10*time.Millisecond, name)
	}
}

func TestNetworkOffLoopbackInsideWorks(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerNetNS)
	needTool(t, "python3")
	sb := newIsolated(t, local.Config{})
	// A server the command starts on 127.0.0.1 is reachable from inside the same command.
	res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", `
import socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname(), 3)
conn, _ = srv.accept(); conn.sendall(b"inside-ok")
print(c.recv(20).decode())
`}})
	assert.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Equal(t, "inside-ok\n", string(res.Stdout))
	// And through a shell with a background server, as an agent would do it.
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c",
		`busybox nc -l -p 18123 -e echo served & sleep 0.3; busybox nc -w 2 127.0.0.1 18123`}})
	assert.Equal(t, "served\n", string(res.Stdout), string(res.Stderr))
}

func TestWritesOnlyInWorkspaceAndTmp(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerLandlock)
	outside := t.TempDir()
	sb := newIsolated(t, local.Config{})
	parent := filepath.Dir(sb.Dir())
	attempts := []string{
		"echo x > " + outside + "/direct",
		"ln -s " + outside + " out-link && echo x > out-link/via-link",
		"ln -s " + outside + "/dangling dangle && echo x > dangle",
		"mkdir " + outside + "/newdir",
		"cp /etc/hostname " + outside + "/copied",
		"mv " + sb.Dir() + "/nothing " + outside + "/moved; echo x > w && mv w " + outside + "/moved",
	}
	for _, script := range attempts {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", script}})
		assert.NotEqual(t, 0, res.ExitCode, "%q must fail", script)
		assert.True(t, res.Isolation.Filesystem)
	}
	// The workspace's parent, in the view, is a directory of the sandbox's private /tmp: a
	// write there may succeed, but never reaches the host's.
	for _, script := range []string{"echo x > ../dotdot-escape", "echo x > " + sb.Dir() + "/../abs-dotdot"} {
		run(t, sb, adapter.Command{Args: []string{"sh", "-c", script}})
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing may be written outside the workspace")
	for _, name := range []string{"dotdot-escape", "abs-dotdot"} {
		assert.NoFileExists(t, filepath.Join(parent, name))
	}
	// /tmp is the sandbox's own (a tmpfs of its file system view): the host's is untouched.
	res := run(t, sb, adapter.Command{Args: []string{"touch", "/tmp/sandboxer-landlock-probe-" + filepath.Base(outside)}})
	assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.NoFileExists(t, "/tmp/sandboxer-landlock-probe-"+filepath.Base(outside))

	// The workspace and the private TMPDIR are writable; links inside work.
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c",
		`echo a > a && mkdir -p d && ln -s ../a d/l && cat d/l && mv a d/b && echo t > "$TMPDIR/t" && cat "$TMPDIR/t"`}})
	assert.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Equal(t, "a\nt\n", string(res.Stdout))
}

func TestDenyReadCarvesOutOfAllowedPaths(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerLandlock)
	fake := t.TempDir() // a fake host with a home directory
	home := filepath.Join(fake, "home", "me")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".aws"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".aws", "credentials"), []byte("AWS SECRET"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, "notes.txt"), []byte("public notes"), 0o644))
	sb := newIsolated(t, local.Config{
		ReadPaths: []string{fake},
		DenyRead:  []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".aws")},
	})
	res := run(t, sb, adapter.Command{Args: []string{"cat", filepath.Join(home, "notes.txt")}})
	assert.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Equal(t, "public notes", string(res.Stdout))

	for _, script := range []string{
		"cat " + home + "/.ssh/id_ed25519",
		"cat " + home + "/.aws/credentials",
		"ln -s " + home + "/.ssh key-link && cat key-link/id_ed25519",
		"cd " + home + " && cat ./.ssh/../.ssh/id_ed25519",
		"cp -r " + home + "/.aws . && cat .aws/credentials",
		"cat /etc/shadow", // a default deny-read entry
	} {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", script}})
		assert.NotEqual(t, 0, res.ExitCode, "%q must fail", script)
		assert.NotContains(t, string(res.Stdout), "PRIVATE KEY")
		assert.NotContains(t, string(res.Stdout), "AWS SECRET")
	}
	// Home directories are not readable at all by default.
	if home, err := os.UserHomeDir(); err == nil {
		res := run(t, sb, adapter.Command{Args: []string{"ls", home}})
		assert.NotEqual(t, 0, res.ExitCode, "the server's home must not be listable")
	}
}

func TestSetsidGrandchildDies(t *testing.T) {
	t.Parallel()
	needTool(t, "setsid")
	t.Run("cgroup", func(t *testing.T) {
		t.Parallel()
		requireLayers(t, local.LayerCgroup, local.LayerPIDNS)
		testSetsid(t, newIsolated(t, local.Config{}), local.LayerCgroup)
	})
	t.Run("pidns-command", func(t *testing.T) {
		t.Parallel()
		requireLayers(t, local.LayerPIDNS)
		sb := newIsolated(t, local.Config{DisableLayers: []string{local.LayerCgroup}})
		testSetsid(t, sb, local.LayerPIDNSCommand)
	})
}

func testSetsid(t *testing.T, sb *local.Sandbox, layer string) {
	ctx := context.Background()
	// On timeout.
	_, err := sb.ExecuteCommand(ctx, adapter.Command{
		Args:    []string{"sh", "-c", `setsid sh -c 'sleep 2; echo alive > timeout-marker' </dev/null >/dev/null 2>&1 & sleep 60`},
		Timeout: 500 * time.Millisecond,
	})
	require.ErrorIs(t, err, errs.ProcessTimeout)
	// On a normal exit, with a double fork so the grandchild is nobody's child.
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c",
		`(setsid sh -c 'sleep 2; echo alive > exit-marker' </dev/null >/dev/null 2>&1 &) ; exit 0`}})
	assert.Equal(t, 0, res.ExitCode)
	assert.True(t, res.Isolation.ProcessTree)
	assert.Contains(t, res.Isolation.Layers, layer)
	// On cancellation.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, cancel)
	_, err = sb.ExecuteCommand(cctx, adapter.Command{Args: []string{"sh", "-c",
		`setsid sh -c 'sleep 2; echo alive > cancel-marker' </dev/null >/dev/null 2>&1 & sleep 60`}})
	require.ErrorIs(t, err, context.Canceled)
	time.Sleep(2500 * time.Millisecond)
	for _, m := range []string{"timeout-marker", "exit-marker", "cancel-marker"} {
		_, err := sb.ReadFile(ctx, m)
		assert.ErrorIs(t, err, errs.NotFound, "a setsid grandchild outlived its command (%s)", m)
	}
}

// What a command leaves behind is killed and then reaped by the helper (PID 1 of the sandbox's
// namespace, to which the orphans fall): the sandbox's own /proc shows nothing but the helper, its
// unix-connect supervisor and the command that looks, not even a zombie. A start that fails in the helper (an interpreter that
// is not there) is the command's error, and the next command runs.
func TestOrphansAreReaped(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerPIDNS, local.LayerProc, local.LayerFSView)
	sb := newIsolated(t, local.Config{})
	ctx := context.Background()
	for _, script := range []string{
		`(sleep 30 &) ; exit 0`,                                   // orphan in the command's group
		`(setsid sleep 30 </dev/null >/dev/null 2>&1 &) ; exit 0`, // orphan in a session of its own
		`(sleep 0.2 &) ; exit 0`,                                  // orphan that would exit by itself
	} {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", script}})
		require.Equal(t, 0, res.ExitCode, script)
	}
	var left string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `cd /proc && for p in [0-9]*; do [ "$p" = 1 ] || [ "$p" = $$ ] || grep -q '^sandboxer-local-unix-supervisor' $p/cmdline || echo "$p $(cat $p/stat)"; done`}})
		if left = string(res.Stdout); left == "" {
			break
		}
	}
	assert.Empty(t, left, "processes left in the sandbox's PID namespace")

	require.NoError(t, sb.WriteFile(ctx, "bad-interpreter", []byte("#!/no/such/interpreter\n")))
	_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "chmod +x bad-interpreter"}})
	require.NoError(t, err)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"./bad-interpreter"}})
	assert.ErrorIs(t, err, errs.ProcessFailed)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "again\n", string(run(t, sb, adapter.Command{Args: []string{"echo", "again"}}).Stdout))
}

// Turning a layer off by name is an explicit opt-out: with isolation on every other layer is
// still required, the command runs, and its result says what was not enforced (fail closed
// itself: TestUnprivilegedFailsClosedWithoutIdmap, where a layer cannot be applied).
func TestDisabledLayersAreOptOuts(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerNetNS, local.LayerLandlock, local.LayerPIDNS, local.LayerLandlockNet)
	for _, tc := range []struct {
		disable []string
		check   func(adapter.Isolation)
	}{
		{[]string{local.LayerNetNS}, func(is adapter.Isolation) {
			assert.NotContains(t, is.Layers, local.LayerNetNS)
			assert.Contains(t, is.Layers, local.LayerLandlockNet, "without netns, landlock-tcp is required")
		}},
		{[]string{local.LayerNetNS, local.LayerLandlockNet}, func(is adapter.Isolation) { assert.False(t, is.Network) }},
		{[]string{local.LayerLandlock}, func(is adapter.Isolation) { assert.False(t, is.Filesystem) }},
		{[]string{local.LayerCgroup}, func(is adapter.Isolation) { assert.Contains(t, is.Layers, local.LayerPIDNSCommand) }},
	} {
		sb := newIsolated(t, local.Config{DisableLayers: tc.disable})
		res := run(t, sb, adapter.Command{Args: []string{"true"}})
		tc.check(res.Isolation)
		for _, l := range tc.disable {
			assert.NotContains(t, res.Isolation.Layers, l)
		}
	}
}

func TestIsolationReportedAndOff(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerNetNS, local.LayerLandlock, local.LayerCgroup)
	sb := newIsolated(t, local.Config{})
	res := run(t, sb, adapter.Command{Args: []string{"true"}})
	assert.True(t, res.Isolation.Network)
	assert.True(t, res.Isolation.Filesystem)
	assert.True(t, res.Isolation.ProcessTree)
	c := sb.Capabilities()
	assert.Equal(t, adapter.FSJail, c.FSIsolation)
	assert.Equal(t, adapter.NetNamespace, c.Network)

	off := newIsolated(t, local.Config{Isolation: local.IsolationOff})
	res = run(t, off, adapter.Command{Args: []string{"true"}})
	assert.Equal(t, adapter.Isolation{}, res.Isolation)
	c = off.Capabilities()
	assert.Equal(t, adapter.FSNone, c.FSIsolation)
	assert.Equal(t, adapter.NetHost, c.Network)

	_, err := local.New(runnable(local.Config{Isolation: "maybe"}))
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = local.New(runnable(local.Config{DisableLayers: []string{"nope"}}))
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = local.New(runnable(local.Config{ReadPaths: []string{"relative"}}))
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = local.New(runnable(local.Config{Isolation: local.IsolationOff, RequireIsolation: true}))
	assert.ErrorIs(t, err, errs.InvalidInput)
}

func TestProbe(t *testing.T) {
	t.Parallel()
	rep := local.Probe()
	names := map[string]bool{}
	for _, l := range rep.Layers {
		names[l.Name] = true
		if !l.Available {
			assert.NotEmpty(t, l.Reason, "%s: an unavailable layer says why", l.Name)
		}
		t.Logf("%-15s available=%-5v %s", l.Name, l.Available, l.Reason)
	}
	for _, n := range []string{local.LayerUserNS, local.LayerPIDNS, local.LayerNetNS, local.LayerLandlock, local.LayerCgroup} {
		assert.True(t, names[n], n)
	}
	assert.Equal(t, rep.Available(local.LayerNetNS), rep.Network)
	assert.Equal(t, rep.Available(local.LayerLandlock), rep.Filesystem)
}

// conformance runs the suite on sandboxes made by newSandbox from cfg, each in its own workspace.
func conformance(t *testing.T, newSandbox func(local.Config) (*local.Sandbox, error), cfg local.Config) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) adapter.Sandbox {
			c := runnable(cfg)
			c.Root = t.TempDir()
			sb, err := newSandbox(c)
			require.NoError(t, err)
			return sb
		},
		Outside:     outside,
		PrivateHome: true,
	})
}

func TestConformanceIsolationOff(t *testing.T) {
	conformance(t, local.New, local.Config{Isolation: local.IsolationOff})
}

// TestConformanceWithoutPidfd runs the suite with plain commands collected as on a kernel without
// pidfds (the helper's commands always are).
func TestConformanceWithoutPidfd(t *testing.T) {
	conformance(t, local.NewWithoutPidfd, local.Config{Isolation: local.IsolationOff})
}

// TestConformancePIDNamespacePerCommand runs the suite in the mode of machines without cgroups:
// each command under its own init, PID 1 of its own PID namespace.
func TestConformancePIDNamespacePerCommand(t *testing.T) {
	requireLayers(t, local.LayerPIDNS)
	conformance(t, local.New, local.Config{DisableLayers: []string{local.LayerCgroup}, RequireIsolation: true})
}

// unixServer listens on a pathname unix socket and counts accepted connections.
func unixServer(t *testing.T, path string) (count func() int64) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(path, 0o777))
	t.Cleanup(func() { os.Remove(path) })
	return countAccepts(t, l, nil)
}

// The file system view: no pathname unix socket outside the workspace is reachable (the Docker
// daemon's, containerd's, sockets under /tmp, /run and a home directory), while a socket a
// command makes in its workspace works; /run, /home, /root and /sys are not there at all
// (issue 18), but for the toolchain directories PATH shows (issue 35).
func TestFSViewHidesHostSockets(t *testing.T) {
	requireLayers(t, local.LayerFSView, local.LayerUserNS)
	needTool(t, "python3")
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	suffix := fmt.Sprintf("sandboxer-test-%d-%d.sock", os.Getpid(), time.Now().UnixNano())
	socks := map[string]string{
		"tmp":  filepath.Join(t.TempDir(), suffix),
		"run":  filepath.Join("/run", suffix),
		"home": filepath.Join(home, "."+suffix),
	}
	counts := map[string]func() int64{}
	for name, p := range socks {
		counts[name] = unixServer(t, p)
	}
	for _, p := range []string{"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"} {
		if _, err := os.Stat(p); err == nil {
			socks[p] = p
		}
	}
	sb := newIsolated(t, local.Config{})
	connect := "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.settimeout(2)\ns.connect(sys.argv[1])\nprint('connected')"
	for name, p := range socks {
		for _, network := range []bool{false, true} {
			res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", connect, p}, AllowNetwork: network})
			assert.NotEqual(t, 0, res.ExitCode, "%s (network %t): %s", name, network, res.Stdout)
			assert.NotContains(t, string(res.Stdout), "connected", name)
			assert.Contains(t, res.Isolation.Layers, local.LayerFSView)
		}
	}
	for name, n := range counts {
		assert.Zero(t, n(), "connections accepted on the %s socket", name)
	}

	// A socket of the command's own, in the workspace, works.
	own := "import socket,os\np='own.sock'\nl=socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1)\n" +
		"c=socket.socket(socket.AF_UNIX); c.connect(p); a,_=l.accept(); c.send(b'hi'); print(a.recv(2).decode())"
	res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", own}})
	assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Equal(t, "hi\n", string(res.Stdout))

	// What the view holds. With Config.Path empty, the toolchain directories under the home that
	// the caller's PATH names are there (TestPathFromTheCaller), and nothing else of the home;
	// with a PATH of system directories only, no home at all.
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `[ -e "$1" ] && echo "visible: $1"; echo done`, "sh", socks["home"]}})
	assert.Equal(t, "done\n", string(res.Stdout), "%s", res.Stderr)
	sys := newIsolated(t, local.Config{Path: local.DefaultPath})
	res = run(t, sys, adapter.Command{Args: []string{"sh", "-c", `for p in /run /var/run /home /root /sys /mnt /dev/tty /dev/pts /dev/sda /dev/vda "$1"; do [ -e "$p" ] && echo "visible: $p"; done; [ -e "$2" ] && echo "visible: $2"; [ -c /dev/null ] && echo null; echo done`, "sh", home, socks["tmp"]}})
	assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Equal(t, "null\ndone\n", string(res.Stdout), "%s", res.Stderr)
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", "echo x > /usr/x || echo refused; cat /etc/shadow | wc -c; touch /tmp/mine && echo tmp-ok"}})
	assert.Equal(t, "refused\n0\ntmp-ok\n", strings.ReplaceAll(string(res.Stdout), " ", ""), "%s", res.Stderr)
}
