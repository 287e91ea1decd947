package docker_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/errs"
)

// testTag is a tag of this test's own, removed (with what it names) when the test ends.
func testTag(t *testing.T, name string) string {
	t.Helper()
	needDocker(t)
	var b [4]byte
	rand.Read(b[:])
	tag := "sandboxer-test-" + name + ":" + hex.EncodeToString(b[:])
	t.Cleanup(func() { removeImage(t, tag) })
	return tag
}

func dockerClient(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func removeImage(t testing.TB, ref string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer c.Close()
	_, err = c.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Errorf("remove image %s: %v", ref, err)
	}
}

func imageExists(t testing.TB, ref string) bool {
	t.Helper()
	_, err := dockerClient(t).ImageInspect(ctxT(t), ref)
	if cerrdefs.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// busyboxTree makes a small root file system in a new directory: the host's static busybox with
// a few applets, a script on a PATH of its own, a hard link, and a stale "agent" that the build
// must replace.
func busyboxTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{"bin", "etc", "tmp", "opt/bin", "usr/local/bin"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "tmp"), 0o1777))
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Skip("no /bin/busybox (busybox-static):", err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin/busybox"), bb, 0o755))
	for _, a := range []string{"sh", "cat", "echo", "id", "ls", "test", "stat", "mkdir", "cp", "chmod", "find", "sort"} {
		require.NoError(t, os.Symlink("busybox", filepath.Join(dir, "bin", a)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "opt/bin/hello"), []byte("#!/bin/sh\necho hello from the image\n"), 0o755))
	require.NoError(t, os.Link(filepath.Join(dir, "opt/bin/hello"), filepath.Join(dir, "opt/bin/hi")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, strings.TrimPrefix(agent.Path, "/")), []byte("#!/bin/sh\nexit 99\n"), 0o755))
	return dir
}

// usesImageAgent checks that sb's calls are served by the agent the image carries (not the
// host's, brought in) and that a command and the file operations work.
func usesImageAgent(t *testing.T, sb *docker.Sandbox) {
	t.Helper()
	ctx := ctxT(t)
	assert.Equal(t, agent.Path, docker.AgentBin(sb), "the image's own agent serves the calls")
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c",
		"test -e " + agent.BroughtPath + " && echo brought; id -u; hello"}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Equal(t, "1000\nhello from the image\n", string(res.Stdout), "%s", res.Stderr)
	require.NoError(t, sb.WriteFile(ctx, "d/f.txt", []byte("written")))
	data, err := sb.ReadFile(ctx, "d/f.txt")
	require.NoError(t, err)
	assert.Equal(t, "written", string(data))
	files, err := sb.ListFiles(ctx, "d")
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Equal(t, "d/f.txt", files[0].Path)
}

