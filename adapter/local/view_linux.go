//go:build linux && !sandboxer_portable

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The file system view: what commands see instead of the host's root, built by the helper in its
// own mount namespace in the manner of bubblewrap. The view's root is a read-only tmpfs holding
// only what viewSpec lists, each at its host path: the system directories read-only, the
// workspace, the private TMPDIR and configured write paths read-write, this binary (for
// per-command inits), a minimal /dev (null, zero, full, random, urandom; a private /dev/shm; no
// terminal, no pts), a private /tmp and /var/tmp, and /proc of the sandbox's PID namespace.
// Nothing of /run, /var/run, /home, /root, /sys, /mnt or other users' files is there, so no
// daemon's socket (Docker's, containerd's, D-Bus, an ssh agent, X11) can be reached, whatever
// Landlock can refuse on this kernel. Paths of DenyRead inside a read-only directory are masked
// (an empty read-only directory or file over them), besides Landlock's refusal.
//
// Every source is cloned (open_tree) before anything is mounted, and the view is assembled on a
// tmpfs mounted over /tmp of the helper's namespace; only when all of it is in place does the
// helper pivot into it. A failure before that leaves the host's root as it was and the layer
// missing.

// viewSpec is what the adapter asks the helper's view to hold.
type viewSpec struct {
	RO      []string    `json:"ro"`      // bound read-only (directories or files), at the same path
	RW      []string    `json:"rw"`      // bound read-write (directories), at the same path
	Devices []string    `json:"devices"` // device files bound read-write
	Mask    []string    `json:"mask"`    // paths inside RO hidden by an empty read-only directory or file
	Links   [][2]string `json:"links"`   // symbolic links of the root (path, target), as /bin -> usr/bin
	// Owned are the sources of RO and RW that the caller gives the sandbox (the workspace,
	// TMPDIR, Config.ReadPaths and WritePaths): where commands run as an unprivileged uid, they
	// are idmapped so that the caller's files there are the sandbox root's (see viewClones.idmap).
	Owned []string `json:"owned,omitempty"`
	// Sources, when set, are RO, RW and Devices already cloned by the adapter, whose descriptors
	// come with the spec in this order (see viewClones); the helper then clones nothing itself.
	Sources []viewSource `json:"sources,omitempty"`
	// Tmp are private directories of the helper (TMPDIR), a tmpfs each (mode 0700), besides
	// /tmp, /var/tmp and /dev/shm (1777).
	Tmp []string `json:"tmp,omitempty"`
	// TmpSize caps each of those file systems in bytes, and their inodes at one per 8 KiB (0: the
	// kernel's default, half of the memory). Their pages are charged to the writer's memory
	// cgroup, so together they are also under the sandbox's memory limit.
	TmpSize int64 `json:"tmpSize,omitempty"`
	// Caches are the caller's caches, each an overlay of its own directory and a private upper
	// directory of the sandbox's (see caches_linux.go); their layers are cloned as sources
	// (Layer), after the others, but not mounted as such.
	Caches []viewCache `json:"caches,omitempty"`
}

// viewSource is one cloned source of the view.
type viewSource struct {
	Target   string `json:"target"`
	Dir      bool   `json:"dir"`
	ReadOnly bool   `json:"readOnly"`
	Owned    bool   `json:"owned,omitempty"`
	Layer    bool   `json:"layer,omitempty"` // a layer of a cache's overlay (viewSpec.Caches)
	// Unusable marks a cache's layer whose idmapped mount failed (a file system without them,
	// tmpfs before Linux 6.3): that cache is left out, the view and its other layers stand.
	Unusable bool `json:"unusable,omitempty"`
}

// viewClones owns the detached copies (open_tree) of a view's sources, one file per source.
type viewClones struct {
	sources []viewSource
	files   []*os.File
}

// Close closes every clone; it is idempotent (an os.File's Close is).
func (c *viewClones) Close() {
	for _, f := range c.files {
		f.Close()
	}
}

