package remote_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/internal/servetest"
)

// TestCommandsCannotReachTheirServer attacks the server from inside its sandboxes (local
// adapter): a command must not reach the API (which would let it make, read or delete
// sandboxes), over TCP or through the unix socket, nor read another sandbox's workspace or the
// server's state directory; the server answers its clients as before.
func TestCommandsCannotReachTheirServer(t *testing.T) {
	dir, err := os.MkdirTemp("", "sbx-sock-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "api.sock")
	tcp := servetest.Start(t, "--adapter", "local")
	unix := servetest.Start(t, "--adapter", "local", "--listen", "unix:"+sock)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	victim, err := remote.New(ctx, remote.Config{URL: tcp.URL})
	require.NoError(t, err)
	defer victim.Stop(ctx)
	require.NoError(t, victim.WriteFile(ctx, "secret.txt", []byte("victim's secret")))
	attacker, err := remote.New(ctx, remote.Config{URL: tcp.URL})
	require.NoError(t, err)
	defer attacker.Stop(ctx)
	viaSocket, err := remote.New(ctx, remote.Config{URL: unix.URL})
	require.NoError(t, err)
	defer viaSocket.Stop(ctx)

	u, err := url.Parse(tcp.URL)
	require.NoError(t, err)
	victimWS := filepath.Join(tcp.StateDir, "serve", "sandboxes", victim.ID(), "workspace")
	require.FileExists(t, filepath.Join(victimWS, "secret.txt"))
	attacks := []struct {
		name string
		sb   *remote.Sandbox
		argv []string
		// fails: the command must fail (a connection made is the breach); otherwise it may
		// succeed as long as it shows nothing of the victim.
		fails bool
	}{
		{"the API over TCP (curl)", attacker, []string{"curl", "-sS", "--max-time", "3", "-X", "DELETE", tcp.URL + "/v1/sandboxes/" + victim.ID()}, true},
		{"the API over TCP (python)", attacker, []string{"python3", "-c", fmt.Sprintf("import socket; s=socket.create_connection(('127.0.0.1', %s), 3); s.sendall(b'GET /v1/sandboxes HTTP/1.0\\r\\n\\r\\n'); print(s.recv(100))", u.Port())}, true},
		{"the API's unix socket", viaSocket, []string{"curl", "-sS", "--max-time", "3", "--unix-socket", sock, "http://api/v1/sandboxes"}, true},
		{"another sandbox's workspace", attacker, []string{"cat", filepath.Join(victimWS, "secret.txt")}, true},
		{"the server's state directory", attacker, []string{"ls", "-R", filepath.Join(tcp.StateDir, "serve")}, false},
		{"the server's journal", attacker, []string{"cat", filepath.Join(tcp.StateDir, "journal.db")}, true},
	}
	for _, a := range attacks {
		res, err := a.sb.ExecuteCommand(ctx, adapter.Command{Args: a.argv})
		require.NoError(t, err, a.name)
		out := strings.ReplaceAll(string(res.Stdout)+string(res.Stderr), victimWS, "VICTIM_WORKSPACE")
		if a.fails {
			assert.NotEqual(t, 0, res.ExitCode, "%s: the command succeeded: %s", a.name, out)
		}
		assert.NotContains(t, out, "victim's secret", a.name)
		assert.NotContains(t, out, `"sandboxes"`, a.name)
		assert.NotContains(t, out, victim.ID(), "%s: %s", a.name, out)
	}
	// The victim is untouched and the servers serve.
	data, err := victim.ReadFile(ctx, "secret.txt")
	require.NoError(t, err)
	assert.Equal(t, "victim's secret", string(data))
	res, err := viaSocket.ExecuteCommand(ctx, adapter.Command{Args: []string{"echo", "ok"}})
	require.NoError(t, err)
	assert.Equal(t, "ok", strings.TrimSpace(string(res.Stdout)))
}
