// Package memfs owns the memory adapter's file tree: directories, regular files (bytes, mode,
// mtime, a stable inode number) and symbolic links, all in process memory, with a byte budget and
// copy-on-write cloning.
//
// Paths are absolute and slash-separated in the tree's own namespace ("/workspace/a.txt"); the
// tree never touches the host's file system. Symbolic links are resolved inside the tree only:
// ".." at "/" stays at "/", and resolution can be jailed below a directory (Resolve), which is how
// the adapter keeps file calls inside the workspace. Errors are *fs.PathError values wrapping
// fs.ErrNotExist, fs.ErrExist, fs.ErrInvalid, syscall errnos (ENOTDIR, EISDIR, ENOTEMPTY, ELOOP),
// ErrEscape (resolution left the jail) or ErrNoSpace (the byte budget is spent).
//
// An FS is safe for concurrent use. File content is never modified below its current length in
// place: writes either append or replace the byte slice, so a reader holding an older slice and a
// clone sharing it are never affected (copy-on-write by construction).
package memfs

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrEscape says that resolving a path left the directory it was jailed to.
var ErrEscape = errors.New("path escapes the jail")

// ErrNoSpace says that a write would take the tree over its byte budget. It wraps syscall.ENOSPC.
var ErrNoSpace = noSpace{}

type noSpace struct{}

func (noSpace) Error() string        { return "file tree byte limit exceeded" }
func (noSpace) Is(target error) bool { return target == syscall.ENOSPC }

const maxSymlinks = 40

// node is one entry of the tree. Fields are guarded by the FS's mutex.
type node struct {
	mode     fs.FileMode // type bits and permissions
	data     []byte      // regular file content; never modified below len in place
	target   string      // symlink target
	children map[string]*node
	mtime    time.Time
	ino      uint64
	dev      func() Device // a device node (/dev/null and friends): content comes from here
}

// Device is a special file whose reads and writes do not touch the tree (for example /dev/null).
// Writes are accepted whole; reads come from Read.
type Device interface {
	Read(p []byte) (int, error)
}

// FS is an in-memory file tree.
type FS struct {
	mu       sync.RWMutex
	root     *node
	ino      uint64 // last inode number handed out
	size     int64  // bytes held by regular files and symlink targets
	maxBytes int64  // 0: unlimited
	now      func() time.Time
}

// New returns a tree holding only "/" (mode 0755). maxBytes bounds the bytes of all regular files
// and symlink targets together; 0 means no bound.
func New(maxBytes int64) *FS {
	f := &FS{maxBytes: maxBytes, now: time.Now}
	f.root = f.newNode(fs.ModeDir | 0o755)
	return f
}

func (f *FS) newNode(mode fs.FileMode) *node {
	f.ino++
	n := &node{mode: mode, mtime: f.now(), ino: f.ino}
	if mode.IsDir() {
		n.children = map[string]*node{}
	}
	return n
}

// Size returns the bytes held by regular files and symlink targets.
func (f *FS) Size() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.size
}

// MaxBytes returns the byte budget (0: none).
func (f *FS) MaxBytes() int64 { return f.maxBytes }

// Clone returns an independent copy of the tree. File contents are shared until either side
// writes (appends reallocate because the shared slices are clipped to their length).
func (f *FS) Clone() *FS {
	f.mu.Lock() // not RLock: clipping slices below writes to the nodes
	defer f.mu.Unlock()
	c := &FS{ino: f.ino, size: f.size, maxBytes: f.maxBytes, now: f.now}
	c.root = cloneNode(f.root)
	return c
}

func cloneNode(n *node) *node {
	c := *n
	if n.data != nil {
		n.data = n.data[:len(n.data):len(n.data)]
		c.data = n.data
	}
	if n.children != nil {
		c.children = make(map[string]*node, len(n.children))
		for name, ch := range n.children {
			c.children[name] = cloneNode(ch)
		}
	}
	return &c
}

