package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/daemon"
	ocilayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/errs"
)

// Prefixes of Config.Image.
const (
	ImageOCILayout     = "oci-layout:"     // an OCI image layout directory: oci-layout:PATH[:TAG|@DIGEST]
	ImageDockerArchive = "docker-archive:" // a `docker save` tarball: docker-archive:PATH
)

// refNameAnnotation names an image of an OCI layout's index (its tag).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// imageTree is the root file system of Config.Image: the image unpacked once per digest, shared
// read-only by every sandbox of it.
type imageTree struct {
	dir string   // STATE/oci/images/<hex of the config digest>
	env []string // the image's environment (Config.Env of its configuration)
}

// imageMountPoints are the mount points of spec (and the agent's file) that an image may lack: the
// tree is read-only and shared, so the runtime could not create them.
var imageMountPoints = rootfs.MountPoints{
	Dirs: []string{"proc", "dev", "sys", "tmp", "mnt", strings.TrimPrefix(adapter.DefaultWorkspace, "/"),
		strings.TrimPrefix(agent.DirectSandboxDir, "/")},
	Files: []string{"etc/hosts", "etc/resolv.conf", strings.TrimPrefix(agent.BroughtPath, "/")},
}

// validImageRef checks the form of Config.Image (not that the image exists).
func validImageRef(ref string) error {
	switch {
	case strings.HasPrefix(ref, ImageOCILayout):
		if p, _, _ := splitLayoutRef(strings.TrimPrefix(ref, ImageOCILayout)); p == "" {
			return fmt.Errorf("Image %q: want oci-layout:PATH[:TAG|@DIGEST]", ref)
		}
	case strings.HasPrefix(ref, ImageDockerArchive):
		if strings.TrimPrefix(ref, ImageDockerArchive) == "" {
			return fmt.Errorf("Image %q: want docker-archive:PATH", ref)
		}
	default:
		if _, err := name.ParseReference(ref); err != nil {
			return fmt.Errorf("Image %q: not an image name of the docker daemon, oci-layout:PATH or docker-archive:PATH: %v", ref, err)
		}
	}
	return nil
}

// splitLayoutRef splits PATH[:TAG|@DIGEST]: a tag is after the last ':' that follows the last '/'.
func splitLayoutRef(s string) (dir, tag, digest string) {
	if i := strings.LastIndex(s, "@"); i >= 0 && strings.Contains(s[i:], ":") {
		return s[:i], "", s[i+1:]
	}
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		return s[:i], s[i+1:], ""
	}
	return s, "", ""
}

// AbsImage makes the path of a Config.Image that names a file (oci-layout:, docker-archive:)
// absolute with abs (filepath.Abs: against the current directory). New does it too (a fork or
// another process then finds the same image); a caller whose adapter runs in another process
// (the CLI's engine) calls it with the directory where the path was given.
func AbsImage(ref string, abs func(string) (string, error)) (string, error) {
	for _, p := range []string{ImageOCILayout, ImageDockerArchive} {
		if rest, ok := strings.CutPrefix(ref, p); ok && rest != "" && !filepath.IsAbs(rest) {
			a, err := abs(rest)
			return p + a, err
		}
	}
	return ref, nil
}

// source is an image opened from one of Config.Image's places; unpack streams its layers.
type source struct {
	img     v1.Image
	cleanup func() // releases what opening it made
	// save, for an image of the docker daemon, writes the image (by its id) as a `docker save`
	// tarball, read from then on: the daemon's export is read once, not once per layer.
	save func(ctx context.Context, file string) (v1.Image, error)
}

// openImage resolves ref without contacting any registry. Errors: errs.InvalidInput (no such
// file, layout entry or daemon image; another platform's image), errs.SandboxUnavailable (the
// daemon cannot be reached).
func openImage(ctx context.Context, ref string) (source, error) {
	const op = "oci image"
	bad := func(f string, a ...any) (source, error) {
		return source{}, errs.New(errs.InvalidInput, op, "", f, a...)
	}
	none := func() {}
	switch {
	case strings.HasPrefix(ref, ImageOCILayout):
		dir, tag, digest := splitLayoutRef(strings.TrimPrefix(ref, ImageOCILayout))
		idx, err := ocilayout.ImageIndexFromPath(dir)
		if err != nil {
			return bad("image %s: not an OCI image layout: %v", ref, err)
		}
		img, err := layoutImage(idx, tag, digest)
		if err != nil {
			return bad("image %s: %v", ref, err)
		}
		return source{img: img, cleanup: none}, nil
	case strings.HasPrefix(ref, ImageDockerArchive):
		file := strings.TrimPrefix(ref, ImageDockerArchive)
		img, err := tarball.ImageFromPath(file, nil) // reads the manifest and the configuration
		if err != nil {
			return bad("image %s: not a docker-archive tarball: %v", ref, err)
		}
		return source{img: img, cleanup: none}, nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return bad("image %s: %v", ref, err)
	}
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return source{}, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("docker daemon: %w", err))
	}
	// Unbuffered: the configuration comes from the daemon's inspect; the layers from one save
	// (see source.save), never from an export per access.
	img, err := daemon.Image(r, daemon.WithClient(c), daemon.WithContext(ctx), daemon.WithUnbufferedOpener())
	if err != nil {
		c.Close()
		if cerrdefs.IsNotFound(err) {
			return bad("image %s is not in the local docker daemon (no registry is contacted: docker pull, docker load or build it first)", ref)
		}
		return source{}, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("image %s from the docker daemon: %w", ref, err))
	}
	save := func(ctx context.Context, file string) (v1.Image, error) {
		id, err := img.ConfigName()
		if err != nil {
			return nil, err
		}
		res, err := c.ImageSave(ctx, []string{id.String()})
		if err != nil {
			return nil, err
		}
		defer res.Close()
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(f, res)
		if err = errors.Join(err, f.Close()); err != nil {
			return nil, err
		}
		return tarball.ImageFromPath(file, nil)
	}
	return source{img: img, cleanup: func() { c.Close() }, save: save}, nil
}

