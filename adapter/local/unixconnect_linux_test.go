//go:build linux && !sandboxer_portable

package local_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// connectPy connects to the unix socket at argv[1] and says how it went.
const connectPy = `import socket,sys
s=socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
    print('connected')
except OSError as e:
    print('refused', e.errno)
`

// The unix-connect layer, attacked from inside: host programs' sockets in the workspace, made
// before the sandbox started and after its first command, reached by name, through a link and
// from a command with network, take no connection (EACCES), while the sandbox's own sockets,
// in one command or across two, and TCP on loopback work as before.
func TestUnixConnectOnlyToTheSandboxsSockets(t *testing.T) {
	requireLayers(t, local.LayerUnixConnect)
	needTool(t, "python3")
	sb := newIsolated(t, local.Config{})
	ws := sb.Dir()
	before := unixServer(t, filepath.Join(ws, "before.sock"))
	res := run(t, sb, adapter.Command{Args: []string{"true"}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	after := unixServer(t, filepath.Join(ws, "after.sock"))
	require.NoError(t, os.Symlink("after.sock", filepath.Join(ws, "link.sock")))

	for _, network := range []bool{false, true} {
		for _, p := range []string{"before.sock", "after.sock", "link.sock", filepath.Join(ws, "after.sock")} {
			res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", connectPy, p}, AllowNetwork: network})
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			assert.Equal(t, "refused 13\n", string(res.Stdout), "%s (network %t)", p, network)
			assert.Contains(t, res.Isolation.Layers, local.LayerUnixConnect)
		}
	}
	assert.Zero(t, before(), "connections on the socket made before the sandbox")
	assert.Zero(t, after(), "connections on the socket made after its first command")

	// The sandbox's own: in one command, and a server of one command for another.
	own := "import socket\np='own.sock'\nl=socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1)\n" +
		"c=socket.socket(socket.AF_UNIX); c.connect(p); a,_=l.accept(); c.send(b'hi'); print(a.recv(2).decode())"
	for _, network := range []bool{false, true} {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `rm -f own.sock; exec python3 -c "$1"`, "sh", own}, AllowNetwork: network})
		assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.Equal(t, "hi\n", string(res.Stdout), "network %t", network)
	}
	ctx := context.Background()
	serve := "import socket,os\nl=socket.socket(socket.AF_UNIX); l.bind('served.sock'); l.listen(1); os.rename('served.sock','served')\n" +
		"while True:\n    a,_=l.accept(); a.send(b'served'); a.close()"
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"python3", "-c", serve}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Signal(ctx, "KILL"); _, _ = p.Wait(ctx) })
	require.Eventually(t, func() bool { _, err := os.Lstat(filepath.Join(ws, "served")); return err == nil }, 10*time.Second, 10*time.Millisecond)
	res = run(t, sb, adapter.Command{Args: []string{"python3", "-c", connectPy, "served"}})
	assert.Equal(t, "connected\n", string(res.Stdout), "%s", res.Stderr)

	// From a thread that is not its process's leader (Go and Java programs connect from such).
	threaded := "import socket, threading\nl=socket.socket(socket.AF_UNIX); l.bind('t.sock'); l.listen(1)\nout=[]\n" +
		"def f():\n    c=socket.socket(socket.AF_UNIX); c.connect('t.sock'); out.append('connected')\n" +
		"t=threading.Thread(target=f); t.start(); t.join(); print(out[0] if out else 'failed')"
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `rm -f t.sock; exec python3 -c "$1"`, "sh", threaded}})
	assert.Equal(t, "connected\n", string(res.Stdout), "%s", res.Stderr)

	tcp := "import socket\nl=socket.socket(); l.bind(('127.0.0.1',0)); l.listen(1)\n" +
		"c=socket.create_connection(l.getsockname()); a,_=l.accept(); a.send(b'tcp'); print(c.recv(3).decode())"
	res = run(t, sb, adapter.Command{Args: []string{"python3", "-c", tcp}})
	assert.Equal(t, "tcp\n", string(res.Stdout), "%s", res.Stderr)
}

// Unix datagram sockets could name any socket file in sendmsg, which the filter cannot read:
// commands get none (SOCK_DGRAM, and SOCK_RAW, which unix sockets take as one), and a host
// datagram socket in the workspace receives nothing; stream and seqpacket pairs still work.
func TestUnixDatagramSocketsAreRefused(t *testing.T) {
	requireLayers(t, local.LayerUnixConnect)
	needTool(t, "python3")
	sb := newIsolated(t, local.Config{})
	host, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(sb.Dir(), "log.sock"), Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { host.Close() })
	probe := `import socket
for name, f in [('socket dgram', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)),
                 ('socket raw', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW)),
                 ('pair dgram', lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),
                 ('socket stream', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
                 ('pair seqpacket', lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))]:
    try:
        s = f()
        if name == 'socket dgram':
            s.sendto(b'leak', 'log.sock')
        print(name, 'ok')
    except OSError as e:
        print(name, e.errno)
`
	for _, network := range []bool{false, true} {
		res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", probe}, AllowNetwork: network})
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.Equal(t, "socket dgram 1\nsocket raw 1\npair dgram 1\nsocket stream ok\npair seqpacket ok\n", string(res.Stdout), "network %t", network)
	}
	require.NoError(t, host.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	n, _, err := host.ReadFrom(make([]byte, 16))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "the host's datagram socket received something")
}