// Clean returns the absolute clean form of name; a relative name is taken from "/".
func Clean(name string) string {
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return path.Clean(name)
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// walkResult is where a path resolved to.
type walkResult struct {
	parent *node  // the directory holding the last element (nil for "/")
	name   string // last element ("" for "/")
	n      *node  // the entry itself, nil when it does not exist (parent is then valid)
	path   string // the resolved absolute path
}

// walk resolves name (absolute). Symlinks in the middle are always followed; the final one only
// when follow is set. jail is an absolute clean directory that resolution may not leave ("/"
// means no jail). A missing final element is not an error (n is nil); a missing directory on the
// way is fs.ErrNotExist. Caller holds the lock.
func (f *FS) walk(name string, follow bool, jail string) (walkResult, error) {
	jailParts := splitPath(jail)
	rest := splitPath(name)
	if !strings.HasPrefix(name, "/") {
		return walkResult{}, fs.ErrInvalid
	}
	var stack []string
	nodes := []*node{f.root}
	links := 0
	inJail := func() bool {
		if len(stack) < len(jailParts) {
			return false
		}
		for i, p := range jailParts {
			if stack[i] != p {
				return false
			}
		}
		return true
	}
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				continue
			}
			if len(jailParts) > 0 && len(stack) <= len(jailParts) {
				return walkResult{}, ErrEscape
			}
			stack = stack[:len(stack)-1]
			nodes = nodes[:len(nodes)-1]
			continue
		}
		cur := nodes[len(nodes)-1]
		if !cur.mode.IsDir() {
			return walkResult{}, syscall.ENOTDIR
		}
		child := cur.children[comp]
		last := len(rest) == 0
		if child == nil {
			if !last {
				return walkResult{}, fs.ErrNotExist
			}
			if len(jailParts) > 0 && !inJailWith(stack, comp, jailParts) {
				return walkResult{}, ErrEscape
			}
			return walkResult{parent: cur, name: comp, path: "/" + strings.Join(append(stack, comp), "/")}, nil
		}
		if child.mode&fs.ModeSymlink != 0 && (!last || follow) {
			links++
			if links > maxSymlinks {
				return walkResult{}, syscall.ELOOP
			}
			target := child.target
			if strings.HasPrefix(target, "/") {
				clean := path.Clean(target)
				if len(jailParts) > 0 && clean != jail && !strings.HasPrefix(clean, jail+"/") {
					return walkResult{}, ErrEscape
				}
				stack = stack[:0]
				nodes = nodes[:1]
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		stack = append(stack, comp)
		nodes = append(nodes, child)
		if len(jailParts) > 0 && len(stack) >= len(jailParts) && !inJail() {
			return walkResult{}, ErrEscape
		}
	}
	if len(jailParts) > 0 && !inJail() {
		return walkResult{}, ErrEscape
	}
	if len(stack) == 0 {
		return walkResult{n: f.root, path: "/"}, nil
	}
	return walkResult{parent: nodes[len(nodes)-2], name: stack[len(stack)-1], n: nodes[len(nodes)-1], path: "/" + strings.Join(stack, "/")}, nil
}

func inJailWith(stack []string, comp string, jail []string) bool {
	full := append(append([]string(nil), stack...), comp)
	if len(full) < len(jail) {
		return false
	}
	for i, p := range jail {
		if full[i] != p {
			return false
		}
	}
	return true
}

// Resolve returns the absolute path name resolves to, following symlinks (the final one when
// follow is set) without leaving jail. The final element need not exist.
func (f *FS) Resolve(name, jail string, follow bool) (string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.walk(name, follow, jail)
	if err != nil {
		return "", pathErr("resolve", name, err)
	}
	return w.path, nil
}

// lookup resolves name that must exist.
func (f *FS) lookup(op, name string, follow bool) (walkResult, error) {
	w, err := f.walk(name, follow, "/")
	if err != nil {
		return w, pathErr(op, name, err)
	}
	if w.n == nil {
		return w, pathErr(op, name, fs.ErrNotExist)
	}
	return w, nil
}

