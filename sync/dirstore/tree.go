package dirstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sandboxer/sandboxer/errs"
)

// tree is every file operation of a store: through an os.Root opened on the store's directory, so
// that nothing the store holds (a link, a forged name, a race) reaches outside it, and without
// following links inside it either: every directory on the way is checked with lstat to be a
// directory, and the last component is never followed (O_NOFOLLOW, or an operation on the name
// itself: rename, unlink, mkdir). Files the store reads must be regular files (a FIFO would hang
// the reader). The store's own files are written by the store, but whoever can write its
// directory (a sandbox whose workspace holds it) can forge them: nothing read is trusted.
//
// A link swapped in between the check and the use can only lead elsewhere inside the store: the
// Root refuses anything that resolves outside it. Errors name the store file (errs.Internal,
// Path the file's absolute path).
//
// Paths are slash-separated and relative to the store's directory. A tree is used under the
// store's locks only.
type tree struct {
	root *os.Root
	dir  string
	// dirs are the directories checked during the current operation (see reset).
	dirs map[string]struct{}
	// sub is the directory subName, opened for the last file looked up in it: a Scan reads a
	// directory's files in a row, and each then costs an lstat and an open of one name instead
	// of a walk from the root. Anything that may remove or move a directory drops it (create,
	// which staging workers run concurrently, leaves it: it only replaces files).
	subName string
	sub     *os.Root
}

// reset forgets what was checked: another process may have changed the tree since.
func (t *tree) reset() {
	clear(t.dirs)
	t.dropSub()
}

func (t *tree) dropSub() {
	if t.sub != nil {
		t.sub.Close()
		t.sub, t.subName = nil, ""
	}
}

// at returns the root to look rel's last component up in, and that component, after checking
// the directories above it.
func (t *tree) at(rel string) (*os.Root, string, error) {
	if err := t.parents(rel, false); err != nil {
		return nil, "", err
	}
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return t.root, rel, nil
	}
	d := rel[:i]
	if t.sub == nil || t.subName != d {
		t.dropSub()
		r, err := t.root.OpenRoot(d)
		if err != nil {
			return nil, "", t.fail(d, err)
		}
		t.sub, t.subName = r, d
	}
	return t.sub, rel[i+1:], nil
}

// errNotDir is the cause when a directory of the store is a link or another file.
var errNotDir = errors.New("is a link or not a directory")

// errNotRegular is the cause when a file of the store is a link, a FIFO, a device or a directory.
var errNotRegular = errors.New("is a link or not a regular file")

// errSwapped is the cause when what was opened is not what lstat saw (a link swapped in).
var errSwapped = errors.New("was replaced while it was opened")

// fail names the store file rel in err.
func (t *tree) fail(rel string, err error) error {
	if err == nil {
		return nil
	}
	name := filepath.Join(t.dir, filepath.FromSlash(rel))
	var se *errs.Error
	if errors.As(err, &se) && se.Path == name {
		return err // already names it
	}
	return errs.Wrap(errs.Internal, "dirstore", name, err)
}

// parents checks that every directory above rel is a directory and not a link, creating the
// missing ones when create is set. Without create, a missing one is an error that matches
// fs.ErrNotExist.
func (t *tree) parents(rel string, create bool) error { return t.walk(rel, create, nil) }

// checkParents checks the directories above rel that exist, as parents does, before a commit:
// the missing ones will be made, and a regular file for which gone is true will be deleted first.
func (t *tree) checkParents(rel string, gone func(string) bool) error {
	return t.walk(rel, false, gone)
}

func (t *tree) walk(rel string, create bool, gone func(string) bool) error {
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		d := rel[:i]
		if _, ok := t.dirs[d]; ok {
			continue
		}
		fi, err := t.root.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist) && create:
			if err = t.root.Mkdir(d, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = t.root.Lstat(d)
			}
		case errors.Is(err, fs.ErrNotExist) && gone != nil:
			return nil
		case err == nil && gone != nil && fi.Mode().IsRegular() && gone(d):
			return nil
		}
		if err != nil {
			return t.fail(d, err)
		}
		if !fi.IsDir() {
			return t.fail(d, errNotDir)
		}
		t.dirs[d] = struct{}{}
	}
	return nil
}

