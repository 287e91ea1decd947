package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// treeOptions say how writeTree archives a directory.
type treeOptions struct {
	// owner0 makes every entry owned by 0:0 (a build context, as the docker CLI sends it); else
	// the numeric owners of the files are kept (a root file system).
	owner0 bool
	// oneFS leaves out what is below a directory of another file system than dir's (a proc, sys
	// or dev mounted in a chroot), keeping the directory itself.
	oneFS bool
	// skip, when set, says whether to leave out the entry name (slash-separated, relative to dir)
	// and, for a directory, whether to walk into it all the same (a later pattern may take back
	// something below it).
	skip func(name string, isDir bool) (skip, walkIn bool, err error)
	// seen, when set, receives the name of every entry written.
	seen map[string]bool
}

// writeTree writes the tree under dir to tw as tar entries named relative to dir (a directory's
// name ends in "/"), in lexical order, so the same tree gives the same archive: regular files,
// directories, symbolic links, hard links (a file with several names is written once, its other
// names as links to the first), devices and FIFOs, with their modes (set-user-ID, set-group-ID
// and sticky bits too) and modification times to the second. User and group names, access and
// change times and extended attributes are not written; sockets are left out. The files are read
// through an os.Root of dir, so a link cannot make it read a file outside the tree.
func writeTree(tw *tar.Writer, dir string, o treeOptions) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var rootDev uint64
	haveDev := false
	if o.oneFS {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		rootDev, _, _, haveDev = fileID(fi)
	}
	links := map[[2]uint64]string{}
	return fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		if o.skip != nil {
			skip, walkIn, err := o.skip(name, d.IsDir())
			if err != nil {
				return err
			}
			if skip {
				if d.IsDir() && !walkIn {
					return fs.SkipDir
				}
				return nil
			}
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = root.Readlink(name); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		h.Name = name
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		h.ModTime = fi.ModTime().Truncate(time.Second)
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		h.Format = tar.FormatUnknown
		if o.owner0 {
			h.Uid, h.Gid = 0, 0
		}
		dev, ino, nlink, ok := fileID(fi)
		if ok && fi.Mode().IsRegular() && nlink > 1 {
			if first, dup := links[[2]uint64{dev, ino}]; dup {
				h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
			} else {
				links[[2]uint64{dev, ino}] = name
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if o.seen != nil {
			o.seen[name] = true
		}
		if h.Typeflag == tar.TypeReg && h.Size > 0 {
			f, err := root.Open(name)
			if err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, h.Size)
			f.Close()
			if errors.Is(err, io.EOF) {
				err = errors.New("the file shrank while it was read")
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		if fi.IsDir() && o.oneFS && haveDev && dev != rootDev {
			return fs.SkipDir
		}
		return nil
	})
}

// agentName is where the agent goes in an image, relative to its root.
func agentName() string { return strings.TrimPrefix(agent.Path, "/") }

// cleanName is a tar entry's name relative to the root ("" for the root itself): a leading "/"
// or "./" and any ".." that would climb above the root are dropped, as an unpacker does.
func cleanName(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// copyTar writes the entries of tr to tw, named as cleanName has them, leaving out those skip
// names and those of no file system type (global headers). Owners, modes, times to the second,
// user and group names and extended attributes (PAX records) are kept.
func copyTar(tw *tar.Writer, tr *tar.Reader, skip func(name string) bool, seen map[string]bool) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeXGlobalHeader:
			continue
		case tar.TypeGNUSparse:
			h.Typeflag = tar.TypeReg // the reader gives a sparse file's data whole
		}
		name := cleanName(h.Name)
		if name == "" || skip(name) {
			continue
		}
		if h.Typeflag == tar.TypeLink {
			h.Linkname = cleanName(h.Linkname)
			if skip(h.Linkname) {
				continue
			}
		}
		h.Name = name
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		h.Format = tar.FormatUnknown
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		seen[name] = true
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}