// Stat describes name, following a final symlink when follow is set.
func (f *FS) Stat(name string, follow bool) (fs.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.lookup("stat", name, follow)
	if err != nil {
		return nil, err
	}
	return infoOf(w.name, w.n), nil
}

// StatJailed is Stat with resolution jailed below jail.
func (f *FS) StatJailed(name, jail string, follow bool) (fs.FileInfo, string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.walk(name, follow, jail)
	if err != nil {
		return nil, "", pathErr("stat", name, err)
	}
	if w.n == nil {
		return nil, "", pathErr("stat", name, fs.ErrNotExist)
	}
	return infoOf(w.name, w.n), w.path, nil
}

// ReadFile returns a copy of the content of the regular file name (symlinks followed).
func (f *FS) ReadFile(name string) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.lookup("open", name, true)
	if err != nil {
		return nil, err
	}
	if w.n.mode.IsDir() {
		return nil, pathErr("read", name, syscall.EISDIR)
	}
	if w.n.dev != nil {
		return nil, nil
	}
	return append([]byte(nil), w.n.data...), nil
}

// Content returns the content of a regular file without copying; the caller must not modify it.
func (f *FS) Content(name string) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.lookup("open", name, true)
	if err != nil {
		return nil, err
	}
	if w.n.mode.IsDir() {
		return nil, pathErr("read", name, syscall.EISDIR)
	}
	return w.n.data, nil
}

func (f *FS) charge(delta int64) error {
	if delta > 0 && f.maxBytes > 0 && f.size+delta > f.maxBytes {
		return ErrNoSpace
	}
	f.size += delta
	return nil
}

// WriteFile replaces (or creates) the regular file name with a copy of data, atomically: a
// reader sees the old or the new content. A replaced file gets a new inode number, as a
// temp-and-rename would. Parent directories must exist (see MkdirAll). A final symlink is
// followed.
func (f *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, err := f.walk(name, true, "/")
	if err != nil {
		return pathErr("write", name, err)
	}
	return f.replaceLocked(w, name, data, perm)
}

func (f *FS) replaceLocked(w walkResult, name string, data []byte, perm fs.FileMode) error {
	if w.parent == nil {
		return pathErr("write", name, syscall.EISDIR)
	}
	old := int64(0)
	if w.n != nil {
		if w.n.mode.IsDir() {
			return pathErr("write", name, syscall.EISDIR)
		}
		if w.n.dev != nil {
			return nil
		}
		old = int64(len(w.n.data))
		perm = w.n.mode.Perm()
	}
	if err := f.charge(int64(len(data)) - old); err != nil {
		return pathErr("write", name, err)
	}
	n := f.newNode(perm.Perm())
	n.data = append(make([]byte, 0, len(data)), data...)
	w.parent.children[w.name] = n
	w.parent.mtime = n.mtime
	return nil
}

// MkdirAll creates name and any missing parents (mode perm); existing directories are fine.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mkdirAllLocked(name, perm, "/")
}

// MkdirAllJailed is MkdirAll with every resolution jailed below jail.
func (f *FS) MkdirAllJailed(name, jail string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mkdirAllLocked(name, perm, jail)
}

func (f *FS) mkdirAllLocked(name string, perm fs.FileMode, jail string) error {
	parts := splitPath(Clean(name))
	cur := "/"
	for _, p := range parts {
		cur = path.Join(cur, p)
		w, err := f.walk(cur, true, jail)
		if err != nil {
			return pathErr("mkdir", name, err)
		}
		if w.n != nil {
			if !w.n.mode.IsDir() {
				return pathErr("mkdir", name, syscall.ENOTDIR)
			}
			cur = w.path
			continue
		}
		d := f.newNode(fs.ModeDir | perm.Perm())
		w.parent.children[w.name] = d
		w.parent.mtime = d.mtime
		cur = w.path
	}
	return nil
}