// A root file system directory becomes an image with the agent: the sandbox uses the image's
// agent, the image's PATH (from --change) finds its tools, the stale agent of the tree is
// replaced, hard links stay links; the same tree again is up to date, a changed one is rebuilt
// and the image it replaced goes.
func TestImageFromRootfsDir(t *testing.T) {
	t.Parallel()
	dir := busyboxTree(t)
	tag := testTag(t, "rootfs-dir")
	ctx := ctxT(t)
	o := image.Options{FromRootfs: dir, Tag: tag, Changes: []string{"ENV PATH=/opt/bin:/bin"}}
	res, err := image.Build(ctx, o)
	require.NoError(t, err)
	assert.True(t, res.Built)

	ins, err := dockerClient(t).ImageInspect(ctx, tag)
	require.NoError(t, err)
	assert.Equal(t, []string{"PATH=/opt/bin:/bin"}, ins.Config.Env)
	assert.Equal(t, image.KindRootfs, ins.Config.Labels[image.LabelImage])
	assert.Equal(t, agent.Version, ins.Config.Labels[image.LabelAgent])
	assert.Equal(t, res.ContentHash, ins.Config.Labels[image.LabelContentHash])

	sb := newSandbox(t, docker.Config{Image: tag})
	usesImageAgent(t, sb)
	r, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c",
		"stat -c %i /opt/bin/hello /opt/bin/hi; stat -c '%a %s' " + agent.Path + "; echo $PATH"}})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	require.Len(t, lines, 4, "%s%s", r.Stdout, r.Stderr)
	assert.Equal(t, lines[0], lines[1], "a hard link stays one file")
	bin, err := rootfs.AgentBinary("")
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("755 %d", len(bin)), lines[2], "the tree's stale agent is replaced")
	assert.True(t, strings.HasPrefix(lines[3], "/opt/bin:/bin"), lines[3])

	again, err := image.Build(ctx, o)
	require.NoError(t, err)
	assert.False(t, again.Built, "the same tree is up to date")
	assert.Equal(t, res.ID, again.ID)

	// A changed tree is built again; the image it replaces goes once no container uses it.
	require.NoError(t, sb.Stop(ctx))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etc/motd"), []byte("changed\n"), 0o644))
	changed, err := image.Build(ctx, o)
	require.NoError(t, err)
	assert.True(t, changed.Built)
	assert.NotEqual(t, res.ContentHash, changed.ContentHash)
	assert.NotEqual(t, res.ID, changed.ID)
	assert.False(t, imageExists(t, res.ID), "the replaced image is removed")
}

// tarOf writes the tree dir as a gzip-compressed tar whose names start with "./", as tar -C dir
// -czf does.
func tarOf(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "root.tar.gz")
	f, err := os.Create(out)
	require.NoError(t, err)
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			link, _ = os.Readlink(p)
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = "./" + filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	}))
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return out
}

// A gzip-compressed tar of a root file system works as its directory does.
func TestImageFromRootfsTarball(t *testing.T) {
	t.Parallel()
	tgz := tarOf(t, busyboxTree(t))
	tag := testTag(t, "rootfs-tar")
	ctx := ctxT(t)
	o := image.Options{FromRootfs: tgz, Tag: tag, Changes: []string{"ENV PATH=/opt/bin:/bin"}}
	res, err := image.Build(ctx, o)
	require.NoError(t, err)
	assert.True(t, res.Built)
	usesImageAgent(t, newSandbox(t, docker.Config{Image: tag}))
	again, err := image.Build(ctx, o)
	require.NoError(t, err)
	assert.False(t, again.Built)
}

// A Dockerfile FROM a local image that has never heard of sandboxer (the busybox tree imported
// by the test as it is, a stale agent at the agent's path), with a context elsewhere and its
// .dockerignore: the build keeps the Dockerfile's user, PATH and environment and adds the agent
// on top, a sandbox of it uses that agent, and a second build is up to date.
func TestImageFromDockerfile(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	base := testTag(t, "dockerfile-base")
	f, err := os.Open(tarOf(t, busyboxTree(t)))
	require.NoError(t, err)
	defer f.Close()
	rc, err := dockerClient(t).ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, base, client.ImageImportOptions{})
	require.NoError(t, err)
	io.Copy(io.Discard, rc)
	rc.Close()
	tag := testTag(t, "dockerfile")
	dir := t.TempDir()
	write := func(name, data string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	write("ctx/tool.sh", "#!/bin/sh\necho \"$GREETING from the tool\"\n")
	write("ctx/secret.txt", "not sent\n")
	write("ctx/junk/big", "not sent\n")
	write("ctx/junk/keep", "sent\n")
	write("ctx/.dockerignore", "secret.txt\njunk\n!junk/keep\n")
	// The Dockerfile lies outside the context.
	write("Dockerfile", "FROM "+base+"\n"+
		"ENV GREETING=bonjour PATH=/opt/tools/bin:/opt/bin:/bin\n"+
		"COPY . /ctx/\n"+
		"RUN mkdir -p /opt/tools/bin && cp /ctx/tool.sh /opt/tools/bin/tool && chmod 755 /opt/tools/bin/tool\n"+
		"USER 1000:1000\n")
	o := image.Options{FromDockerfile: filepath.Join(dir, "Dockerfile"), Context: filepath.Join(dir, "ctx"), Tag: tag}
	res, err := image.Build(ctx, o)
	require.NoError(t, err)
	assert.True(t, res.Built)

	ins, err := dockerClient(t).ImageInspect(ctx, tag)
	require.NoError(t, err)
	assert.Equal(t, "1000:1000", ins.Config.User, "the Dockerfile's user")
	assert.ElementsMatch(t, []string{"GREETING=bonjour", "PATH=/opt/tools/bin:/opt/bin:/bin"}, ins.Config.Env)
	assert.Equal(t, image.KindDockerfile, ins.Config.Labels[image.LabelImage])
	assert.Equal(t, agent.Version, ins.Config.Labels[image.LabelAgent])
	assert.Equal(t, res.ContentHash, ins.Config.Labels[image.LabelContentHash])

	sb := newSandbox(t, docker.Config{Image: tag})
	usesImageAgent(t, sb)
	r, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "tool; cd /ctx && find . -type f | sort"}})
	require.NoError(t, err)
	assert.Equal(t, "bonjour from the tool\n./.dockerignore\n./junk/keep\n./tool.sh\n", string(r.Stdout), "%s", r.Stderr)

	again, err := image.Build(ctx, o)
	require.NoError(t, err)
	assert.False(t, again.Built, "the builder's cache gives the same image")
	assert.Equal(t, res.ID, again.ID)
}

