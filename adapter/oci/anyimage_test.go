package oci_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// debianImage is the Debian toolchain image (adaptertest.DebianImage).
func debianImage(t testing.TB) string { return adaptertest.DebianImage(t) }

// savedImage writes the small sandbox image of the docker adapter (busybox) as a `docker save`
// tarball into a temporary directory.
func savedImage(t *testing.T) string {
	t.Helper()
	tar := filepath.Join(t.TempDir(), "busybox.tar")
	if out, err := exec.Command("docker", "save", "sandboxer-sandbox:latest", "-o", tar).CombinedOutput(); err != nil {
		if testenv.Required("docker") || testenv.Required("debian-image") {
			t.Fatalf("docker save sandboxer-sandbox:latest: %v: %s", err, out)
		}
		t.Skipf("docker save sandboxer-sandbox:latest (sandboxer image build makes it): %v: %s", err, out)
	}
	return tar
}

// imageDir is where the adapter unpacks an image of this config digest.
func imageDir(t *testing.T, img v1.Image) string {
	id, err := img.ConfigName()
	require.NoError(t, err)
	return filepath.Join(stateDir, "oci", "images", id.Hex)
}

// Any image runs, with real work (issue 35): an image of the docker daemon that has never heard of
// sandboxer, unpacked once, gets the host's agent; its PATH is honoured, the commands run as the
// sandbox user (who is not in its /etc/passwd), and a Go module's tests, a C program, Python and
// a git commit work in /workspace, with files written and listed through the adapter.
func TestAnyImageRunsRealWork(t *testing.T) {
	t.Parallel()
	img := debianImage(t)
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		start := time.Now()
		sb := newSandbox(t, rt, oci.Config{Image: img})
		t.Logf("New, unpacking the image or waiting for it: %v", time.Since(start))
		ctx := ctxT(t)
		adaptertest.CheckRealWork(t, sb)
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		require.NoError(t, err)
		assert.Contains(t, res.Isolation.Layers, "agent:own-user")
		assert.Contains(t, res.Isolation.Layers, "caps:none")

		// Another handle starts an agent of its own: the same brought agent, the image's PATH.
		other, err := oci.Attach(ctx, oci.Config{StateDir: stateDir}, sb.ID())
		require.NoError(t, err)
		defer other.Detach()
		res, err = other.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "command -v go && cat g/h && touch /x"}})
		require.NoError(t, err)
		assert.Equal(t, "/usr/bin/go\nx\n", string(res.Stdout), "%s", res.Stderr)
		assert.NotEqual(t, 0, res.ExitCode, "the image's root is read-only")
	})
}

// A `docker save` tarball and an OCI image layout run, unpacked once per digest: the same image
// by both references is one tree, which a second sandbox reuses.
func TestAnyImageArchiveAndLayout(t *testing.T) {
	t.Parallel()
	tar := savedImage(t)
	img, err := tarball.ImageFromPath(tar, nil)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "busybox"})))
	tree := imageDir(t, img)

	echo := func(t *testing.T, rt, ref string) {
		sb := newSandbox(t, rt, oci.Config{Image: ref})
		res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"echo", "ok"}})
		require.NoError(t, err)
		assert.Equal(t, "ok\n", string(res.Stdout), "%s", res.Stderr)
		assert.Equal(t, 0, res.ExitCode)
	}
	echo(t, oci.Runc, "docker-archive:"+tar)
	t.Run("fork", func(t *testing.T) { // the fork's image is the record's: the same tree
		sb := newSandbox(t, oci.Runc, oci.Config{Image: "docker-archive:" + tar})
		require.NoError(t, sb.WriteFile(ctxT(t), "f", []byte("copied\n")))
		f, err := sb.Fork(ctxT(t))
		require.NoError(t, err)
		track(f.(*oci.Sandbox).ID())
		defer f.Stop(context.Background())
		res, err := f.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"cat", "f"}})
		require.NoError(t, err)
		assert.Equal(t, "copied\n", string(res.Stdout), "%s", res.Stderr)
	})
	fi, err := os.Stat(tree)
	require.NoError(t, err, "unpacked under the digest of the image's configuration")
	ino := fi.Sys().(*syscall.Stat_t).Ino
	digest, err := img.Digest()
	require.NoError(t, err)
	echo(t, oci.Runc, "oci-layout:"+dir+"@"+digest.String())
	eachRuntime(t, func(t *testing.T, rt string) {
		echo(t, rt, "oci-layout:"+dir+":busybox")
		echo(t, rt, "oci-layout:"+dir) // the only image
	})
	fi, err = os.Stat(tree)
	require.NoError(t, err)
	assert.Equal(t, ino, fi.Sys().(*syscall.Stat_t).Ino, "the same tree, not unpacked again")
	ents, err := os.ReadDir(filepath.Dir(tree))
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotRegexp(t, `^\.(unpack|save)-`, e.Name(), "nothing left of the unpack")
	}
}

