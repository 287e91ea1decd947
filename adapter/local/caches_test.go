package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// findCaches finds pip's and npm's caches under the home directory or where their variables say,
// Go's where its variables say, cargo's registry only where ~/.cargo is shown, and leaves out what
// is missing, another user's, inside a deny entry or the workspace.
func TestCacheDiscovery(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	for _, d := range []string{".cache/pip", ".npm", ".cargo/registry", ".ssh/gocache", "gomod", "others"} {
		require.NoError(t, os.MkdirAll(filepath.Join(home, d), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "gocache"), 0o755))
	env := map[string]string{"GOCACHE": filepath.Join(home, ".ssh/gocache"), "GOMODCACHE": filepath.Join(home, "gomod")}
	getenv := func(k string) string { return env[k] }
	cfg := Config{DenyRead: []string{filepath.Join(home, ".ssh")}}
	found, err := findCaches(cfg, getenv, home, ws, nil, nil)
	require.NoError(t, err)
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(filepath.Join(home, p))
		require.NoError(t, err)
		return r
	}
	assert.Equal(t, []cache{{real("gomod"), "GOMODCACHE"}, {real(".cache/pip"), "PIP_CACHE_DIR"}, {real(".npm"), "npm_config_cache"}}, found,
		"GOCACHE inside a deny entry is left out, cargo's registry is not shown")

	found, err = findCaches(cfg, getenv, home, ws, nil, []string{real(".cargo")})
	require.NoError(t, err)
	assert.Contains(t, found, cache{Path: real(".cargo/registry")}, "cargo's registry where ~/.cargo is shown")

	env = map[string]string{"GOCACHE": filepath.Join(ws, "gocache"), "GOMODCACHE": "/nonexistent", "PIP_CACHE_DIR": filepath.Join(home, "others"), "npm_config_cache": "relative"}
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(filepath.Join(home, "others"), 65534, 65534))
	}
	found, err = findCaches(cfg, getenv, home, ws, nil, nil)
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		assert.Empty(t, found, "inside the workspace, missing, another user's, relative")
	}
	found, err = findCaches(Config{NoCaches: true}, getenv, home, ws, nil, nil)
	assert.NoError(t, err)
	assert.Empty(t, found)
}
