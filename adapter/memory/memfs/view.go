package memfs

import (
	"io/fs"
	"path"
)

// View is an io/fs view of the subtree at one directory: names are fs.ValidPath names relative to
// it, and symlink resolution may not leave it (such a link reads as fs.ErrNotExist). It
// implements fs.FS, fs.StatFS, fs.ReadDirFS, fs.ReadFileFS and fs.ReadLinkFS.
type View struct {
	fs   *FS
	root string
}

// Sub returns the io/fs view of the directory dir (absolute).
func (f *FS) Sub(dir string) *View { return &View{fs: f, root: Clean(dir)} }

func (v *View) abs(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return path.Join(v.root, name), nil
}

func (v *View) resolve(op, name string, follow bool) (string, error) {
	p, err := v.abs(op, name)
	if err != nil {
		return "", err
	}
	r, err := v.fs.Resolve(p, v.root, follow)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return r, nil
}

// Open opens name for reading.
func (v *View) Open(name string) (fs.File, error) {
	p, err := v.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	f, err := v.fs.Open(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPath(err)}
	}
	if name != "." {
		f.name = path.Base(name)
	} else {
		f.name = "."
	}
	return f, nil
}

// Stat describes name, following symlinks.
func (v *View) Stat(name string) (fs.FileInfo, error) {
	p, err := v.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	info, err := v.fs.Stat(p, true)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: unwrapPath(err)}
	}
	return renamed(info, name), nil
}

// Lstat describes name without following a final symlink.
func (v *View) Lstat(name string) (fs.FileInfo, error) {
	p, err := v.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	info, err := v.fs.Stat(p, false)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: unwrapPath(err)}
	}
	return renamed(info, name), nil
}

// ReadLink returns a symlink's target.
func (v *View) ReadLink(name string) (string, error) {
	p, err := v.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	t, err := v.fs.Readlink(p)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: unwrapPath(err)}
	}
	return t, nil
}

// ReadDir lists a directory sorted by name.
func (v *View) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := v.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	ents, err := v.fs.ReadDir(p)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPath(err)}
	}
	return ents, nil
}

// ReadFile returns a copy of a file's content.
func (v *View) ReadFile(name string) ([]byte, error) {
	p, err := v.resolve("readfile", name, true)
	if err != nil {
		return nil, err
	}
	data, err := v.fs.ReadFile(p)
	if err != nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: unwrapPath(err)}
	}
	return data, nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

func renamed(info fs.FileInfo, name string) fs.FileInfo {
	fi, ok := info.(*fileInfo)
	if !ok {
		return info
	}
	c := *fi
	if name == "." {
		c.name = "."
	} else {
		c.name = path.Base(name)
	}
	return &c
}