// A reference that names nothing, or an image of another platform, fails with INVALID_INPUT
// before anything is made: no tree, no sandbox.
func TestAnyImageBadReference(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runc)
	tar := savedImage(t)
	img, err := tarball.ImageFromPath(tar, nil)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf.Architecture = "s390x"
	other, err := mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendImage(other))

	state := t.TempDir()
	for _, ref := range []string{
		"docker-archive:" + filepath.Join(dir, "missing.tar"),
		"oci-layout:" + filepath.Join(state, "missing"),
		"oci-layout:" + dir + ":missing",
		"oci-layout:" + dir, // s390x
		"sandboxer-no-such-image:none",
		"Not A Name",
		"docker-archive:",
	} {
		_, err := oci.New(context.Background(), oci.Config{Image: ref, StateDir: state})
		assert.ErrorIs(t, err, errs.InvalidInput, "%s", ref)
		t.Logf("%s: %v", ref, err)
	}
	for _, d := range []string{"oci/images", "oci/sandboxes", "oci/workspaces", "oci/agent"} {
		_, err := os.Stat(filepath.Join(state, d))
		assert.ErrorIs(t, err, os.ErrNotExist, "%s", d)
	}
}

// treeIno is the inode of an image's tree, 0 when there is none.
func treeIno(t *testing.T, tree string) uint64 {
	fi, err := os.Stat(tree)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// Prune removes the unpacked trees of images that no sandbox uses (a stopped sandbox's image), and
// what crashed unpacks left, and keeps a tree a sandbox uses, which goes on working; a create
// after the prune unpacks the image again. KeepImages keeps them all.
func TestPruneImages(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runc)
	ctx := ctxT(t)
	state := ownStateDir(t)
	tar := savedImage(t)
	imgA, err := tarball.ImageFromPath(tar, nil)
	require.NoError(t, err)
	// Another image: the same layers under another configuration, in an OCI layout.
	cf, err := imgA.ConfigFile()
	require.NoError(t, err)
	cf.Config.Env = append(cf.Config.Env, "PRUNED=yes")
	imgB, err := mutate.ConfigFile(imgA, cf)
	require.NoError(t, err)
	dirB := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dirB, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendImage(imgB))
	refA, refB := "docker-archive:"+tar, "oci-layout:"+dirB
	hexOf := func(img v1.Image) string {
		id, err := img.ConfigName()
		require.NoError(t, err)
		return id.Hex
	}
	images := filepath.Join(state, "oci", "images")
	treeA, treeB := filepath.Join(images, hexOf(imgA)), filepath.Join(images, hexOf(imgB))

	inUse := newSandbox(t, oci.Runc, oci.Config{StateDir: state, Image: refA})
	used := newSandbox(t, oci.Runc, oci.Config{StateDir: state, Image: refB})
	assert.Equal(t, "yes\n", string(sh(t, used, "echo $PRUNED").Stdout))
	require.NoError(t, used.Stop(ctx))
	inoA, inoB := treeIno(t, treeA), treeIno(t, treeB)
	require.NotZero(t, inoA)
	require.NotZero(t, inoB)
	// What a crashed unpack and a crashed prune leave.
	crashed := strings.Repeat("c", 64)
	require.NoError(t, os.MkdirAll(filepath.Join(images, ".unpack-"+crashed, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(images, ".save-"+crashed+".tar"), []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(images, "."+crashed+".lock"), nil, 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(images, ".remove-"+crashed+"-0123456789abcdef", "bin"), 0o555))

	removed, err := oci.Prune(ctx, oci.Config{StateDir: state}, oci.PruneOptions{KeepImages: true})
	require.NoError(t, err)
	assert.Empty(t, removed)
	assert.Equal(t, inoB, treeIno(t, treeB), "KeepImages keeps an unused tree")

	removed, err = oci.Prune(ctx, oci.Config{StateDir: state}, oci.PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"image:sha256:" + hexOf(imgB)}, removed, "the unused tree only")
	assert.Zero(t, treeIno(t, treeB))
	assert.Equal(t, inoA, treeIno(t, treeA), "the tree of a live sandbox stays")
	ents, err := os.ReadDir(images)
	require.NoError(t, err)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, []string{hexOf(imgA), "." + hexOf(imgA) + ".lock"}, left, "nothing of the crashes or of B is left")
	assert.Equal(t, "ok\n", string(sh(t, inUse, "echo ok").Stdout), "the sandbox of the kept tree works")

	// A create that found the tree and has not written its record yet holds a lease on it.
	release, err := oci.LeaseImage(ctx, oci.Config{StateDir: state}, refB)
	require.NoError(t, err)
	inoB = treeIno(t, treeB)
	require.NotZero(t, inoB, "unpacked again")
	removed, err = oci.Prune(ctx, oci.Config{StateDir: state}, oci.PruneOptions{})
	require.NoError(t, err)
	assert.Empty(t, removed, "a leased tree stays")
	assert.Equal(t, inoB, treeIno(t, treeB))
	release()
	// Released: unused. A prune may still find the lock held for a moment: a process this test
	// binary forks meanwhile (the parallel tests' runtimes) holds a copy of the descriptor from
	// its fork to its exec (close-on-exec), and a prune skips a locked tree; the next one takes it.
	// (Eventually's condition runs on another goroutine: no require in it; its error is checked after.)
	require.Eventually(t, func() bool {
		removed, err = oci.Prune(ctx, oci.Config{StateDir: state}, oci.PruneOptions{})
		return err != nil || len(removed) > 0
	}, 10*time.Second, 50*time.Millisecond, "released: unused")
	require.NoError(t, err)
	assert.Equal(t, []string{"image:sha256:" + hexOf(imgB)}, removed, "released: unused")

	again := newSandbox(t, oci.Runc, oci.Config{StateDir: state, Image: refB})
	assert.Equal(t, "yes\n", string(sh(t, again, "echo $PRUNED").Stdout), "unpacked again")
	assert.NotZero(t, treeIno(t, treeB))
	reuse := newSandbox(t, oci.Runc, oci.Config{StateDir: state, Image: refA})
	assert.Equal(t, inoA, treeIno(t, treeA), "a kept tree is reused, not unpacked again")
	assert.Equal(t, "ok\n", string(sh(t, reuse, "echo ok").Stdout))
}

