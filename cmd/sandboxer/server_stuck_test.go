package main_test

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/internal/oneshot"
)

// A front must never be left waiting on a server that does not serve it, and its caller must
// never be left waiting on the front. Run these alone with
// go test ./cmd/sandboxer/ -run 'TestServer(StuckBeforeAccepting|InterruptedFront|AcceptsAfterEMFILE)'.

// fakeServer puts a socket of the test's in the place of the env's resident server: a first call
// starts the real one, which is ended; the test listens under its name, with a key the front
// reads.
func (e *env) fakeServer(t *testing.T) *net.UnixListener {
	e.write("a.txt", "abc")
	require.Equal(t, 0, e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`).code)
	socks, _ := filepath.Glob(filepath.Join(e.serverDir(), "*.sock"))
	require.Len(t, socks, 1)
	endServers(t, e.serverDir())
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socks[0], Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	require.NoError(t, os.WriteFile(strings.TrimSuffix(socks[0], ".sock")+".key", []byte("key"), 0o600))
	return ln
}

// hasSocket reports whether process pid has a socket open.
func hasSocket(pid int) bool {
	fds, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	for _, fd := range fds {
		if l, _ := os.Readlink(fd); strings.HasPrefix(l, "socket:") {
			return true
		}
	}
	return false
}

// A server that does not accept a call holds nothing of its caller's: the front's stdio goes
// only to a server that accepted the call. So an interrupted front ends its caller's wait at once
// (before, its stdout stayed open in the server's backlog until the server ended as idle, 5
// minutes later), and a front left alone runs the call in a process of its own after 5 s.
func TestServerStuckBeforeAccepting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fakeServer(t) // never accepts

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cmd := exec.Command(bin, "tool", "read", "--input", `{"path":"a.txt"}`)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.work, e.vars, w, w
	require.NoError(t, cmd.Start())
	w.Close()
	require.Eventually(t, func() bool { return hasSocket(cmd.Process.Pid) }, 10*time.Second, time.Millisecond)
	time.Sleep(200 * time.Millisecond) // connected, its request sent: it waits for the answer
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	cmd.Wait()
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r)
		close(eof)
	}()
	select {
	case <-eof:
	case <-time.After(5 * time.Second):
		t.Fatal("the caller's stdout outlived its front: the server's backlog holds it")
	}

	start := time.Now()
	res := e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, `{"ok":true,"output":"abc"}`+"\n", res.stdout)
	assert.Contains(t, res.stderr, "did not accept the call within 5s")
	assert.Less(t, time.Since(start), 20*time.Second)
}

// A front interrupted while the server runs its call tells the server (it closes its writing
// end: the server cancels the call), and waits at most 1 s for the call's status; a server
// that has not answered by then is left to end the call, and the front says so and dies of the
// signal. (TestServerCancelsWhenTheFrontIsGone: a server that answers.)
func TestServerInterruptedFront(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln := e.fakeServer(t)
	running, told := make(chan struct{}), make(chan struct{})
	go func() {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer conn.Close()
		header := make([]byte, oneshot.HeaderLen)
		if _, err := io.ReadFull(conn, header); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, conn, int64(binary.BigEndian.Uint32(header[len(oneshot.Magic):]))); err != nil {
			return
		}
		conn.Write(oneshot.Reply(oneshot.Accepted, 0))
		b, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(3*4))
		_, oobn, _, _, err := conn.ReadMsgUnix(b, oob)
		if err != nil || b[0] != oneshot.Stdio {
			return
		}
		msgs, _ := syscall.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			fds, _ := syscall.ParseUnixRights(&m)
			for _, fd := range fds {
				syscall.Close(fd)
			}
		}
		close(running)
		io.Copy(io.Discard, conn) // the call never ends, until the front closes its writing end
		close(told)
		<-t.Context().Done()
	}()
	out, err := os.Create(filepath.Join(e.base, "out"))
	require.NoError(t, err)
	defer out.Close()
	cmd := exec.Command(bin, "tool", "read", "--input", `{"path":"a.txt"}`)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.work, e.vars, out, out
	require.NoError(t, cmd.Start())
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the front did not send its stdio")
	}
	time.Sleep(100 * time.Millisecond) // the front catches signals 10 ms into its call
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws := ee.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGTERM, "the front dies of the signal: %v", ws)
	assert.Less(t, took, 3*time.Second, "the front's wait after SIGTERM")
	select {
	case <-told:
	case <-time.After(5 * time.Second):
		t.Error("the server was not told")
	}
	said, _ := os.ReadFile(out.Name())
	assert.Contains(t, string(said), "sandboxer: interrupted (terminated): the server did not end the call within 1s")
}

// The server's accept loop outlasts a shortage of descriptors: once some are free again it
// serves calls again (before, it ended at the first EMFILE, and every call waited until the
// server ended as idle, 5 minutes later).
func TestServerAcceptsAfterEMFILE(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "abc")
	// The server inherits its front's limits: started by a front under `ulimit -n 64` (soft and
	// hard: Go raises the soft limit only up to the hard one), it can hold 64 descriptors.
	sh := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, bin, "tool", "read", "--input", `{"path":"a.txt"}`)
	sh.Dir, sh.Env = e.work, e.vars
	out, err := sh.CombinedOutput()
	require.NoError(t, err, "%s", out)
	pids := e.servers()
	require.Len(t, pids, 1)
	limits, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "limits"))
	require.NoError(t, err)
	assert.Regexp(t, `Max open files\s+64\s+64`, string(limits))

	socks, _ := filepath.Glob(filepath.Join(e.serverDir(), "*.sock"))
	require.Len(t, socks, 1)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 100 { // each held by the server while it waits for a request (10 s)
		c, err := net.Dial("unix", socks[0])
		require.NoError(t, err)
		idle = append(idle, c)
	}
	require.Eventually(t, func() bool { return strings.Contains(e.serverLog(), "too many open files") }, 20*time.Second, 10*time.Millisecond)
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	start := time.Now()
	r := e.run("", nil, "tool", "read", "--input", `{"path":"a.txt"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `{"ok":true,"output":"abc"}`+"\n", r.stdout)
	assert.NotContains(t, r.stderr, "did not accept", "the server did not serve the call")
	assert.Less(t, time.Since(start), 4*time.Second)
	assert.Equal(t, pids, e.servers())
	assert.Contains(t, e.serverLog(), "accepting again")
}
