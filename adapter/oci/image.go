package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

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
	hex string   // the hex of the config digest
	env []string // the image's environment (Config.Env of its configuration)
}

// imageMountPoints are the mount points of spec (and the agent's file) that an image may lack: the
// tree is read-only and shared, so the runtime could not create them.
var imageMountPoints = rootfs.MountPoints{
	Dirs: []string{"proc", "dev", "sys", "tmp", "mnt", strings.TrimPrefix(adapter.DefaultWorkspace, "/"),
		path.Dir(strings.TrimPrefix(adapter.DefaultHome, "/")), strings.TrimPrefix(adapter.DefaultHome, "/"),
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
// place whole, under an exclusive lock of the digest's lock file so that concurrent sandboxes
// unpack it once. The tree is returned under a lease, a shared lock of the same file, that the
// caller holds (release) until the sandbox's record names the tree: Prune removes a tree only
// under the exclusive lock and when no record names it, so a tree in use is never removed, and a
// create that comes after a prune finds no tree and unpacks it again. A failed unpack leaves
// nothing in dir but the lock file.
func imageRoot(ctx context.Context, dir, ref string) (t imageTree, release func(), err error) {
	const op = "oci image"
	src, err := openImage(ctx, ref)
	if err != nil {
		return imageTree{}, nil, err
	}
	defer src.cleanup()
	cf, err := src.img.ConfigFile()
	if err != nil {
		return imageTree{}, nil, errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("image %s: configuration: %w", ref, err))
	}
	if (cf.OS != "" && cf.OS != "linux") || (cf.Architecture != "" && cf.Architecture != runtime.GOARCH) {
		return imageTree{}, nil, errs.New(errs.InvalidInput, op, "", "image %s is for %s/%s, this host runs linux/%s", ref, cf.OS, cf.Architecture, runtime.GOARCH)
	}
	id, err := src.img.ConfigName()
	if err != nil {
		return imageTree{}, nil, errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("image %s: %w", ref, err))
	}
	t = imageTree{dir: filepath.Join(dir, id.Hex), hex: id.Hex, env: cf.Config.Env}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return imageTree{}, nil, errs.Wrap(errs.Internal, op, "", err)
	}
	lock := imageLock(dir, id.Hex)
	// A prune may remove the tree between the unpack and the lease: unpack again, a few times.
	for range 4 {
		release, err := flockPath(lock, syscall.LOCK_SH, -1)
		if err != nil {
			return imageTree{}, nil, errs.Wrap(errs.Internal, op, "", err)
		}
		if isDir(t.dir) && rootfs.HasMountPoints(t.dir, imageMountPoints) {
			return t, release, nil
		}
		release()
		unlock, err := flockPath(lock, syscall.LOCK_EX, -1)
		if err != nil {
			return imageTree{}, nil, errs.Wrap(errs.Internal, op, "", err)
		}
		switch {
		case !isDir(t.dir): // else another sandbox unpacked it meanwhile
			err = unpackImage(ctx, src, dir, id.Hex, t.dir)
		case !rootfs.HasMountPoints(t.dir, imageMountPoints):
			// Unpacked by an older version, which mounted less (HOME): the mount points it lacks
			// are added, empty directories the sandboxes that use the tree never look at.
			err = rootfs.AddMountPoints(t.dir, imageMountPoints)
		}
		unlock()
		if err != nil {
			return imageTree{}, nil, errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("image %s: unpack: %w", ref, err))
		}
	}
	return imageTree{}, nil, errs.New(errs.SandboxUnavailable, op, "", "image %s: its tree was pruned after each of 4 unpacks", ref)
}

// unpackImage unpacks src into tree (dir/<hex>) through dir/.unpack-<hex>, under the digest's
// exclusive lock; a crashed unpack's directory and export are removed first.
func unpackImage(ctx context.Context, src source, dir, hex, tree string) error {
	tmp := filepath.Join(dir, ".unpack-"+hex)
	saved := filepath.Join(dir, ".save-"+hex+".tar")
	clean := func() { rootfs.RemoveTree(tmp); os.Remove(saved) }
	clean()
	defer clean()
	img := src.img
	if src.save != nil {
		var err error
		if img, err = src.save(ctx, saved); err != nil {
			return fmt.Errorf("from the docker daemon: %w", err)
		}
	}
	rc := mutate.Extract(img)
	err := rootfs.UnpackImage(rc, tmp, imageMountPoints)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, tree)
	}
	return err
}

// imageLock is the lock file of the tree of the image whose configuration digest is hex: an
// unpack holds it exclusively, a sandbox being created shared (its lease), a prune exclusively.
func imageLock(dir, hex string) string { return filepath.Join(dir, "."+hex+".lock") }

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// errLocked: the lock is held by another process and the wait is over.
var errLocked = errors.New("held by another process")

// flockPath locks file (made if needed) with how (syscall.LOCK_SH or LOCK_EX) and returns the
// function that releases it. wait < 0 waits as long as it takes, 0 tries once, > 0 tries until
// then; errLocked when the lock was not had. A lock file removed (or replaced) while this waited
// is locked again under its new name: whoever removes one does so holding it exclusively.
func flockPath(file string, how int, wait time.Duration) (func(), error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if wait < 0 {
			for {
				err = syscall.Flock(int(f.Fd()), how)
				if !errors.Is(err, syscall.EINTR) {
					break
				}
			}
		} else {
			for {
				err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
				if !errors.Is(err, syscall.EWOULDBLOCK) || !time.Now().Before(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if errors.Is(err, syscall.EWOULDBLOCK) {
				f.Close()
				return nil, fmt.Errorf("lock %s: %w", file, errLocked)
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", file, err)
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(file)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		f.Close() // removed while this waited: lock the file now at that name
	}
}

// lockFileWithin holds an exclusive lock on file (made if needed) until the returned function
// runs, giving up after wait (errLocked).
func lockFileWithin(file string, wait time.Duration) (func(), error) {
	return flockPath(file, syscall.LOCK_EX, wait)
}

// sandboxRoot is the root file system of a sandbox.
type sandboxRoot struct {
	dir       string   // the shared, read-only tree
	imageTree string   // the hex digest of Config.Image's tree ("": the recipe's)
	agentFile string   // the host's agent, mounted at agent.BroughtPath ("": the tree has its own)
	imageEnv  []string // the image's environment (Config.Image)
	// release ends the lease on an image's tree (see imageRoot): once the sandbox's record names
	// the tree, or when the create fails. Never nil.
	release func()
}

// rootOf makes sure the root file system of cfg exists: the recipe's tree of package rootfs, or
// the tree of Config.Image with the host's agent (rootfs.AgentFile, compiled once) beside it,
// leased until the caller releases it.
func rootOf(ctx context.Context, cfg Config, lay layout) (sandboxRoot, error) {
	const op = "oci create"
	if cfg.Image == "" {
		tree, err := rootfs.Materialize(lay.rootfs(), cfg.rootfsOptions(), false)
		if err != nil {
			return sandboxRoot{}, errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("root file system: %w", err))
		}
		return sandboxRoot{dir: tree.Dir, release: func() {}}, nil
	}
	t, release, err := imageRoot(ctx, lay.images(), cfg.Image)
	if err != nil {
		return sandboxRoot{}, err
	}
	bin, err := rootfs.AgentFile(lay.agent())
	if err != nil {
		release()
		return sandboxRoot{}, errs.Wrap(errs.SandboxUnavailable, op, "", err)
	}
	return sandboxRoot{dir: t.dir, imageTree: t.hex, agentFile: bin, imageEnv: t.env, release: release}, nil
}
