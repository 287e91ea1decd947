package main_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// project fills the env's workspace (the current directory of every run) with a small Go module.
func project(e *env) {
	e.write("go.mod", "module example.com/p\n\ngo 1.22\n")
	e.write("main.go", "package main\n\nfunc main() { println(\"hi\") }\n")
	e.write("a", "old a\n")
	e.write("sub/deep/f.txt", "deep\n")
	require.NoError(e.t, os.Chmod(filepath.Join(e.work, "main.go"), 0o600))
}

// ownedByCaller asserts that the host file p is the test's user's.
func ownedByCaller(t *testing.T, p string) {
	t.Helper()
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	assert.Equal(t, uint32(os.Getuid()), st.Uid, "%s: owner", p)
	assert.Equal(t, uint32(os.Getgid()), st.Gid, "%s: group", p)
}

// A one-shot docker call sees the project (--root, default the current directory) and what it
// changes lands there, owned by the caller: created, changed and deleted files, a directory
// emptied by the call gone; permissions of a changed file kept.
func TestOneShotDockerWorksOnTheProject(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	e := newEnv(t)
	project(e)

	r := e.run("", nil, "exec", "--adapter", "docker", "--", "sh", "-c", "ls; cat sub/deep/f.txt")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "a\ngo.mod\nmain.go\nsub\ndeep\n", r.stdout)

	r = e.run("", nil, "exec", "--adapter", "docker", "--", "sh", "-c",
		"rm a; echo x > b; rm -r sub; echo '// more' >> main.go; mkdir -p n/m && echo y > n/m/c")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NoFileExists(t, filepath.Join(e.work, "a"))
	assert.NoDirExists(t, filepath.Join(e.work, "sub"), "a directory the call emptied goes")
	for p, want := range map[string]string{"b": "x\n", "n/m/c": "y\n"} {
		got, err := os.ReadFile(filepath.Join(e.work, p))
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
		ownedByCaller(t, filepath.Join(e.work, p))
	}
	got, err := os.ReadFile(filepath.Join(e.work, "main.go"))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(got), "// more\n"), string(got))
	fi, err := os.Stat(filepath.Join(e.work, "main.go"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a changed file keeps its permissions")
	ownedByCaller(t, filepath.Join(e.work, "main.go"))

	// tool write lands in --root (here another directory than the current one), and the next
	// call sees it.
	other := filepath.Join(e.base, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	r = e.run("", nil, "tool", "write", "--adapter", "docker", "--root", other, "--input", `{"path":"w/t.txt","content":"written\n"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	got, err = os.ReadFile(filepath.Join(other, "w", "t.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written\n", string(got))
	ownedByCaller(t, filepath.Join(other, "w", "t.txt"))
	r = e.run("", nil, "tool", "read", "--adapter", "docker", "--root", other, "--input", `{"path":"w/t.txt"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "written")

	// Nothing of sandboxer's own is left in the project.
	entries, err := os.ReadDir(e.work)
	require.NoError(t, err)
	var names []string
	for _, d := range entries {
		names = append(names, d.Name())
	}
	assert.Equal(t, []string{"b", "go.mod", "main.go", "n"}, names)

	// The project is vetted as the local adapter's workspace: a home directory is refused.
	r = e.runIn(filepath.Join(e.base, "home"), nil, "tool", "bash", "--adapter", "docker", "--input", `{"cmd":"true"}`)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--root")
}

// tool write on a one-shot oci sandbox (runc) lands in --root, owned by the caller.
func TestOneShotOCIWriteLands(t *testing.T) {
	t.Parallel()
	requireRuntime(t, "runc")
	e := newEnv(t)
	project(e)
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })
	r := e.run("", nil, "tool", "write", "--adapter", "oci", "--input", `{"path":"notes/todo.md","content":"- ship it\n"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	got, err := os.ReadFile(filepath.Join(e.work, "notes", "todo.md"))
	require.NoError(t, err)
	assert.Equal(t, "- ship it\n", string(got))
	ownedByCaller(t, filepath.Join(e.work, "notes", "todo.md"))
	r = e.run("", nil, "exec", "--adapter", "oci", "--", "sh", "-c", "cat notes/todo.md go.mod; rm a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "- ship it\nmodule example.com/p\n\ngo 1.22\n", r.stdout)
	assert.NoFileExists(t, filepath.Join(e.work, "a"))
}

// A file changed on the host while a one-shot call runs is not overwritten by what the call
// wrote there, and the call says so; its other changes land. The command waits on its standard
// input for the host's change (no timing).
func TestOneShotConflictNotOverwritten(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	e := newEnv(t)
	project(e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--adapter", "docker", "-i", "--", "sh", "-c",
		"echo sandbox > a; echo new > fresh; echo ready; read x")
	cmd.Dir, cmd.Env = e.work, e.vars
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, stderr.String())
	require.Equal(t, "ready\n", line)
	require.NoError(t, os.WriteFile(filepath.Join(e.work, "a"), []byte("host\n"), 0o644))
	_, err = io.WriteString(stdin, "go\n")
	require.NoError(t, err)
	stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(t, cmd.Wait(), stderr.String())

	got, err := os.ReadFile(filepath.Join(e.work, "a"))
	require.NoError(t, err)
	assert.Equal(t, "host\n", string(got), "the host's change stays")
	assert.Contains(t, stderr.String(), "1 conflict(s), not overwritten")
	assert.Contains(t, stderr.String(), ": a (modify)")
	got, err = os.ReadFile(filepath.Join(e.work, "fresh"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(got), "the call's other changes land")

	// A later call that changes nothing reports no conflict (the host's version is its base).
	r := e.run("", nil, "tool", "bash", "--adapter", "docker", "--input", `{"cmd":"true"}`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "warning", "nothing changed: no conflict")
}

// Hostile links: neither a link in the project that leads outside nor one the sandbox makes
// lets the sync read or write outside the project on the host.
func TestOneShotLinksStayInside(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	e := newEnv(t)
	project(e)
	outside := filepath.Join(e.base, "outside")
	require.NoError(t, os.Mkdir(outside, 0o755))
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret 7f3a\n"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(e.work, "abs")))
	require.NoError(t, os.Symlink("../outside/secret", filepath.Join(e.work, "rel")))
	require.NoError(t, os.Symlink("../outside", filepath.Join(e.work, "dirlink")))
	require.NoError(t, os.Symlink("go.mod", filepath.Join(e.work, "inside")))
	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)

	// Reading: the links leading out are not made in the sandbox; the one inside is.
	r := e.run("", nil, "exec", "--adapter", "docker", "--", "sh", "-c",
		"cat abs rel dirlink/secret 2>/dev/null; readlink inside; ls")
	assert.NotContains(t, r.stdout, "7f3a", r.stderr)
	assert.Equal(t, "go.mod\na\ngo.mod\ninside\nmain.go\nsub\n", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "not copied into the sandbox")

	// Writing: links to /etc/passwd and out of the project, a real directory where the host has a
	// link out, a file replaced by a link out.
	r = e.run("", nil, "exec", "--adapter", "docker", "--", "sh", "-c",
		"ln -s /etc/passwd pw; ln -s ../outside/secret up; mkdir dirlink; echo pwned > dirlink/secret; echo pwned > dirlink/new;"+
			"rm a; ln -s /etc/passwd a; echo ok > plain")
	require.Equal(t, 0, r.code, r.stderr)
	got, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	assert.Equal(t, passwd, got, "/etc/passwd untouched")
	got, err = os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, "host secret 7f3a\n", string(got))
	assert.NoFileExists(t, filepath.Join(outside, "new"))
	for _, p := range []string{"pw", "up"} {
		_, err := os.Lstat(filepath.Join(e.work, p))
		assert.ErrorIs(t, err, os.ErrNotExist, "%s: a link out is never made on the host", p)
	}
	got, err = os.ReadFile(filepath.Join(e.work, "a"))
	require.NoError(t, err)
	assert.Equal(t, "old a\n", string(got), "a file replaced by a link out is left as it was")
	target, err := os.Readlink(filepath.Join(e.work, "dirlink"))
	require.NoError(t, err)
	assert.Equal(t, "../outside", target)
	got, err = os.ReadFile(filepath.Join(e.work, "plain"))
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(got), "the other changes land")
}

// A one-shot kubernetes call works on the project as docker's and oci's do: the pod sees the files
// of --root, and what it changes lands there, the caller's. Run by CI's kubernetes stage.
func TestKubernetesOneShotWorksOnTheProject(t *testing.T) {
	t.Parallel()
	vars, _ := k8sEnv(t)
	e := newEnv(t)
	e.vars = append(e.vars, vars...)
	project(e)
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })
	r := e.run("", nil, "exec", "--adapter", "kubernetes", "--", "sh", "-c", "cat go.mod sub/deep/f.txt; rm a; echo new > b")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "module example.com/p\n\ngo 1.22\ndeep\n", r.stdout)
	assert.NoFileExists(t, filepath.Join(e.work, "a"))
	got, err := os.ReadFile(filepath.Join(e.work, "b"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(got))
	ownedByCaller(t, filepath.Join(e.work, "b"))
	r = e.run("", nil, "tool", "write", "--adapter", "kubernetes", "--input", `{"path":"notes/todo.md","content":"x"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.FileExists(t, filepath.Join(e.work, "notes", "todo.md"))
}

// A long-lived docker sandbox made with --root starts with the project's files; what its calls
// change stays in it (the project is as it was); a home directory is refused as --root and
// leaves no sandbox.
func TestSandboxCreateWithRoot(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	e := newEnv(t)
	project(e)
	r := e.run("", nil, "sandbox", "create", "--adapter", "docker", "--root", e.work)
	require.Equal(t, 0, r.code, r.stderr)
	id := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(r.stdout), `{"id":"`), `"}`)
	require.NotEmpty(t, id, r.stdout)
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", "cat sub/deep/f.txt go.mod; rm a; echo new > b")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "deep\nmodule example.com/p\n\ngo 1.22\n", r.stdout)
	r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", "ls")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "b\ngo.mod\nmain.go\nsub\n", r.stdout, "the sandbox keeps its changes")
	assert.FileExists(t, filepath.Join(e.work, "a"), "nothing is synced back")
	assert.NoFileExists(t, filepath.Join(e.work, "b"))

	r = e.run("", nil, "sandbox", "create", "--adapter", "docker", "--root", filepath.Join(e.base, "home"))
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "home")
	r = e.run("", nil, "sandbox", "ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout, `"id"`), "the refused create left no sandbox: %s", r.stdout)
}