// A Dockerfile FROM the Debian toolchain image: the image keeps the toolchain's PATH, and a
// sandbox of it runs real work (a Go module's tests, make, Python, git) with the image's agent.
// Each step of the classic builder on this 1.2 GB image costs a walk of its tree with
// fuse-overlayfs: minutes on a loaded machine.
func TestImageFromDockerfileToolchain(t *testing.T) {
	t.Parallel()
	base := debianImage(t)
	tag := testTag(t, "dockerfile-toolchain")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	df := filepath.Join(t.TempDir(), "Dockerfile")
	require.NoError(t, os.WriteFile(df, []byte("FROM "+base+"\nENV GREETING=bonjour\n"), 0o644))
	_, err := image.Build(ctx, image.Options{FromDockerfile: df, Tag: tag})
	require.NoError(t, err)
	was, err := dockerClient(t).ImageInspect(ctx, base)
	require.NoError(t, err)
	ins, err := dockerClient(t).ImageInspect(ctx, tag)
	require.NoError(t, err)
	assert.Equal(t, append(slices.Clone(was.Config.Env), "GREETING=bonjour"), ins.Config.Env, "the toolchain's PATH is kept")

	sb := newSandbox(t, docker.Config{Image: tag})
	assert.Equal(t, agent.Path, docker.AgentBin(sb), "the image's own agent serves the calls")
	adaptertest.CheckRealWork(t, sb)
}

