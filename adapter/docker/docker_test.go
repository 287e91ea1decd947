package docker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/docker"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newSandbox(t testing.TB, cfg docker.Config) *docker.Sandbox {
	t.Helper()
	needDocker(t)
	sb, err := docker.New(ctxT(t), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

// outside makes a directory in the container's /tmp (outside /workspace) holding "secret".
func outside(t *testing.T, sb adapter.Sandbox) (string, func(string) ([]byte, bool)) {
	var b [6]byte
	rand.Read(b[:])
	dir := "/tmp/outside-" + hex.EncodeToString(b[:])
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{
		Args:  []string{"sh", "-c", `mkdir -p "$1" && cat > "$1/secret"`, "sh", dir},
		Stdin: bytes.NewReader([]byte(adaptertest.SecretContent)),
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	return dir, func(name string) ([]byte, bool) {
		res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"cat", dir + "/" + name}})
		if err != nil || res.ExitCode != 0 {
			return nil, false
		}
		return res.Stdout, true
	}
}

func TestConformance(t *testing.T) {
	needDocker(t)
	adaptertest.Run(t, adaptertest.Harness{
		New:         func(t *testing.T) adapter.Sandbox { return newSandbox(t, docker.Config{}) },
		Outside:     outside,
		PrivateHome: true,
	})
}

func TestSmoke(t *testing.T) {
	sb := newSandbox(t, docker.Config{})
	ctx := ctxT(t)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	require.NoError(t, err)
	assert.Equal(t, "out\n", string(res.Stdout))
	assert.Equal(t, "err\n", string(res.Stderr))
	assert.Equal(t, 3, res.ExitCode)
	require.NoError(t, sb.WriteFile(ctx, "a/b.txt", []byte("hello")))
	data, err := sb.ReadFile(ctx, "a/b.txt")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
}