// cloneSources clones every source of spec that exists (RO, RW, then Devices), with its mount
// attributes: read-only for RO, nosuid everywhere, nodev but for devices. The adapter calls it
// when it runs as root, so that the helper, whose root is then an unprivileged host uid, gets
// sources it could not reach itself (a workspace under /root); otherwise the helper calls it.
func cloneSources(spec viewSpec) (*viewClones, error) {
	c := &viewClones{}
	bind := func(src string, rdonly, layer bool) error {
		fi, err := os.Stat(src)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		// AT_RECURSIVE: the mounts under a system directory come along, read-only too.
		fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("clone %s: %w", src, err)
		}
		clone := os.NewFile(uintptr(fd), src)
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if rdonly {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if fi.Mode()&fs.ModeDevice != 0 {
			attr.Attr_set &^= unix.MOUNT_ATTR_NODEV
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			clone.Close()
			return fmt.Errorf("mount attributes of %s: %w", src, err)
		}
		c.sources = append(c.sources, viewSource{Target: src, Dir: fi.IsDir(), ReadOnly: rdonly, Owned: slices.Contains(spec.Owned, src), Layer: layer})
		c.files = append(c.files, clone)
		return nil
	}
	var err error
	for _, p := range spec.RO {
		err = errors.Join(err, bind(p, true, false))
	}
	for _, p := range spec.RW {
		err = errors.Join(err, bind(p, false, false))
	}
	for _, p := range spec.Devices {
		err = errors.Join(err, bind(p, false, false))
	}
	for _, c := range spec.Caches {
		err = errors.Join(err, bind(c.Target, true, true), bind(c.Upper, false, true))
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// idmap makes the owned sources idmapped mounts of the user namespace userns (a helper's, whose
// root is an unprivileged host uid): a file the host's root owns there is the sandbox root's, and
// what a command creates there is the host root's on disk, so the workspace stays the caller's
// while every other host file (the system directories) is judged by DAC as an unprivileged
// user's. It needs CAP_SYS_ADMIN in the initial user namespace and a file system that supports
// idmapped mounts (ext4, xfs, btrfs, tmpfs since Linux 6.3, ...).
func (c *viewClones) idmap(userns *os.File) error {
	for i, s := range c.sources {
		if !s.Owned {
			continue
		}
		err := withFDs([]*os.File{c.files[i], userns}, func(fds []int) error {
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(fds[1])}
			return unix.MountSetattr(fds[0], "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
		})
		if err != nil && s.Layer {
			c.sources[i].Unusable = true // the cache goes without (mountCache says why)
			continue
		}
		if err != nil {
			return fmt.Errorf("idmapped mount of %s: %w", s.Target, err)
		}
	}
	return nil
}

// viewMount is one mount of the view, in the order they are made.
type viewMount struct {
	target string
	clone  *os.File // a detached copy of the source (open_tree; viewClones owns it), nil for a tmpfs
	dir    bool     // the target is a directory (else a file)
	mode   string   // tmpfs options
	rdonly bool
}

// buildView assembles the view and pivots into it. proc says whether to mount /proc of the
// helper's PID namespace. An error means the view is not in force; after the pivot there is none.
// clones are the sources the adapter cloned (nil: the helper clones them here); buildView closes
// them. caches are the targets of spec.Caches mounted, cacheErr why the others are not (they are
// left out of a view that is in force).
func buildView(spec viewSpec, proc bool, clones *viewClones) (caches []string, cacheErr, err error) {
	if clones == nil {
		if clones, err = cloneSources(spec); err != nil {
			return nil, nil, err
		}
	}
	defer clones.Close()
	mounts := viewMounts(spec, clones)
	const base = "/tmp" // the view is assembled here, in the helper's namespace only
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return nil, nil, fmt.Errorf("mount the view's root: %w", err)
	}
	pivoted := false
	defer func() {
		if !pivoted {
			_ = unix.Unmount(base, unix.MNT_DETACH)
		}
	}()
	for _, l := range spec.Links {
		if err := os.Symlink(l[1], base+l[0]); err != nil {
			return nil, nil, err
		}
	}
	for _, m := range mounts {
		if err := m.make(base); err != nil {
			return nil, nil, err
		}
	}
	caches, cacheErr = mountCaches(spec, clones, base)
	for _, m := range maskMounts(spec, base) { // over what is now in place
		if err := m.make(base); err != nil {
			return nil, nil, err
		}
	}
	if proc {
		p := base + "/proc"
		if err := os.Mkdir(p, 0o555); err != nil {
			return nil, nil, err
		}
		if err := unix.Mount("proc", p, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return nil, nil, fmt.Errorf("mount proc: %w", err)
		}
	}
	for _, l := range [][2]string{{"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"},
		{"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"}} {
		if err := os.Symlink(l[1], base+l[0]); err != nil {
			return nil, nil, err
		}
	}
	// The root itself read-only: what is writable is its own mount.
	if err := unix.MountSetattr(unix.AT_FDCWD, base, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return nil, nil, fmt.Errorf("make the view's root read-only: %w", err)
	}
	if err := unix.Chdir(base); err != nil {
		return nil, nil, err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return nil, nil, fmt.Errorf("pivot_root: %w", err)
	}
	pivoted = true
	// The old root is stacked on the new one at "/": detach it, with everything under it.
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return nil, nil, fmt.Errorf("detach the host's root: %w", err)
	}
	return caches, cacheErr, unix.Chdir("/")
}

