package rootfs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MountPoints are what a runtime mounts over in a read-only root file system, which it cannot
// create there: UnpackImage makes those the image lacks.
type MountPoints struct {
	Dirs  []string // directories (made 0755; "tmp" 1777)
	Files []string // empty regular files (made 0644; a path ending in an executable's name too)
}

// UnpackImage writes the flattened file system of an image (a tar stream such as
// go-containerregistry's mutate.Extract gives: upper layers first, whiteouts already applied)
// into the new directory dst through an os.Root, then makes its directories read-only (0555, but
// /tmp) as Materialize's tree. What a shared host tree must not carry is left out: set-user-ID
// and set-group-ID bits (a host file owned by root), device nodes, FIFOs and sockets (the runtime
// makes /dev), extended attributes (file capabilities); every file belongs to the caller (host
// root), the image's owners are not kept. Hard links are made last (their target may come later
// in the stream); one whose target the stream lacks is left out. mp names the mount points to
// make where the image has nothing (a path the image has, even as a link, is left as it is).
func UnpackImage(r io.Reader, dst string, mp MountPoints) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	var dirs []dirMode
	var links [][2]string // target, name
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if name == "" {
			continue // the root itself
		}
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		mode := fs.FileMode(h.Mode).Perm() // no set-user-ID, set-group-ID
		if h.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if fi, err := root.Lstat(name); err != nil || !fi.IsDir() {
				if err := root.Mkdir(name, 0o755); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			dirs = append(dirs, dirMode{name, mode, h.ModTime})
		case tar.TypeReg:
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			_, err = io.Copy(f, tr)
			if err = errors.Join(err, f.Close()); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
			// Kept: Python checks its compiled files against their source's time.
			if err := root.Chtimes(name, h.ModTime, h.ModTime); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		case tar.TypeLink:
			links = append(links, [2]string{strings.TrimPrefix(path.Clean("/"+h.Linkname), "/"), name})
		}
	}
	for _, l := range links {
		if err := root.Link(l[0], l[1]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: link to %s: %w", l[1], l[0], err)
		}
	}
	made, err := addMountPoints(root, mp)
	if err != nil {
		return err
	}
	dirs = append(dirs, made...)
	// Deepest first, so that a parent's time is set after its children's changes.
	slices.SortFunc(dirs, func(a, b dirMode) int { return strings.Compare(b.name, a.name) })
	for _, d := range dirs {
		if err := root.Chmod(d.name, readOnly(d)); err != nil {
			return err
		}
		if !d.mtime.IsZero() {
			root.Chtimes(d.name, d.mtime, d.mtime)
		}
	}
	return root.Chmod(".", 0o555)
}

// dirMode is a directory's mode and time, set once what it holds is made.
type dirMode struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
}

// addMountPoints makes the mount points of mp that root lacks and returns the directories it
// made, with their modes.
func addMountPoints(root *os.Root, mp MountPoints) ([]dirMode, error) {
	var dirs []dirMode
	for _, d := range mp.Dirs {
		if _, err := root.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			mode := fs.FileMode(0o755)
			if d == "tmp" {
				mode = 0o777 | fs.ModeSticky
			}
			if err := root.MkdirAll(d, 0o755); err != nil {
				return dirs, fmt.Errorf("mount point %s: %w", d, err)
			}
			dirs = append(dirs, dirMode{name: d, mode: mode})
		}
	}
	for _, name := range mp.Files {
		if _, err := root.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			if dir := path.Dir(name); dir != "." {
				if err := root.MkdirAll(dir, 0o755); err != nil {
					return dirs, fmt.Errorf("mount point %s: %w", name, err)
				}
			}
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return dirs, fmt.Errorf("mount point %s: %w", name, err)
			}
			f.Close()
		}
	}
	return dirs, nil
}

// AddMountPoints makes in dir, a tree of UnpackImage unpacked when mp named fewer mount points,
// those of mp it lacks, read-only as UnpackImage makes them (the caller, host root, writes in
// the read-only tree).
func AddMountPoints(dir string, mp MountPoints) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	made, err := addMountPoints(root, mp)
	for _, d := range made {
		if cerr := root.Chmod(d.name, readOnly(d)); err == nil {
			err = cerr
		}
	}
	return err
}

// HasMountPoints reports whether the tree dir has every mount point of mp.
func HasMountPoints(dir string, mp MountPoints) bool {
	for _, p := range append(slices.Clone(mp.Dirs), mp.Files...) {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// readOnly is the mode of a directory of a finished tree: d's without write bits, /tmp's as it is
// (sandboxes mount a tmpfs over it, which gets this directory's mode).
func readOnly(d dirMode) fs.FileMode {
	if d.name == "tmp" {
		return d.mode
	}
	return d.mode &^ 0o222
}

// RemoveTree removes a tree whose directories may be read-only (one of Materialize or
// UnpackImage).
func RemoveTree(dir string) error { return removeTree(dir) }
