package adaptertest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
)

// DirectStreamer is a sandbox of an agent that can pass its sockets to this process (the docker
// and oci adapters' direct streams, adapter/agent/direct.go).
type DirectStreamer interface {
	adapter.Sandbox
	adapter.Starter
	adapter.PortForwarder
	// DirectStreams reports whether the sandbox's streams are direct, or why not.
	DirectStreams() (bool, error)
}

// CheckDirectPort serves a page with busybox httpd in sb and reads it through DialPort. With
// direct, the streams must be direct and the connection the sandbox's own TCP socket (nothing
// relays its bytes); without, they must not be. Either way, a command can neither write to nor
// list the streams directory, mounted read-only at dir.
func CheckDirectPort(t *testing.T, sb DirectStreamer, direct bool, dir string) {
	t.Helper()
	ctx := ctxT(t)
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
	is, why := sb.DirectStreams()
	if direct {
		require.True(t, is, "the streams are not direct: %v", why)
		assert.IsType(t, &net.TCPConn{}, conn, "the forwarded port is not the sandbox's own socket")
	} else {
		assert.False(t, is, "direct streams where none can be")
	}
	fmt.Fprintf(conn, "GET /index.html HTTP/1.0\r\n\r\n")
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	body, err := io.ReadAll(bufio.NewReader(conn))
	require.NoError(t, err)
	assert.Contains(t, string(body), "from the container")

	for _, script := range []string{"touch " + dir + "/x", "mkdir " + dir + "/d", "ls " + dir} {
		res := sh(t, sb, script)
		assert.NotEqual(t, 0, res.ExitCode, "%s: %s", script, res.Stdout)
	}
}
