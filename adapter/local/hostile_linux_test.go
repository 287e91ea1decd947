package local_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// The attacks of hostile_test.go whose checks need Linux's keyrings or its pty calls.

// Finding 7: commands get a fresh session keyring; the caller's keys are out of reach.
func TestSessionKeyringIsFresh(t *testing.T) {
	requireLayers(t, local.LayerKeyring)
	needTool(t, "python3")
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the probe knows the keyctl number of amd64 and arm64 only")
	}
	mine, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, true)
	require.NoError(t, err)
	id, err := unix.AddKey("user", "sandboxer-test-"+randomToken(), []byte("caller secret"), unix.KEY_SPEC_SESSION_KEYRING)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_SESSION_KEYRING, 0, 0) })
	sb := newIsolated(t, local.Config{})
	// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1) and keyctl(KEYCTL_READ, id) of
	// the caller's key.
	probe := `import ctypes,platform,sys
nr={'x86_64':250,'aarch64':219}[platform.machine()]
libc=ctypes.CDLL(None,use_errno=True)
print(libc.syscall(nr,0,-3,1))
buf=ctypes.create_string_buffer(64)
print(libc.syscall(nr,11,int(sys.argv[1]),buf,64), buf.value)`
	res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", probe, fmt.Sprint(id)}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	require.Len(t, lines, 2)
	assert.NotEqual(t, fmt.Sprint(mine), lines[0], "the command's session keyring is not the caller's")
	assert.True(t, strings.HasPrefix(lines[1], "-1 "), "the caller's key cannot be read: %s", lines[1])
	assert.NotContains(t, string(res.Stdout), "caller secret")
	assert.Contains(t, res.Isolation.Layers, local.LayerKeyring)
}

// Finding 2: commands have no controlling terminal, so TIOCSTI cannot push input into the
// caller's shell. The test runs a sandbox in a child process whose controlling terminal is a real
// pty, and watches the pty for what a command tried to inject.
func TestNoControllingTerminal(t *testing.T) {
	if os.Getenv("SANDBOXER_TEST_TTY_CHILD") != "" {
		t.Skip("in the child")
	}
	for _, iso := range []string{local.IsolationOff, local.IsolationAuto} {
		t.Run(iso, func(t *testing.T) {
			master, slave := openPTY(t)
			cmd := exec.Command(os.Args[0], "-test.run", "^TestTTYChild$", "-test.v")
			cmd.Env = append(os.Environ(), "SANDBOXER_TEST_TTY_CHILD="+iso)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			require.NoError(t, cmd.Start())
			slave.Close()
			var got bytes.Buffer
			done := make(chan struct{})
			go func() { _, _ = got.ReadFrom(master); close(done) }()
			require.NoError(t, cmd.Wait())
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			out := got.String()
			assert.Contains(t, out, "tty child done", out)
			assert.Contains(t, out, "no tty:", "opening /dev/tty failed in the command: %s", out)
			assert.NotContains(t, out, "INJECTED", "nothing reached the terminal's input")
		})
	}
}

// TestTTYChild is the child of TestNoControllingTerminal: it runs a command that tries TIOCSTI
// on /dev/tty, then reads its own terminal's input queue for what arrived.
func TestTTYChild(t *testing.T) {
	iso := os.Getenv("SANDBOXER_TEST_TTY_CHILD")
	if iso == "" {
		t.Skip("run by TestNoControllingTerminal")
	}
	needTool(t, "python3")
	sb, err := local.New(runnable(local.Config{Root: t.TempDir(), Isolation: iso}))
	require.NoError(t, err)
	defer sb.Stop(context.Background())
	probe := `import fcntl,termios,os
try:
    fd=os.open('/dev/tty', os.O_RDWR)
except OSError as e:
    print('no tty:', e.errno)
else:
    for c in 'INJECTED\n':
        fcntl.ioctl(fd, termios.TIOCSTI, c.encode())
    print('pushed')`
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"python3", "-c", probe}, Timeout: 10 * time.Second})
	require.NoError(t, err)
	fmt.Print(string(res.Stdout), string(res.Stderr))
	// Whatever a command pushed is in this terminal's input queue now: echo it back if any.
	_ = unix.SetNonblock(0, true)
	buf := make([]byte, 256)
	if n, _ := unix.Read(0, buf); n > 0 {
		fmt.Printf("input queue: %q\n", buf[:n])
	}
	fmt.Println("tty child done")
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	return m, s
}