// A command races the supervisor: one thread connects to a name while others swap the host's
// socket and the sandbox's own under that name (rename), and flip the address's bytes in memory
// between the two names (what the kernel would read again, were the call let through). The host
// socket takes no connection; the sandbox's own takes some, so the race ran.
func TestUnixConnectRaces(t *testing.T) {
	requireLayers(t, local.LayerUnixConnect)
	needTool(t, "python3")
	sb := newIsolated(t, local.Config{})
	host := unixServer(t, filepath.Join(sb.Dir(), "h"))
	race := `import ctypes, os, socket, threading, time
libc = ctypes.CDLL(None, use_errno=True)
l = socket.socket(socket.AF_UNIX); l.bind('o'); l.listen(128)
def accept():
    while True:
        a, _ = l.accept(); a.close()
threading.Thread(target=accept, daemon=True).start()
class sun(ctypes.Structure):
    _fields_ = [('family', ctypes.c_ushort), ('path', ctypes.c_char * 108)]
addr = sun(socket.AF_UNIX, b'o')
stop = time.time() + 3
def flip():
    while time.time() < stop:
        addr.path = b'h'; addr.path = b'o'
def swap():
    while time.time() < stop:
        try:
            os.rename('h', 't'); os.rename('o', 'h'); os.rename('t', 'o')
        except OSError:
            pass
for f in (flip, swap):
    threading.Thread(target=f, daemon=True).start()
ok = 0
while time.time() < stop:
    s = socket.socket(socket.AF_UNIX)
    if libc.connect(s.fileno(), ctypes.byref(addr), ctypes.sizeof(addr)) == 0:
        ok += 1
    s.close()
print('own', ok)
`
	res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", race}, Timeout: time.Minute})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.True(t, strings.HasPrefix(string(res.Stdout), "own ") && string(res.Stdout) != "own 0\n", "%s", res.Stdout)
	assert.Zero(t, host(), "connections on the host's socket")
}

// BenchmarkUnixConnect: what a connect (and its accept) costs a command with the unix-connect
// supervisor and without it, to a unix socket of its own and to loopback TCP, measured inside
// one command (python3) over b.N connects: the metric us/connect, not ns/op, is the figure.
func BenchmarkUnixConnect(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 is not installed")
	}
	script := `import socket, sys, time
fam = socket.AF_UNIX if sys.argv[1] == 'unix' else socket.AF_INET
l = socket.socket(fam); l.bind('b.sock' if fam == socket.AF_UNIX else ('127.0.0.1', 0)); l.listen(1024)
n = int(sys.argv[2]); t0 = time.perf_counter()
for i in range(n):
    s = socket.socket(fam); s.connect(l.getsockname()); s.close(); l.accept()[0].close()
print((time.perf_counter() - t0) / n * 1e6)
`
	for _, layer := range []string{"on", "off"} {
		for _, family := range []string{"unix", "tcp"} {
			b.Run("unix-connect="+layer+"/"+family, func(b *testing.B) {
				cfg := local.Config{Root: b.TempDir()}
				if layer == "off" {
					cfg.DisableLayers = []string{local.LayerUnixConnect}
				}
				sb, err := local.New(runnable(cfg))
				require.NoError(b, err)
				defer sb.Stop(context.Background())
				res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"python3", "-c", script, family, strconv.Itoa(max(b.N, 100))}, Timeout: 5 * time.Minute})
				require.NoError(b, err)
				require.Equal(b, 0, res.ExitCode, "%s", res.Stderr)
				us, err := strconv.ParseFloat(strings.TrimSpace(string(res.Stdout)), 64)
				require.NoError(b, err)
				b.ReportMetric(us, "us/connect")
			})
		}
	}
}

// A command that kills (or stops) the supervisor takes the unix-connect layer's answers away
// from its own sandbox only: every connect then fails (ENOSYS), none is let through, and the
// host's socket takes no connection. Its memory, environment and descriptors are out of the
// commands' reach (it keeps capabilities they lack, and is not dumpable).
func TestUnixSupervisorKilledFailsClosed(t *testing.T) {
	requireLayers(t, local.LayerUnixConnect)
	needTool(t, "python3")
	sb := newIsolated(t, local.Config{})
	host := unixServer(t, filepath.Join(sb.Dir(), "h.sock"))
	attack := `import os, signal, socket
sup = [p for p in os.listdir('/proc') if p.isdigit() and open('/proc/%s/cmdline' % p, 'rb').read().startswith(b'sandboxer-local-unix-supervisor')]
assert sup, 'no supervisor in /proc'
pid = int(sup[0])
for name in ('mem', 'environ'):
    try:
        open('/proc/%d/%s' % (pid, name), 'rb').read(1); print(name, 'read')
    except OSError as e:
        print(name, e.errno)
opened = 0
for fd in os.listdir('/proc/%d/fd' % pid):
    try:
        os.close(os.open('/proc/%d/fd/%s' % (pid, fd), os.O_RDONLY)); opened += 1
    except OSError:
        pass
print('fds opened', opened)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print('ptrace', libc.ptrace(16, pid, None, None), ctypes.get_errno())  # PTRACE_ATTACH
os.kill(pid, signal.SIGKILL)
for p in ('h.sock', 'own.sock'):
    if p == 'own.sock':
        l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1)
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p); print(p, 'connected')
    except OSError as e:
        print(p, e.errno)
`
	res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", attack}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Equal(t, "mem 13\nenviron 13\nfds opened 0\nptrace -1 1\nh.sock 38\nown.sock 38\n", string(res.Stdout))
	assert.Zero(t, host(), "connections on the host's socket")
}