// viewMounts lists the view's mounts, parents before children: the private tmpfs directories,
// the cloned sources and the masks.
func viewMounts(spec viewSpec, clones *viewClones) []viewMount {
	var mounts []viewMount
	tmpfs := func(target, mode string, rdonly bool) {
		mounts = append(mounts, viewMount{target: target, dir: true, mode: mode, rdonly: rdonly})
	}
	size := ""
	if spec.TmpSize > 0 {
		size = fmt.Sprintf(",size=%d,nr_inodes=%d", spec.TmpSize, max(spec.TmpSize/8192, 1024))
	}
	tmpfs("/dev", "mode=0755", false)
	tmpfs("/dev/shm", "mode=1777"+size, false)
	tmpfs("/tmp", "mode=1777"+size, false)
	tmpfs("/var/tmp", "mode=1777"+size, false)
	for _, p := range spec.Tmp {
		tmpfs(p, "mode=0700"+size, false)
	}
	for i, src := range clones.sources {
		if src.Layer {
			continue // mounted by mountCaches
		}
		mounts = append(mounts, viewMount{target: src.Target, clone: clones.files[i], dir: src.Dir, rdonly: src.ReadOnly})
	}
	// Parents before children; at one path, in the order listed.
	slices.SortStableFunc(mounts, func(a, b viewMount) int {
		return strings.Count(a.target, "/") - strings.Count(b.target, "/")
	})
	return mounts
}

// maskMounts lists the masks of spec as they are in the assembled view under base, where a
// source may be reachable that the helper's user could not reach on the host (an idmapped one).
func maskMounts(spec viewSpec, base string) []viewMount {
	var mounts []viewMount
	for _, p := range spec.Mask {
		fi, err := os.Lstat(base + p)
		switch {
		case err != nil: // absent, or out of the helper's reach and so of every command's
		case fi.IsDir():
			mounts = append(mounts, viewMount{target: p, dir: true, mode: "mode=0000", rdonly: true})
		case fi.Mode().IsRegular():
			mounts = append(mounts, viewMount{target: p, rdonly: true, mode: "mode=0000"})
		}
	}
	return mounts
}

// make mounts m under base, creating its mount point.
func (m viewMount) make(base string) error {
	target := base + m.target
	if err := mkdirAllIn(base, filepath.Dir(m.target)); err != nil {
		return err
	}
	// A mount point inside a read-only bind already exists (masks): it is not created.
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		if m.dir {
			err = os.Mkdir(target, 0o755)
		} else {
			var f *os.File
			if f, err = os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		if err != nil {
			return err
		}
	}
	if m.clone == nil {
		if !m.dir { // a masked file: an empty file of the view's root, bound read-only over it
			empty := base + "/.empty"
			f, err := os.OpenFile(empty, os.O_CREATE|os.O_RDONLY, 0)
			if err != nil {
				return err
			}
			f.Close()
			if err := unix.Mount(empty, target, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("mask %s: %w", m.target, err)
			}
			return unix.MountSetattr(unix.AT_FDCWD, target, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV})
		}
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
		if m.rdonly {
			flags |= unix.MS_RDONLY
		}
		if err := unix.Mount("tmpfs", target, "tmpfs", flags, m.mode); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", m.target, err)
		}
		return nil
	}
	return withFDs([]*os.File{m.clone}, func(fds []int) error {
		if err := unix.MoveMount(fds[0], "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("bind %s: %w", m.target, err)
		}
		return nil
	})
}

// mkdirAllIn creates dir (absolute, in the view) and its parents under base.
func mkdirAllIn(base, dir string) error {
	p := base
	for _, c := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		p += "/" + c
		if _, err := os.Lstat(p); err == nil {
			continue // there already, perhaps inside a read-only bind
		}
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}
