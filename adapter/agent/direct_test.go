package agent_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// echoServer accepts connections on the host's loopback and echoes them until ln closes.
func echoServer(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				io.Copy(conn, conn)
			}()
		}
	}()
	return portOf(t, ln.Addr().String())
}

func sockets(t *testing.T, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "*.sock"))
	require.NoError(t, err)
	return m
}

func TestDirectStreamsTurnAwayOthers(t *testing.T) {
	c, _ := serve(t)
	dir := t.TempDir()
	c.SetDirect(dir, dir)
	port := echoServer(t)
	conn, err := c.Dial(testCtx(t), port)
	require.NoError(t, err)
	defer conn.Close()
	direct, why := c.DirectStreams()
	require.True(t, direct, "%v", why)
	assert.IsType(t, &net.TCPConn{}, conn, "the stream is not the sandbox's own socket")
	_, err = conn.Write([]byte("ping"))
	require.NoError(t, err)
	b := make([]byte, 4)
	_, err = io.ReadFull(conn, b)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(b))

	// Anyone else who connects to the client's socket without its token is turned away at once,
	// whatever the header says.
	socks := sockets(t, dir)
	require.Len(t, socks, 1)
	info, err := os.Stat(socks[0])
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, info.Mode().Type())
	for _, header := range []string{"", "SBD1", "SBD1" + string(make([]byte, 24)), "GET / HTTP/1.0\r\n\r\n......."} {
		other, err := net.Dial("unix", socks[0])
		require.NoError(t, err)
		other.Write([]byte(header))
		if len(header) < 28 {
			other.(*net.UnixConn).CloseWrite()
		}
		require.NoError(t, other.SetReadDeadline(time.Now().Add(10*time.Second)))
		n, err := other.Read(make([]byte, 1))
		assert.Equal(t, 0, n)
		assert.ErrorIs(t, err, io.EOF, "header %q: the connection was not closed", header)
		other.Close()
	}

	// The link's end removes the socket. A direct stream is the sandbox's own socket: it ends
	// when its peer closes it (or the sandbox stops), not with the link.
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return len(sockets(t, dir)) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the client's socket outlived it")
	_, err = conn.Write([]byte("pong"))
	require.NoError(t, err)
	_, err = io.ReadFull(conn, b)
	require.NoError(t, err)
	assert.Equal(t, "pong", string(b))
}

func TestDialsOverSpareConnections(t *testing.T) {
	c, _ := serve(t)
	dir := t.TempDir()
	c.SetDirect(dir, dir)
	port := echoServer(t)
	ctx := testCtx(t)
	waitSpares := func() {
		require.Eventually(t, func() bool { return agent.SparesAtHand(c) == 2 }, 10*time.Second, time.Millisecond,
			"the agent keeps two spare connections")
	}
	first, err := c.Dial(ctx, port)
	require.NoError(t, err)
	defer first.Close()
	var conns []net.Conn
	for i := range 10 {
		waitSpares()
		conn, err := c.Dial(ctx, port)
		require.NoError(t, err)
		conns = append(conns, conn)
		assert.IsType(t, &net.TCPConn{}, conn, "the stream is not the sandbox's own socket")
		msg := []byte("hello " + string(rune('a'+i)))
		_, err = conn.Write(msg)
		require.NoError(t, err)
		back := make([]byte, len(msg))
		_, err = io.ReadFull(conn, back)
		require.NoError(t, err)
		assert.Equal(t, string(msg), string(back))
	}
	assert.Less(t, agent.SparesAtHand(c), 3)
	for _, conn := range conns {
		conn.Close()
	}
	// Errors come back on the spare as they do over the link.
	var re *agent.RequestError
	waitSpares()
	_, err = c.Dial(ctx, 0)
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, "invalid", re.Code)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := portOf(t, ln.Addr().String())
	ln.Close()
	waitSpares()
	_, err = c.Dial(ctx, closed)
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, "refused", re.Code)
	// A cancelled dial returns at once.
	waitSpares()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Dial(cctx, port)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestDirectStreamsInADeepDirectory(t *testing.T) {
	c, _ := serve(t)
	// A unix socket's path is limited to ~100 bytes; the client's is bound through a descriptor
	// of its directory.
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	sandboxSide := filepath.Join(t.TempDir(), "s")
	require.NoError(t, os.Symlink(dir, sandboxSide)) // the sandbox's short name for it
	c.SetDirect(dir, sandboxSide)
	conn, err := c.Dial(testCtx(t), echoServer(t))
	require.NoError(t, err)
	defer conn.Close()
	ok, why := c.DirectStreams()
	require.True(t, ok, "%v", why)
	require.Len(t, sockets(t, dir), 1)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return len(sockets(t, dir)) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the client's socket outlived it")
}

func TestNoSharedDirectoryMeansMultiplexedStreams(t *testing.T) {
	c, _ := serve(t)
	dir := t.TempDir()
	// The sandbox does not see the directory where the host listens (a remote daemon, a runtime
	// that refuses host sockets): the probe fails and streams are multiplexed.
	c.SetDirect(dir, filepath.Join(t.TempDir(), "elsewhere"))
	port := echoServer(t)
	conn, err := c.Dial(testCtx(t), port)
	require.NoError(t, err)
	defer conn.Close()
	direct, _ := c.DirectStreams()
	assert.False(t, direct)
	assert.Empty(t, sockets(t, dir), "the failed probe's socket was left behind")
	_, err = conn.Write([]byte("pong"))
	require.NoError(t, err)
	b := make([]byte, 4)
	_, err = io.ReadFull(conn, b)
	require.NoError(t, err)
	assert.Equal(t, "pong", string(b))
}