// open opens rel with flag, never through a link: rel must be a regular file (a directory when
// dir is set), and the file opened must be the one lstat saw there. (os.Root follows a link in
// the last component even with O_NOFOLLOW, when it leads inside the root.)
func (t *tree) open(rel string, flag int, dir bool) (*os.File, error) {
	r, name, err := t.at(rel)
	if err != nil {
		return nil, err
	}
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, t.fail(rel, err)
	}
	if !kindOK(fi, dir) {
		return nil, t.fail(rel, kindErr(dir))
	}
	f, err := r.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, t.fail(rel, err)
	}
	got, err := f.Stat()
	if err == nil && !os.SameFile(fi, got) {
		err = errSwapped
	}
	if err != nil {
		f.Close()
		return nil, t.fail(rel, err)
	}
	return f, nil
}

func kindOK(fi fs.FileInfo, dir bool) bool {
	if dir {
		return fi.IsDir()
	}
	return fi.Mode().IsRegular()
}

func kindErr(dir bool) error {
	if dir {
		return errNotDir
	}
	return errNotRegular
}

// lstat returns rel's own information.
func (t *tree) lstat(rel string) (fs.FileInfo, error) {
	r, name, err := t.at(rel)
	if err != nil {
		return nil, err
	}
	fi, err := r.Lstat(name)
	return fi, t.fail(rel, err)
}

// readFile reads the regular file rel into buf, growing it as needed. The size of the opened file
// is checked against limit before anything is allocated, and the read stops past limit (a file
// that grows meanwhile): both give a *tooLarge.
func (t *tree) readFile(rel string, buf []byte, limit int64) ([]byte, error) {
	f, err := t.open(rel, os.O_RDONLY, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, t.fail(rel, err)
	}
	if fi.Size() > limit {
		return nil, &tooLarge{fi.Size(), limit}
	}
	if n := int(fi.Size()) + 1; cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, t.fail(rel, err)
		}
		if int64(len(buf)) > limit {
			return nil, &tooLarge{int64(len(buf)), limit}
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
	}
}

// create writes a new regular file rel with mode perm (whatever the umask) and fsyncs it. What
// was at rel (a leftover, a planted link) is removed first, never written through.
func (t *tree) create(rel string, data []byte, perm fs.FileMode) error {
	if err := t.parents(rel, true); err != nil {
		return err
	}
	if err := t.root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return t.fail(rel, err)
	}
	f, err := t.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return t.fail(rel, err)
	}
	if perm != 0o644 {
		if err := f.Chmod(perm); err != nil {
			f.Close()
			return t.fail(rel, err)
		}
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return t.fail(rel, err)
}

// chmod sets the mode of the regular file rel.
func (t *tree) chmod(rel string, perm fs.FileMode) error {
	f, err := t.open(rel, os.O_RDONLY, false)
	if err != nil {
		return err
	}
	defer f.Close()
	return t.fail(rel, f.Chmod(perm))
}

// rename renames from over to (which is replaced, never followed), creating to's directories.
func (t *tree) rename(from, to string) error {
	t.dropSub()
	if err := t.parents(from, false); err != nil {
		return err
	}
	if err := t.parents(to, true); err != nil {
		return err
	}
	return t.fail(to, t.root.Rename(from, to))
}

// remove removes the file, link or empty directory rel; a missing one matches fs.ErrNotExist.
func (t *tree) remove(rel string) error {
	t.dropSub()
	if err := t.parents(rel, false); err != nil {
		return err
	}
	delete(t.dirs, rel)
	return t.fail(rel, t.root.Remove(rel))
}

// removeAll removes rel and everything below it (links are removed, not followed).
func (t *tree) removeAll(rel string) error {
	t.dropSub()
	if err := t.parents(rel, false); err != nil {
		return err
	}
	for d := range t.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			delete(t.dirs, d)
		}
	}
	return t.fail(rel, t.root.RemoveAll(rel))
}

// syncDir fsyncs the directory rel ("." for the store's own).
func (t *tree) syncDir(rel string) error {
	f, err := t.open(rel, os.O_RDONLY, true)
	if err != nil {
		return err
	}
	defer f.Close()
	return t.fail(rel, f.Sync())
}

// readDir lists the store's own directory.
func (t *tree) readDir() ([]fs.DirEntry, error) {
	f, err := t.root.Open(".")
	if err != nil {
		return nil, t.fail(".", err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	return ents, t.fail(".", err)
}

// openLock opens (creating) the regular file rel for flock.
func (t *tree) openLock(rel string) (*os.File, error) {
	f, err := t.root.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return t.open(rel, os.O_RDWR, false)
	}
	return f, t.fail(rel, err)
}

// badFile is the error for a store file (rel) whose content the store cannot use.
func (t *tree) badFile(rel string, format string, args ...any) error {
	return t.fail(rel, fmt.Errorf(format, args...))
}