// layoutImage picks the image of an OCI layout's index: by digest, by tag (the ref.name
// annotation), or the only one; an index inside it gives its image for this platform.
func layoutImage(idx v1.ImageIndex, tag, digest string) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var found []v1.Descriptor
	for _, d := range im.Manifests {
		ref := d.Annotations[refNameAnnotation]
		switch {
		case digest != "" && d.Digest.String() == digest,
			tag != "" && (ref == tag || strings.HasSuffix(ref, ":"+tag)),
			digest == "" && tag == "":
			found = append(found, d)
		}
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("no image %s%s in the layout", tag, digest)
	case len(found) > 1:
		return nil, fmt.Errorf("the layout has %d images: name one with :TAG or @DIGEST", len(found))
	}
	d := found[0]
	if !d.MediaType.IsIndex() {
		return idx.Image(d.Digest)
	}
	inner, err := idx.ImageIndex(d.Digest)
	if err != nil {
		return nil, err
	}
	m, err := inner.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return inner.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no linux/%s image in the index %s", runtime.GOARCH, d.Digest)
}

// imageRoot returns the tree of Config.Image ref under dir (STATE/oci/images), unpacking it the
// first time: with mutate.Extract (whiteouts applied) into a temporary directory, renamed into
// place whole, under a lock of the digest so that concurrent sandboxes unpack it once. A
// failed unpack leaves nothing in dir but its lock file.
func imageRoot(ctx context.Context, dir, ref string) (imageTree, error) {
	const op = "oci image"
	src, err := openImage(ctx, ref)
	if err != nil {
		return imageTree{}, err
	}
	defer src.cleanup()
	cf, err := src.img.ConfigFile()
	if err != nil {
		return imageTree{}, errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("image %s: configuration: %w", ref, err))
	}
	if (cf.OS != "" && cf.OS != "linux") || (cf.Architecture != "" && cf.Architecture != runtime.GOARCH) {
		return imageTree{}, errs.New(errs.InvalidInput, op, "", "image %s is for %s/%s, this host runs linux/%s", ref, cf.OS, cf.Architecture, runtime.GOARCH)
	}
	id, err := src.img.ConfigName()
	if err != nil {
		return imageTree{}, errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("image %s: %w", ref, err))
	}
	t := imageTree{dir: filepath.Join(dir, id.Hex), env: cf.Config.Env}
	if fi, err := os.Stat(t.dir); err == nil && fi.IsDir() {
		return t, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return imageTree{}, errs.Wrap(errs.Internal, op, "", err)
	}
	lock := filepath.Join(dir, "."+id.Hex+".lock")
	unlock, err := lockFile(lock)
	if err != nil {
		return imageTree{}, errs.Wrap(errs.Internal, op, "", err)
	}
	defer unlock()
	if fi, err := os.Stat(t.dir); err == nil && fi.IsDir() {
		return t, nil // another sandbox unpacked it meanwhile
	}
	tmp := filepath.Join(dir, ".unpack-"+id.Hex) // a crashed unpack's is removed under the lock
	saved := filepath.Join(dir, ".save-"+id.Hex+".tar")
	clean := func() { rootfs.RemoveTree(tmp); os.Remove(saved) }
	clean()
	defer clean()
	img := src.img
	if src.save != nil {
		if img, err = src.save(ctx, saved); err != nil {
			return imageTree{}, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("image %s from the docker daemon: %w", ref, err))
		}
	}
	rc := mutate.Extract(img)
	err = rootfs.UnpackImage(rc, tmp, imageMountPoints)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, t.dir)
	}
	if err != nil {
		return imageTree{}, errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("image %s: unpack: %w", ref, err))
	}
	// Whoever waits for the lock finds the tree; whoever comes later does not lock.
	os.Remove(lock)
	return t, nil
}

// lockFile holds an exclusive lock on file (made if needed) until the returned function runs.
func lockFile(file string) (func(), error) {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", file, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// sandboxRoot is the root file system of a sandbox.
type sandboxRoot struct {
	dir       string   // the shared, read-only tree
	agentFile string   // the host's agent, mounted at agent.BroughtPath ("": the tree has its own)
	imageEnv  []string // the image's environment (Config.Image)
}

// rootOf makes sure the root file system of cfg exists: the recipe's tree of package rootfs, or
// the tree of Config.Image with the host's agent (rootfs.AgentFile, compiled once) beside it.
func rootOf(ctx context.Context, cfg Config, lay layout) (sandboxRoot, error) {
	const op = "oci create"
	if cfg.Image == "" {
		tree, err := rootfs.Materialize(lay.rootfs(), cfg.rootfsOptions(), false)
		if err != nil {
			return sandboxRoot{}, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("root file system: %w", err))
		}
		return sandboxRoot{dir: tree.Dir}, nil
	}
	t, err := imageRoot(ctx, lay.images(), cfg.Image)
	if err != nil {
		return sandboxRoot{}, err
	}
	bin, err := rootfs.AgentFile(lay.agent())
	if err != nil {
		return sandboxRoot{}, errs.Wrap(errs.SandboxUnavailable, op, "", err)
	}
	return sandboxRoot{dir: t.dir, agentFile: bin, imageEnv: t.env}, nil
}
