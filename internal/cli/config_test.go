package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcp-max-message-bytes is a setting like the others: default < config file < environment < flag,
// and a bad value is a usage error.
func TestMCPMaxMessageBytesSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) {
		t.Helper()
		c := newMCPCmd(Streams{})
		require.NoError(t, c.Flags().Parse(args))
		return load(c.Flags())
	}
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_MCP_MAX_MESSAGE_BYTES", "")
	s, err := load("--config", cfg+".absent")
	require.Error(t, err, "an absent --config file")
	require.NoError(t, os.WriteFile(cfg, []byte("adapter: memory\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.Equal(t, DefaultMCPMaxMessageBytes, s.MCPMaxMessageBytes)
	assert.Equal(t, 16<<20, s.MCPMaxMessageBytes)

	require.NoError(t, os.WriteFile(cfg, []byte("mcp-max-message-bytes: 2048\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.Equal(t, 2048, s.MCPMaxMessageBytes, "config file")

	t.Setenv("SANDBOXER_MCP_MAX_MESSAGE_BYTES", "4096")
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.Equal(t, 4096, s.MCPMaxMessageBytes, "environment over config file")

	s, err = load("--config", cfg, "--mcp-max-message-bytes", "8192")
	require.NoError(t, err)
	assert.Equal(t, 8192, s.MCPMaxMessageBytes, "flag over environment")

	for _, bad := range []string{"0", "1023", "1073741825", "lots"} {
		t.Setenv("SANDBOXER_MCP_MAX_MESSAGE_BYTES", bad)
		_, err = load("--config", cfg)
		assert.Error(t, err, bad)
	}
}

// sync-max-file-bytes follows the same layers; a size with a unit, and 0 or garbage are usage
// errors.
func TestSyncMaxFileBytesSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) {
		t.Helper()
		c := newMCPCmd(Streams{})
		require.NoError(t, c.Flags().Parse(args))
		return load(c.Flags())
	}
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_SYNC_MAX_FILE_BYTES", "")
	require.NoError(t, os.WriteFile(cfg, []byte("adapter: memory\n"), 0o644))
	s, err := load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 100<<20, s.SyncMaxFileBytes)

	require.NoError(t, os.WriteFile(cfg, []byte("sync-max-file-bytes: 2MiB\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 2<<20, s.SyncMaxFileBytes, "config file")
	t.Setenv("SANDBOXER_SYNC_MAX_FILE_BYTES", "4096")
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 4096, s.SyncMaxFileBytes, "environment over config file")
	s, err = load("--config", cfg, "--sync-max-file-bytes", "1GiB")
	require.NoError(t, err)
	assert.EqualValues(t, 1<<30, s.SyncMaxFileBytes, "flag over environment")
	for _, bad := range []string{"0", "-1", "lots"} {
		t.Setenv("SANDBOXER_SYNC_MAX_FILE_BYTES", bad)
		_, err = load("--config", cfg)
		assert.Error(t, err, bad)
	}
}

// allow-hosts: --allow-host (repeatable) or SANDBOXER_ALLOW_HOSTS (comma-separated); validated;
// never from a config file alone (it opens the network to hosts), and not with --allow-network.
func TestAllowHostsSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) {
		t.Helper()
		c := newMCPCmd(Streams{})
		require.NoError(t, c.Flags().Parse(args))
		return load(c.Flags())
	}
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_ALLOW_HOSTS", "")
	t.Setenv("SANDBOXER_ALLOW_NETWORK", "")
	s, err := load()
	require.NoError(t, err)
	assert.Empty(t, s.AllowHosts)

	s, err = load("--allow-host", "modules.example.com", "--allow-host", "*.gitcontent.example.net,sums.example.com")
	require.NoError(t, err)
	assert.Equal(t, []string{"modules.example.com", "*.gitcontent.example.net", "sums.example.com"}, s.AllowHosts)

	t.Setenv("SANDBOXER_ALLOW_HOSTS", "modules.example.com, sums.example.com")
	s, err = load()
	require.NoError(t, err)
	assert.Equal(t, []string{"modules.example.com", "sums.example.com"}, s.AllowHosts)
	s, err = load("--allow-host", "git.example.com")
	require.NoError(t, err)
	assert.Equal(t, []string{"git.example.com"}, s.AllowHosts, "flag over environment")

	for _, bad := range []string{"*", "*.com", "http://x.example", "10.0.0.1", "a.example:443"} {
		_, err = load("--allow-host", bad)
		assert.ErrorContains(t, err, "--allow-host", bad)
	}
	_, err = load("--allow-host", "git.example.com", "--allow-network")
	assert.ErrorContains(t, err, "exclude each other")

	// A config file may not open hosts on its own; the environment or a flag may, over it.
	t.Setenv("SANDBOXER_ALLOW_HOSTS", "")
	require.NoError(t, os.WriteFile(cfg, []byte("allow-hosts: [github.com]\n"), 0o644))
	_, err = load("--config", cfg)
	assert.ErrorContains(t, err, "allow-hosts")
	s, err = load("--config", cfg, "--allow-host", "modules.example.com")
	require.NoError(t, err)
	assert.Equal(t, []string{"modules.example.com"}, s.AllowHosts)
}
