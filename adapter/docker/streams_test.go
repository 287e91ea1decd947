package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
)

// A forwarded port is the container's own socket, handed to this process through the sandbox's
// streams directory (the daemon relays none of its bytes); the sandbox can neither write there nor
// list it; the directory goes with the sandbox.
func TestPortsAreDirectStreams(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	sb := newSandbox(t, docker.Config{})
	ctx := ctxT(t)
	dir := filepath.Join(tmp, "sandboxer-docker-streams", sb.ID())
	require.DirExists(t, dir)

	require.NoError(t, sb.WriteFile(ctx, "www/index.html", []byte("from the container")))
	p, err := sb.Start(ctx, adapter.Command{Dir: "www", Args: []string{"busybox", "httpd", "-f", "-p", "127.0.0.1:8080", "-h", "."}})
	require.NoError(t, err)
	defer p.Signal(context.Background(), "KILL")
	var conn net.Conn
	require.Eventually(t, func() bool {
		conn, err = sb.DialPort(ctx, 8080)
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "httpd never answered: %v", err)
	defer conn.Close()
	direct, why := sb.DirectStreams()
	require.True(t, direct, "the streams are not direct: %v", why)
	assert.IsType(t, &net.TCPConn{}, conn, "the forwarded port is not the container's own socket")
	fmt.Fprintf(conn, "GET /index.html HTTP/1.0\r\n\r\n")
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	body, err := io.ReadAll(bufio.NewReader(conn))
	require.NoError(t, err)
	assert.Contains(t, string(body), "from the container")
	socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	assert.Len(t, socks, 1, "one socket for this handle")

	for _, script := range []string{"touch /run/sandboxer/x", "mkdir /run/sandboxer/d", "ls /run/sandboxer"} {
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", script}})
		require.NoError(t, err)
		assert.NotEqual(t, 0, res.ExitCode, "%s: %s", script, res.Stdout)
	}
	socks, _ = filepath.Glob(filepath.Join(dir, "*.sock"))
	assert.Len(t, socks, 1)

	require.NoError(t, sb.Stop(context.Background()))
	assert.NoDirExists(t, dir)
	_, err = os.Stat(filepath.Dir(dir))
	assert.ErrorIs(t, err, os.ErrNotExist, "the streams base outlived its last sandbox")
}
