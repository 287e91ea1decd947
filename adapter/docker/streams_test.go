package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/docker"
)

// A forwarded port is the container's own socket, handed to this process through the sandbox's
// streams directory (the daemon relays none of its bytes); the sandbox can neither write there nor
// list it; the directory goes with the sandbox.
func TestPortsAreDirectStreams(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	sb := newSandbox(t, docker.Config{})
	dir := filepath.Join(tmp, "sandboxer-docker-streams", sb.ID())
	require.DirExists(t, dir)

	adaptertest.CheckDirectPort(t, sb, true, agent.DirectSandboxDir)
	socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	assert.Len(t, socks, 1, "one socket for this handle")

	require.NoError(t, sb.Stop(context.Background()))
	assert.NoDirExists(t, dir)
	_, err := os.Stat(filepath.Dir(dir))
	assert.ErrorIs(t, err, os.ErrNotExist, "the streams base outlived its last sandbox")
}
