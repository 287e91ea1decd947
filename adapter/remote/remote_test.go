package remote_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/sandboxer/sandboxer/tools/toolstest"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(servetest.Main(m)) }

// server is one real `sandboxerd serve` on loopback (local adapter) for the package's suites.
func server(t *testing.T) *servetest.Server {
	return servetest.Start(t, "--adapter", "local")
}

func opener(srv *servetest.Server) func(t *testing.T) adapter.Sandbox {
	return func(t *testing.T) adapter.Sandbox {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
		require.NoError(t, err)
		t.Cleanup(func() { sb.Stop(context.Background()) })
		return sb
	}
}

// outside is a host directory: the server runs on this host, its local sandboxes' commands see
// the host's paths (those the view shows).
func outside(t *testing.T, _ adapter.Sandbox) (string, func(string) ([]byte, bool)) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(adaptertest.SecretContent), 0o600))
	return dir, func(name string) ([]byte, bool) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		return data, err == nil
	}
}

func TestConformance(t *testing.T) {
	srv := server(t)
	adaptertest.Run(t, adaptertest.Harness{New: opener(srv), Outside: outside, PrivateHome: true})
}

func TestTools(t *testing.T) {
	toolstest.Run(t, opener(server(t)))
}

func TestFileSync(t *testing.T) {
	filesynctest.Run(t, filesynctest.Harness{New: opener(server(t))})
}
