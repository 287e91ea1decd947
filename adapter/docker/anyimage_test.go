package docker_test

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/errs"
)

// debianImage is the Debian toolchain image (adaptertest.DebianImage).
func debianImage(t testing.TB) string {
	t.Helper()
	needDocker(t)
	return adaptertest.DebianImage(t)
}

// Any image runs, with real work (issue 35): an image that has never heard of sandboxer gets the
// host's agent, mounted read-only; its PATH is honoured, the commands run as the sandbox user,
// and a Go module's tests, a C program and a git commit work in /workspace, with files written and
// listed through the adapter.
func TestAnyImageRunsRealWork(t *testing.T) {
	t.Parallel()
	img := debianImage(t)
	sb := newSandbox(t, docker.Config{Image: img})
	ctx := ctxT(t)
	assert.Equal(t, agent.BroughtPath, docker.AgentBin(sb), "the host's agent serves the calls")

	adaptertest.CheckRealWork(t, sb)

	// Another handle (another process's) relays to the same agent at the same path.
	other, err := docker.Attach(ctx, docker.Config{}, sb.ID())
	require.NoError(t, err)
	defer other.Stop(ctx)
	res, err := other.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "command -v go && cat g/h"}})
	require.NoError(t, err)
	assert.Equal(t, "/usr/bin/go\nx\n", string(res.Stdout), "%s", res.Stderr)
	assert.Equal(t, agent.BroughtPath, docker.AgentBin(other))
}

// emptyImage imports an image that holds nothing but the directories a container needs: no
// shell, no tools.
func emptyImage(t *testing.T) string {
	t.Helper()
	needDocker(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"workspace/", "tmp/", "etc/", "proc/", "dev/", "sys/"} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}))
	}
	require.NoError(t, tw.Close())
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	const tag = "sandboxer-test-empty:latest"
	rc, err := c.ImageImport(ctxT(t), client.ImageImportSource{Source: &buf, SourceName: "-"}, tag, client.ImageImportOptions{})
	require.NoError(t, err)
	io.Copy(io.Discard, rc)
	rc.Close()
	return tag
}

// An image with no shell and no tools at all: the file operations are the agent's own (agent -fs),
// so they all work; a command the image lacks is not found.
func TestFilesWithoutAnyTool(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{Image: emptyImage(t)})
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "d/a.txt", []byte("aaa")))
	require.NoError(t, sb.WriteFiles(ctx, []adapter.File{{Path: "d/b", Data: []byte("bb")}, {Path: "e/c", Data: []byte("c")}}))
	require.NoError(t, sb.Symlink(ctx, "l", "d/a.txt"))
	require.NoError(t, sb.SetExecutable(ctx, "e/c", true))
	data, err := sb.ReadFile(ctx, "l")
	require.NoError(t, err)
	assert.Equal(t, "aaa", string(data))
	got := map[string]string{}
	require.NoError(t, sb.ReadFiles(ctx, []string{"d/b", "e/c"}, func(p string, d []byte) error { got[p] = string(d); return nil }))
	assert.Equal(t, map[string]string{"d/b": "bb", "e/c": "c"}, got)
	files, err := sb.ListFiles(ctx, "")
	require.NoError(t, err)
	modes := map[string]string{}
	for _, f := range files {
		modes[f.Path] = f.Mode.String()
	}
	assert.Equal(t, map[string]string{"d/a.txt": "-rw-r--r--", "d/b": "-rw-r--r--", "e/c": "-rwxr-xr-x", "l": "Lrwxrwxrwx"}, modes)
	fi, err := sb.StatFile(ctx, "l")
	require.NoError(t, err)
	assert.Equal(t, "d/a.txt", fi.Link)
	_, err = sb.ReadFile(ctx, "../etc/passwd")
	assert.ErrorIs(t, err, errs.PathEscape)
	require.NoError(t, sb.Symlink(ctx, "out", "/etc"))
	_, err = sb.ReadFile(ctx, "out/passwd")
	assert.ErrorIs(t, err, errs.PathEscape, "a link out of the workspace is not followed")
	require.NoError(t, sb.RemoveFile(ctx, "d/a.txt"))
	_, err = sb.ReadFile(ctx, "d/a.txt")
	assert.ErrorIs(t, err, errs.NotFound)

	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "true"}})
	assert.ErrorIs(t, err, errs.ProcessFailed, "the image has no shell")
}
