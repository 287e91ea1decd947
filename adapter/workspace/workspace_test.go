package workspace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/workspace"
	"github.com/sandboxer/sandboxer/errs"
)

// refused asserts that Vet refuses dir by rule.
func refused(t *testing.T, rule, dir string, own ...string) {
	t.Helper()
	err := workspace.Vet(dir, own...)
	require.ErrorIs(t, err, errs.InvalidInput, "%s must be refused", dir)
	assert.Equal(t, rule, errs.As(err).Details["rule"], "%s: %v", dir, err)
}

func TestSystemDirectoriesAreRefused(t *testing.T) {
	for _, dir := range []string{"/", "/etc", "/usr", "/usr/local", "/var", "/var/lib", "/tmp", "/home", "/root", "/opt", "/etc/.."} {
		refused(t, workspace.RuleSystem, dir)
	}
	for _, dir := range []string{"/etc/ssl", "/usr/local/bin", "/usr/lib/x", "/proc/self", "/sys/fs", "/run/user", "/boot/efi", "/dev/shm"} {
		refused(t, workspace.RuleSystemTree, dir)
	}
}

func TestProjectDirectoriesAreAccepted(t *testing.T) {
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "not", "made", "yet"),
		"/usr/src/app-that-does-not-exist", "/var/lib/ci/workspace/project-that-does-not-exist", "/opt/project-that-does-not-exist"} {
		require.NoError(t, workspace.Vet(dir), dir)
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	require.NoError(t, workspace.Vet(filepath.Join(home, "src", "project-that-does-not-exist")), "a project inside a home directory")
}

func TestHomeDirectoriesAndTheirParentsAreRefused(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "users", "me")
	require.NoError(t, os.MkdirAll(home, 0o755))
	t.Setenv("HOME", home)
	refused(t, workspace.RuleHome, home)
	refused(t, workspace.RuleHome, filepath.Join(base, "users"))
	refused(t, workspace.RuleHome, base)
	require.NoError(t, workspace.Vet(filepath.Join(home, "project")))
	// Every account's home of /etc/passwd, not only the caller's: root's is a system directory
	// anyway; the others are checked when they exist.
	refused(t, workspace.RuleSystem, "/root")
}

func TestLinksAreResolved(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, os.Symlink("/", filepath.Join(base, "slash")))
	require.NoError(t, os.Symlink("/etc", filepath.Join(base, "etc")))
	refused(t, workspace.RuleSystem, filepath.Join(base, "slash"))
	refused(t, workspace.RuleSystem, filepath.Join(base, "etc"))
	refused(t, workspace.RuleSystemTree, filepath.Join(base, "slash", "etc", "ssl"))
	refused(t, workspace.RuleSystemTree, filepath.Join(base, "etc", "new-dir"))

}

func TestDirectoriesHoldingSandboxersFilesAreRefused(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "project", ".state")
	refused(t, workspace.RuleOwnFile, filepath.Join(base, "project"), state)
	refused(t, workspace.RuleOwnFile, base, state)
	require.NoError(t, workspace.Vet(filepath.Join(base, "other"), state))
	// A file given by a link is protected where the link leads and where it is.
	real := filepath.Join(base, "bin", "sandboxer")
	require.NoError(t, os.MkdirAll(filepath.Dir(real), 0o755))
	require.NoError(t, os.WriteFile(real, nil, 0o755))
	link := filepath.Join(base, "links", "sandboxer")
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(real, link))
	refused(t, workspace.RuleOwnFile, filepath.Join(base, "bin"), link)
	refused(t, workspace.RuleOwnFile, filepath.Join(base, "links"), link)

	// Always protected: this executable and $XDG_RUNTIME_DIR.
	exe, err := os.Executable()
	require.NoError(t, err)
	refused(t, workspace.RuleOwnFile, filepath.Dir(exe))
	runtime := filepath.Join(base, "run")
	require.NoError(t, os.Mkdir(runtime, 0o700))
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	refused(t, workspace.RuleOwnFile, runtime)
}

// BenchmarkVet is what vetting costs a call (the CLI vets every local call's workspace).
//
//	go test -run '^$' -bench Vet ./adapter/workspace/
func BenchmarkVet(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if err := workspace.Vet(dir, filepath.Join(dir, "..", "state")); err != nil {
			b.Fatal(err)
		}
	}
}
