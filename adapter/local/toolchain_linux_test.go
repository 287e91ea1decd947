//go:build linux && !sandboxer_portable

package local_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
)

// With Config.Path empty, a command finds the caller's toolchain under its home directory (a fake
// one here) and runs it, reading its files; the credentials next to it and elsewhere in the home
// stay unreadable; a PATH directory commands cannot see is dropped; rustup's homes are named.
func TestPathFromTheCaller(t *testing.T) {
	requireLayers(t, local.LayerFSView, local.LayerLandlock)
	home, other := t.TempDir(), t.TempDir()
	write := func(p, data string, mode os.FileMode) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), mode))
	}
	cargo := filepath.Join(home, ".cargo")
	write(filepath.Join(cargo, "bin", "mytool"), "#!/bin/sh\nexec cat \"${0%/bin/*}/lib/data\"\n", 0o755)
	write(filepath.Join(cargo, "lib", "data"), "tool data\n", 0o644)
	write(filepath.Join(cargo, "credentials.toml"), "SECRET-CARGO\n", 0o644)
	write(filepath.Join(home, ".rustup", "settings.toml"), "rustup settings\n", 0o644)
	write(filepath.Join(home, ".ssh", "id_rsa"), "SECRET-SSH\n", 0o644)
	write(filepath.Join(home, "notes"), "SECRET-HOME\n", 0o644)
	write(filepath.Join(other, "othertool"), "#!/bin/sh\necho other\n", 0o755)
	t.Setenv("HOME", home)
	t.Setenv("PATH", filepath.Join(cargo, "bin")+":"+other+":"+os.Getenv("PATH"))

	// The view and Landlock, then Landlock alone (its rules carve the credentials out).
	for _, disable := range [][]string{nil, {local.LayerFSView, local.LayerUnprivileged}} {
		sb := newIsolated(t, local.Config{DisableLayers: disable})
		res := run(t, sb, adapter.Command{Args: []string{"mytool"}})
		assert.Equal(t, 0, res.ExitCode, "%v: %s", disable, res.Stderr)
		assert.Equal(t, "tool data\n", string(res.Stdout), disable)

		res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo "$PATH"; echo "$CARGO_HOME"; echo "$RUSTUP_HOME"; cat "$RUSTUP_HOME/settings.toml"`}})
		path, rest, _ := strings.Cut(string(res.Stdout), "\n")
		assert.True(t, strings.HasPrefix(path, filepath.Join(cargo, "bin")+":"), "%s", path)
		assert.NotContains(t, filepath.SplitList(path), other, "a directory outside the view is dropped")
		assert.Equal(t, cargo+"\n"+filepath.Join(home, ".rustup")+"\nrustup settings\n", rest, "%v: %s", disable, res.Stderr)
		_, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"othertool"}})
		assert.ErrorIs(t, err, errs.ProcessFailed)

		for _, secret := range []string{filepath.Join(cargo, "credentials.toml"), filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(home, "notes")} {
			res := run(t, sb, adapter.Command{Args: []string{"cat", secret}})
			assert.NotEqual(t, 0, res.ExitCode, "%v: %s is readable", disable, secret)
			assert.NotContains(t, string(res.Stdout), "SECRET", secret)
			assert.Regexp(t, "No such file|Permission denied", string(res.Stderr), secret)
		}
	}

	// Isolation off: commands see everything, so nothing is dropped.
	sb := newIsolated(t, local.Config{Isolation: local.IsolationOff})
	res := run(t, sb, adapter.Command{Args: []string{"othertool"}})
	assert.Equal(t, "other\n", string(res.Stdout))
}

// The README's `sandboxer exec -- go test ./...` on a machine with Go where its installer puts it
// (/usr/local/go/bin, not on DefaultPath): go is found on the caller's PATH and runs; so do
// rustup's proxies (~/.cargo/bin) where they are installed.
func TestToolchainsOfTheCallersPath(t *testing.T) {
	requireLayers(t, local.LayerFSView, local.LayerLandlock)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed")
	}
	sb := newIsolated(t, local.Config{})
	res := run(t, sb, adapter.Command{Args: []string{"go", "version"}})
	assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.True(t, strings.HasPrefix(string(res.Stdout), "go version go"), "%s (%s)", res.Stdout, goBin)

	home, _ := os.UserHomeDir()
	if cargo, err := exec.LookPath("cargo"); err == nil && home != "" && strings.HasPrefix(cargo, filepath.Join(home, ".cargo")+"/") {
		res := run(t, sb, adapter.Command{Args: []string{"cargo", "--version"}})
		assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.True(t, strings.HasPrefix(string(res.Stdout), "cargo "), "%s", res.Stdout)
	}
}