// Creates racing prunes: every create gets a complete tree (its commands run) or unpacks the image
// again, never a tree being removed; a tree in use is never removed.
func TestPruneImagesRacingCreates(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runc)
	ctx := ctxT(t)
	state := ownStateDir(t)
	ref := "docker-archive:" + savedImage(t)
	done := make(chan struct{})
	pruned := make(chan int, 1)
	go func() {
		n := 0
		defer func() { pruned <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			removed, err := oci.Prune(ctx, oci.Config{StateDir: state}, oci.PruneOptions{})
			assert.NoError(t, err)
			n += len(removed)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	for i := range 6 {
		sb, err := oci.New(ctx, oci.Config{Runtime: oci.Runc, StateDir: state, Image: ref})
		require.NoError(t, err, "create %d", i)
		track(sb.ID())
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "ls /bin/busybox && echo ok"}})
		require.NoError(t, err)
		assert.Equal(t, "/bin/busybox\nok\n", string(res.Stdout), "create %d: %s", i, res.Stderr)
		require.NoError(t, sb.Stop(ctx))
		if i%2 == 0 { // half the creates find no tree; the others race the prunes
			require.Eventually(t, func() bool {
				ents, _ := os.ReadDir(filepath.Join(state, "oci", "images"))
				return len(ents) == 0
			}, 10*time.Second, 5*time.Millisecond, "the prunes remove the tree no sandbox uses")
		}
	}
	close(done)
	n := <-pruned
	t.Logf("the prunes removed %d trees meanwhile", n)
	assert.GreaterOrEqual(t, n, 3)
}