// WriteFileJailed creates parent directories and replaces the file, with every resolution
// (parents and a final symlink) jailed below jail.
func (f *FS) WriteFileJailed(name, jail string, data []byte, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := path.Dir(Clean(name))
	if err := f.mkdirAllLocked(dir, 0o755, jail); err != nil {
		return err
	}
	w, err := f.walk(name, true, jail)
	if err != nil {
		return pathErr("write", name, err)
	}
	return f.replaceLocked(w, name, data, perm)
}

// Mkdir creates one directory; it fails with fs.ErrExist when name exists.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, err := f.walk(name, false, "/")
	if err != nil {
		return pathErr("mkdir", name, err)
	}
	if w.n != nil {
		return pathErr("mkdir", name, fs.ErrExist)
	}
	d := f.newNode(fs.ModeDir | perm.Perm())
	w.parent.children[w.name] = d
	w.parent.mtime = d.mtime
	return nil
}

// Symlink creates link pointing at target (stored as given, resolved at use).
func (f *FS) Symlink(target, link string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, err := f.walk(link, false, "/")
	if err != nil {
		return pathErr("symlink", link, err)
	}
	if w.n != nil || w.parent == nil {
		return pathErr("symlink", link, fs.ErrExist)
	}
	if err := f.charge(int64(len(target))); err != nil {
		return pathErr("symlink", link, err)
	}
	n := f.newNode(fs.ModeSymlink | 0o777)
	n.target = target
	w.parent.children[w.name] = n
	w.parent.mtime = n.mtime
	return nil
}

// Readlink returns a symlink's target.
func (f *FS) Readlink(name string) (string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.lookup("readlink", name, false)
	if err != nil {
		return "", err
	}
	if w.n.mode&fs.ModeSymlink == 0 {
		return "", pathErr("readlink", name, fs.ErrInvalid)
	}
	return w.n.target, nil
}

// Remove deletes a file, a symlink (not its target) or an empty directory.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.removeLocked(name, false, "/")
}

// RemoveJailed is Remove with resolution of the parents jailed below jail.
func (f *FS) RemoveJailed(name, jail string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.removeLocked(name, false, jail)
}