// Bad input gets a clear error with a code, and leaves the tag as it was.
func TestImageBuildBadInput(t *testing.T) {
	t.Parallel()
	needDocker(t)
	ctx := ctxT(t)
	dir := t.TempDir()
	file := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))
	tag := testTag(t, "bad")

	for _, c := range []struct {
		name string
		o    image.Options
		code errs.Code
	}{
		{"missing directory", image.Options{FromRootfs: filepath.Join(dir, "nothing"), Tag: tag}, errs.NotFound},
		{"empty directory", image.Options{FromRootfs: filepath.Join(dir, "empty"), Tag: tag}, errs.InvalidInput},
		{"not a tar", image.Options{FromRootfs: file("notes.txt", strings.Repeat("not a tar archive\n", 64)), Tag: tag}, errs.InvalidInput},
		{"xz", image.Options{FromRootfs: file("root.tar.xz", "\xfd7zXZ\x00rest"), Tag: tag}, errs.InvalidInput},
		{"no tag", image.Options{FromRootfs: busyboxTree(t)}, errs.InvalidInput},
		{"bad tag", image.Options{FromRootfs: busyboxTree(t), Tag: "Not A Tag"}, errs.InvalidInput},
		{"both sources", image.Options{FromRootfs: dir, FromDockerfile: "Dockerfile", Tag: tag}, errs.InvalidInput},
		{"busybox with a source", image.Options{FromRootfs: dir, Busybox: "/bin/busybox", Tag: tag}, errs.InvalidInput},
		{"change without rootfs", image.Options{Changes: []string{"ENV A=1"}}, errs.InvalidInput},
		{"bad change", image.Options{FromRootfs: busyboxTree(t), Tag: tag, Changes: []string{"FROBNICATE now"}}, errs.InvalidInput},
		{"missing Dockerfile", image.Options{FromDockerfile: filepath.Join(dir, "Dockerfile.none"), Tag: tag}, errs.NotFound},
		{"missing context", image.Options{FromDockerfile: file("Dockerfile.ok", "FROM scratch\n"), Context: filepath.Join(dir, "nothing"), Tag: tag}, errs.NotFound},
		{"failing step", image.Options{FromDockerfile: file("Dockerfile.fail", "FROM "+image.DefaultTag+"\nRUN exit 3\n"), Tag: tag}, errs.InvalidInput},
	} {
		_, err := image.Build(ctx, c.o)
		assert.ErrorIs(t, err, c.code, "%s: %v", c.name, err)
	}
	assert.False(t, imageExists(t, tag), "no bad input made the image")

	// A FROM image the daemon does not have cannot be pulled: the error says so.
	_, err := image.Build(ctx, image.Options{FromDockerfile: file("Dockerfile.pull", "FROM sandboxer-test-no-such-base:never\nRUN true\n"), Tag: tag})
	require.ErrorIs(t, err, errs.NotFound)
	assert.Contains(t, errs.As(err).Msg, "FROM sandboxer-test-no-such-base:never", "the error names the FROM")
	assert.False(t, imageExists(t, tag))
}

// A tag that names an image sandboxer did not build is not taken without Force; a Dockerfile
// that builds on the image its tag names is refused even with Force.
func TestImageBuildTagRules(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	tag := testTag(t, "clash")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}))
	require.NoError(t, tw.Close())
	rc, err := dockerClient(t).ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, tag, client.ImageImportOptions{})
	require.NoError(t, err)
	io.Copy(io.Discard, rc)
	rc.Close()
	foreign, err := dockerClient(t).ImageInspect(ctx, tag)
	require.NoError(t, err)

	tree := busyboxTree(t)
	_, err = image.Build(ctx, image.Options{FromRootfs: tree, Tag: tag})
	assert.ErrorIs(t, err, errs.InvalidInput)
	now, err := dockerClient(t).ImageInspect(ctx, tag)
	require.NoError(t, err)
	assert.Equal(t, foreign.ID, now.ID, "the tag still names the user's image")

	res, err := image.Build(ctx, image.Options{FromRootfs: tree, Tag: tag, Force: true})
	require.NoError(t, err)
	assert.True(t, res.Built)
	assert.True(t, imageExists(t, foreign.ID), "the user's image loses the tag, it is not removed")
	removeImage(t, foreign.ID)

	df := filepath.Join(t.TempDir(), "Dockerfile")
	require.NoError(t, os.WriteFile(df, []byte("FROM "+tag+"\nENV A=1\n"), 0o644))
	for _, force := range []bool{false, true} {
		_, err = image.Build(ctx, image.Options{FromDockerfile: df, Tag: tag, Force: force})
		assert.ErrorIs(t, err, errs.InvalidInput, "force %v", force)
	}
	now, err = dockerClient(t).ImageInspect(ctx, tag)
	require.NoError(t, err)
	assert.Equal(t, res.ID, now.ID)
	all, err := dockerClient(t).ImageList(ctx, client.ImageListOptions{All: true})
	require.NoError(t, err)
	for _, it := range all.Items {
		assert.NotEqual(t, res.ID, it.ParentID, "the refused build's image %s is left", it.ID)
	}
}
