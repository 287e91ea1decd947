//go:build linux && !sandboxer_portable

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The caller's caches in the view (see caches.go): each is an overlay mounted by the helper at
// the cache's own path, its lower layer a read-only clone of the caller's directory (never
// written: what commands change, create or delete lands in the upper layer, with whiteouts), its
// upper and work directories in <cacheDir>/<net>-<i>, a host directory of the sandbox's per
// helper (two overlays may not share an upper directory). For a root caller both layers are
// idmapped mounts of the helper's user namespace, as the workspace is, so the caller's files are
// the sandbox root's and copies up keep their owner. Where the overlay cannot be mounted (no
// overlayfs in a user namespace, a file system it cannot stack on or write extended attributes
// to), the cache is left out, and its variable unset: Go refuses a read-only GOCACHE, so a
// read-only bind is no fallback.

// viewCache is one cache of the view: an overlay at Target of Target's host directory (lower) and
// Upper, a directory holding the upper and work directories.
type viewCache struct {
	Target string `json:"target"`
	Upper  string `json:"upper"`
}

// cacheUpper is the host directory of the upper layer of cache i for a network mode's helper.
func (iso *isolation) cacheUpper(network bool, i int) string {
	return filepath.Join(iso.cacheDir.path, strconv.Itoa(netIndex(network))+"-"+strconv.Itoa(i))
}

// cacheSpec lists the caches of the view of a network mode's helper, and makes their upper
// directories where missing: upper (with the mode of the caller's directory: it is the overlay's
// root) and work. Called with iso.mu held, before the helper starts.
func (iso *isolation) cacheSpec(network bool) ([]viewCache, error) {
	if len(iso.caches) == 0 || iso.disabled[LayerFSView] {
		return nil, nil
	}
	if err := iso.cacheDir.ensure(); err != nil {
		return nil, err
	}
	var caches []viewCache
	for i, c := range iso.caches {
		fi, err := os.Stat(c.Path)
		if err != nil || !fi.IsDir() {
			continue // gone since the sandbox was made
		}
		dir := iso.cacheUpper(network, i)
		err = os.Mkdir(dir, 0o700)
		if err == nil {
			err = errors.Join(os.Mkdir(filepath.Join(dir, "upper"), fi.Mode().Perm()|0o700), os.Mkdir(filepath.Join(dir, "work"), 0o700))
		}
		if err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		caches = append(caches, viewCache{Target: c.Path, Upper: dir})
	}
	return caches, nil
}

// resetCaches empties the caches' upper directories for Recycle. An upper layer may not be
// changed under its overlay: a helper whose upper layers hold anything is killed first (the next
// command starts a new one, with empty ones); the others are left as they are, empty.
func (iso *isolation) resetCaches() error {
	if len(iso.caches) == 0 {
		return nil
	}
	var err error
	for _, network := range []bool{false, true} {
		if !iso.cachesWritten(network) {
			continue
		}
		iso.mu.Lock()
		h := iso.helpers[netIndex(network)]
		iso.helpers[netIndex(network)] = nil
		iso.mu.Unlock()
		if h != nil {
			h.kill()
			waitReaped([]*helperProc{h})
		}
		for i := range iso.caches {
			err = errors.Join(err, removeAll(iso.cacheUpper(network, i)))
		}
	}
	return err
}

// cachesWritten says whether any upper layer of a network mode's helper holds anything.
func (iso *isolation) cachesWritten(network bool) bool {
	for i := range iso.caches {
		entries, err := os.ReadDir(filepath.Join(iso.cacheUpper(network, i), "upper"))
		if len(entries) > 0 || (err != nil && !errors.Is(err, os.ErrNotExist)) {
			return true
		}
	}
	return false
}

// waitReaped waits until the helpers hs (killed) are reaped: nothing of them runs, and their
// mount namespaces, with the overlays, are gone. Bounded by cgroupDrain.
func waitReaped(hs []*helperProc) {
	deadline := time.After(cgroupDrain)
	for _, h := range hs {
		if h != nil {
			select {
			case <-h.reaped:
			case <-deadline:
				return
			}
		}
	}
}

// mountCaches mounts the view's caches under base (the view being assembled), from the cloned
// layers, and returns the targets mounted and why the others are not. Each layer is attached at
// a staging directory of the view's root only for the overlay's mount, which keeps its own
// references to them; then the staging mounts are detached and their directories removed.
func mountCaches(spec viewSpec, clones *viewClones, base string) (mounted []string, err error) {
	for i, c := range spec.Caches {
		if e := mountCache(c, clones, base, i); e != nil {
			err = errors.Join(err, fmt.Errorf("cache %s: %w", c.Target, e))
			continue
		}
		mounted = append(mounted, c.Target)
	}
	return mounted, err
}

func mountCache(c viewCache, clones *viewClones, base string, i int) error {
	lower, upper := clones.layer(c.Target), clones.layer(c.Upper)
	if lower == nil || upper == nil {
		return errors.New("a layer could not be cloned or idmapped")
	}
	stage := base + "/.cache-" + strconv.Itoa(i)
	if err := os.Mkdir(stage, 0o700); err != nil {
		return err
	}
	defer os.Remove(stage)
	var attached []string
	defer func() {
		for _, p := range attached {
			_ = unix.Unmount(p, unix.MNT_DETACH)
			_ = os.Remove(p)
		}
	}()
	for _, l := range []struct {
		name  string
		clone *os.File
	}{{"lower", lower}, {"upper", upper}} {
		p := stage + "/" + l.name
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		err := withFDs([]*os.File{l.clone}, func(fds []int) error {
			return unix.MoveMount(fds[0], "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		})
		if err != nil {
			os.Remove(p)
			return fmt.Errorf("attach the %s layer: %w", l.name, err)
		}
		attached = append(attached, p)
	}
	if err := mkdirAllIn(base, c.Target); err != nil {
		return err
	}
	// userxattr: the overlay's own attributes are user.overlay.* (a user namespace cannot write
	// trusted.*), which also leaves out redirects and metacopy, that would need them.
	opts := fmt.Sprintf("lowerdir=%[1]s/lower,upperdir=%[1]s/upper/upper,workdir=%[1]s/upper/work,userxattr", stage)
	if err := unix.Mount("overlay", base+c.Target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the overlay: %w", err)
	}
	return nil
}

// layer is the clone of a cache's layer at host path p, or nil.
func (c *viewClones) layer(p string) *os.File {
	for i, s := range c.sources {
		if s.Layer && s.Target == p && !s.Unusable {
			return c.files[i]
		}
	}
	return nil
}