// RemoveAll deletes name and everything below it; a missing name is not an error.
func (f *FS) RemoveAll(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.removeLocked(name, true, "/")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (f *FS) removeLocked(name string, all bool, jail string) error {
	w, err := f.walk(name, false, jail)
	if err != nil {
		return pathErr("remove", name, err)
	}
	if w.n == nil {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if w.parent == nil {
		return pathErr("remove", name, fs.ErrInvalid)
	}
	if w.n.mode.IsDir() && len(w.n.children) > 0 && !all {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	f.size -= treeBytes(w.n)
	delete(w.parent.children, w.name)
	w.parent.mtime = f.now()
	return nil
}

func treeBytes(n *node) int64 {
	s := int64(len(n.data)) + int64(len(n.target))
	for _, c := range n.children {
		s += treeBytes(c)
	}
	return s
}

// Rename moves oldname to newname, replacing a file (or an empty directory) there.
func (f *FS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	src, err := f.walk(oldname, false, "/")
	if err != nil {
		return pathErr("rename", oldname, err)
	}
	if src.n == nil || src.parent == nil {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	dst, err := f.walk(newname, false, "/")
	if err != nil {
		return pathErr("rename", newname, err)
	}
	if dst.parent == nil {
		return pathErr("rename", newname, fs.ErrExist)
	}
	if src.n.mode.IsDir() && (dst.path == src.path || strings.HasPrefix(dst.path, src.path+"/")) {
		if dst.path == src.path {
			return nil
		}
		return pathErr("rename", newname, fs.ErrInvalid)
	}
	if dst.n != nil {
		if dst.n == src.n {
			return nil
		}
		if dst.n.mode.IsDir() {
			if !src.n.mode.IsDir() {
				return pathErr("rename", newname, syscall.EISDIR)
			}
			if len(dst.n.children) > 0 {
				return pathErr("rename", newname, syscall.ENOTEMPTY)
			}
		} else if src.n.mode.IsDir() {
			return pathErr("rename", newname, syscall.ENOTDIR)
		}
		f.size -= treeBytes(dst.n)
	}
	delete(src.parent.children, src.name)
	dst.parent.children[dst.name] = src.n
	now := f.now()
	src.parent.mtime, dst.parent.mtime = now, now
	return nil
}

// Chtimes sets the modification time of name (symlinks followed).
func (f *FS) Chtimes(name string, mtime time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, err := f.lookup("chtimes", name, true)
	if err != nil {
		return err
	}
	w.n.mtime = mtime
	return nil
}

// Chmod sets the permission bits of name (symlinks followed).
func (f *FS) Chmod(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, err := f.lookup("chmod", name, true)
	if err != nil {
		return err
	}
	w.n.mode = w.n.mode.Type() | perm&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid)
	return nil
}

// Mknod places a device at name (used for /dev/null, /dev/zero and the like).
func (f *FS) Mknod(name string, dev func() Device) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, err := f.walk(name, false, "/")
	if err != nil {
		return pathErr("mknod", name, err)
	}
	if w.n != nil || w.parent == nil {
		return pathErr("mknod", name, fs.ErrExist)
	}
	n := f.newNode(fs.ModeDevice | fs.ModeCharDevice | 0o666)
	n.dev = dev
	w.parent.children[w.name] = n
	return nil
}

// ReadDir lists a directory sorted by name (symlinks followed for name itself).
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.lookup("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if !w.n.mode.IsDir() {
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	return dirEntries(w.n), nil
}

func dirEntries(n *node) []fs.DirEntry {
	out := make([]fs.DirEntry, 0, len(n.children))
	for name, c := range n.children {
		out = append(out, fs.FileInfoToDirEntry(infoOf(name, c)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Entry is one element of Walk's result.
type Entry struct {
	Path string // absolute
	Info fs.FileInfo
}

// Walk returns every entry below dir (not dir itself) in lexical order without following
// symlinks, as one consistent snapshot.
func (f *FS) Walk(dir string) ([]Entry, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, err := f.lookup("walk", dir, true)
	if err != nil {
		return nil, err
	}
	if !w.n.mode.IsDir() {
		return nil, pathErr("walk", dir, syscall.ENOTDIR)
	}
	var out []Entry
	var rec func(p string, n *node)
	rec = func(p string, n *node) {
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			c := n.children[name]
			cp := path.Join(p, name)
			out = append(out, Entry{Path: cp, Info: infoOf(name, c)})
			if c.mode.IsDir() {
				rec(cp, c)
			}
		}
	}
	rec(w.path, w.n)
	return out, nil
}

// fileInfo is a snapshot of one node.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	ino   uint64
}

func infoOf(name string, n *node) *fileInfo {
	if name == "" {
		name = "/"
	}
	size := int64(len(n.data))
	if n.mode&fs.ModeSymlink != 0 {
		size = int64(len(n.target))
	}
	return &fileInfo{name: name, size: size, mode: n.mode, mtime: n.mtime, ino: n.ino}
}

func (i *fileInfo) Name() string       { return i.name }
func (i *fileInfo) Size() int64        { return i.size }
func (i *fileInfo) Mode() fs.FileMode  { return i.mode }
func (i *fileInfo) ModTime() time.Time { return i.mtime }
func (i *fileInfo) IsDir() bool        { return i.mode.IsDir() }

// Sys returns the inode number as a uint64.
func (i *fileInfo) Sys() any { return i.ino }

// Inode returns the inode number of info when it comes from this package, else 0.
func Inode(info fs.FileInfo) uint64 {
	if fi, ok := info.(*fileInfo); ok {
		return fi.ino
	}
	return 0
}
