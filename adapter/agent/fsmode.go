package agent

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter/agent/frames"
	"github.com/sandboxer/sandboxer/adapter/agent/trustfile"
)

// FSFlag, the agent's first argument (after -user), runs one file operation of package shellfs
// natively instead of its shell script: `sandboxer-agent -fs OP ARGS...`, started like any command
// (as the sandbox user), with the script's exact contract: arguments, stdin, stdout, stderr and
// exit codes (see shellfs's scripts). An image then needs no shell, find, stat or tar for the
// adapter's file operations.
const FSFlag = "-fs"

// Exit codes of the file operations (shellfs's).
const (
	fsEscape   = 3
	fsNotFound = 4
	fsLoop     = 5
	fsIsDir    = 6
	fsNotDir   = 7
	fsIO       = 8
	fsInvalid  = 9
)

// Workspace is the workspace directory in every container sandbox (adapter.DefaultWorkspace).
const Workspace = "/workspace"

// fsTmpPrefix names the temporary files and directories of the file operations (shellfs's).
const fsTmpPrefix = ".sandboxer-tmp-"

// ServeFS runs the file operation args[0] with its arguments in the workspace root (the sandbox's
// /workspace) and returns its exit code.
func ServeFS(root string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "sandboxer-agent -fs: no operation")
		return fsInvalid
	}
	j := fsJail{root: filepath.Clean(root)}
	op, a := args[0], args[1:]
	need := map[string]int{"read": 1, "write": 1, "stat": 1, "symlink": 2, "chmod": 2, "remove": 1, "list": 1, "tarout": 0, "tarin": 0, "put": 1, "open": 1, "trust": 1}
	if n, ok := need[op]; ok && len(a) != n {
		fmt.Fprintf(stderr, "sandboxer-agent -fs %s: want %d arguments\n", op, n)
		return fsInvalid
	}
	switch op {
	case "read":
		return j.read(a[0], stdout)
	case "write":
		return j.write(a[0], stdin)
	case "put":
		return j.write(a[0], frames.Decode(stdin))
	case "open":
		return j.open(a[0], stdout)
	case "stat":
		return j.stat(a[0], stdout)
	case "symlink":
		return j.symlink(a[0], a[1])
	case "chmod":
		return j.chmod(a[0], a[1])
	case "remove":
		return j.remove(a[0])
	case "list":
		return j.list(a[0], stdout, stderr)
	case "readmany":
		return j.readMany(a, stdout, stderr)
	case "writemany":
		return j.writeMany(a, stdin, stderr)
	case "tarout":
		return j.tarOut(stdout, stderr)
	case "tarin":
		return j.tarIn(stdin, stderr)
	case "trust":
		return trust(a[0], stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "sandboxer-agent -fs: unknown operation %q\n", op)
	return fsInvalid
}

// fsJail resolves workspace-relative paths inside root, as shellfs.JailFn does.
type fsJail struct{ root string }

// resolve follows every symbolic link of p (workspace-relative, lexically clean), component by
// component, and returns the real path; fsEscape as soon as the walk leaves the root (an
// absolute link elsewhere, ".." above it), fsLoop after 40 links. Components that do not exist
// are taken as they are.
func (j fsJail) resolve(p string) (string, int) {
	r, rest, n := j.root, p, 0
	for rest != "" {
		c := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			c, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if r == j.root {
				return "", fsEscape
			}
			r = filepath.Dir(r)
			continue
		}
		next := r + "/" + c
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			r = next
			continue
		}
		if n++; n > 40 {
			return "", fsLoop
		}
		t, err := os.Readlink(next)
		if err != nil {
			return "", fsLoop
		}
		switch {
		case t == j.root:
			r, t = j.root, ""
		case strings.HasPrefix(t, j.root+"/"):
			r, t = j.root, t[len(j.root)+1:]
		case strings.HasPrefix(t, "/"):
			return "", fsEscape
		}
		if rest != "" {
			t += "/" + rest
		}
		rest = t
	}
	return r, 0
}

// resolveParent resolves the parent of p and appends its last component unresolved (the entry
// itself, a link not followed); "." is the root.
func (j fsJail) resolveParent(p string) (string, int) {
	if p == "." {
		return j.root, 0
	}
	dir, base := path.Split(p)
	if dir == "" {
		return j.root + "/" + base, 0
	}
	r, code := j.resolve(strings.TrimSuffix(dir, "/"))
	if code != 0 {
		return "", code
	}
	return r + "/" + base, 0
}

func (j fsJail) read(p string, stdout io.Writer) int { return j.copyOut(p, stdout, false) }

// maxTrustPEM bounds the certificate authority trust reads from stdin.
const maxTrustPEM = 64 << 10

// trust is the egress proxy's certificate bundle (package trustfile): it makes HOME's bundle hold
// the image's trusted certificates followed by the PEM on stdin, unless it ends with it already,
// and prints the bundle's path. HOME is an absolute directory outside the workspace (the
// commands' HOME): the only path of the file operations outside the jail, and only this file in it.
func trust(home string, stdin io.Reader, stdout, stderr io.Writer) int {
	if !path.IsAbs(home) || path.Clean(home) != home || home == "/" || home == Workspace || strings.HasPrefix(home, Workspace+"/") {
		fmt.Fprintf(stderr, "sandboxer-agent -fs trust: %q is not an absolute directory outside the workspace\n", home)
		return fsInvalid
	}
	pem, err := io.ReadAll(io.LimitReader(stdin, maxTrustPEM+1))
	if err != nil || len(pem) == 0 || len(pem) > maxTrustPEM {
		fmt.Fprintln(stderr, "sandboxer-agent -fs trust: want the authority's PEM (at most 64 KiB) on stdin")
		return fsInvalid
	}
	file := path.Join(home, trustfile.Path)
	if err := trustfile.Write(file, pem, func() ([]byte, error) { return trustfile.System("/"), nil }); err != nil {
		fmt.Fprintf(stderr, "sandboxer-agent -fs trust: %v\n", err)
		return fsIO
	}
	fmt.Fprintln(stdout, file)
	return 0
}

// open is read for a stream of unknown length (the agent's own, no script has it): the size of
// the file opened as a decimal line, then that many bytes of it and no more.
func (j fsJail) open(p string, stdout io.Writer) int { return j.copyOut(p, stdout, true) }

// copyOut writes the regular file p on stdout: whole, or, sized, after its size and no more
// than that.
func (j fsJail) copyOut(p string, stdout io.Writer, sized bool) int {
	r, code := j.resolve(p)
	if code != 0 {
		return code
	}
	f, fi, code := openRegular(r)
	if code != 0 {
		return code
	}
	defer f.Close()
	var src io.Reader = f
	if sized {
		if _, err := fmt.Fprintf(stdout, "%d\n", fi.Size()); err != nil {
			return fsIO
		}
		src = io.LimitReader(f, fi.Size())
	}
	if _, err := io.Copy(stdout, src); err != nil {
		return fsIO
	}
	return 0
}

// openRegular opens r for reading when it is a regular file (fsNotFound else). O_NONBLOCK: a
// FIFO planted in the workspace, or swapped in after a check, does not hang the operation.
func openRegular(r string) (*os.File, fs.FileInfo, int) {
	f, err := os.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fsNotFound
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fsNotFound
	}
	return f, fi, 0
}

// ensureDir makes the directory of r (and its parents) unless it is there.
func ensureDir(dir string) int {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return 0
	}
	if os.MkdirAll(dir, 0o755) != nil {
		return fsNotDir
	}
	return 0
}

// placeFile writes the content of src into a temporary file beside r and renames it over r;
// mode is the new file's.
func placeFile(r string, src io.Reader, mode os.FileMode) int {
	t := filepath.Join(filepath.Dir(r), fsTmpPrefix+strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(t, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fsIO
	}
	_, err = io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(t, mode) // the umask took its share
	}
	if err == nil {
		err = os.Rename(t, r)
	}
	if err != nil {
		os.Remove(t)
		return fsIO
	}
	return 0
}

func (j fsJail) write(p string, stdin io.Reader) int {
	r, code := j.resolve(p)
	if code != 0 {
		return code
	}
	if r == j.root {
		return fsIsDir
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(r); err == nil {
		if !fi.Mode().IsRegular() {
			return fsIsDir
		}
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
	}
	if code := ensureDir(filepath.Dir(r)); code != 0 {
		return code
	}
	return placeFile(r, stdin, mode)
}

// statLine is stat -c '%s %f %i %y' of fi: size, raw mode in hex, inode, modification time.
func statLine(fi fs.FileInfo) string {
	st, _ := fi.Sys().(*syscall.Stat_t)
	var mode uint32
	var ino uint64
	if st != nil {
		mode, ino = uint32(st.Mode), uint64(st.Ino)
	}
	return fmt.Sprintf("%d %x %d %s", fi.Size(), mode, ino, fi.ModTime().Format("2006-01-02 15:04:05.000000000 -0700"))
}

func (j fsJail) stat(p string, stdout io.Writer) int {
	r, code := j.resolveParent(p)
	if code != 0 {
		return code
	}
	fi, err := os.Lstat(r)
	if err != nil {
		return fsNotFound
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		fmt.Fprintln(stdout, statLine(fi))
		return 0
	}
	if _, code := j.resolve(p); code != 0 {
		return code
	}
	t, err := os.Readlink(r)
	if err != nil {
		return fsIO
	}
	fmt.Fprintf(stdout, "%s\n%s\n", statLine(fi), t)
	return 0
}

func (j fsJail) symlink(p, target string) int {
	r, code := j.resolveParent(p)
	if code != 0 {
		return code
	}
	fi, err := os.Lstat(r)
	if err == nil && fi.IsDir() {
		return fsIsDir
	}
	if code := ensureDir(filepath.Dir(r)); code != 0 {
		return code
	}
	t := filepath.Join(filepath.Dir(r), fsTmpPrefix+strconv.Itoa(os.Getpid()))
	os.Remove(t)
	if os.Symlink(target, t) != nil {
		return fsIO
	}
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		os.Remove(r) // so the rename cannot land inside a directory the link points to
	}
	if os.Rename(t, r) != nil {
		os.Remove(t)
		return fsIO
	}
	return 0
}

func (j fsJail) chmod(p, exec string) int {
	r, code := j.resolveParent(p)
	if code != 0 {
		return code
	}
	fi, err := os.Lstat(r)
	if err != nil || !fi.Mode().IsRegular() {
		return fsNotFound
	}
	mode := os.FileMode(0o644)
	if exec == "1" {
		mode = 0o755
	}
	if os.Chmod(r, mode) != nil {
		return fsIO
	}
	return 0
}

func (j fsJail) remove(p string) int {
	if p == "." {
		return fsInvalid
	}
	r, code := j.resolveParent(p)
	if code != 0 {
		return code
	}
	if _, err := os.Lstat(r); err != nil {
		return fsNotFound
	}
	if syscall.Unlink(r) == nil || syscall.Rmdir(r) == nil {
		return 0
	}
	return fsIO
}

// list writes the regular files and symbolic links under dir as listScript does: names (and
// each link's target) NUL-terminated on stdout, one stat line per name on stderr, in the same
// order. What disappears during the walk is left out; the temporary names are not walked.
func (j fsJail) list(dir string, stdout, stderr io.Writer) int {
	r, code := j.resolve(dir)
	if code != 0 {
		return code
	}
	if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
		return fsNotFound
	}
	start := "."
	if r != j.root {
		start = "./" + r[len(j.root)+1:]
	}
	out, errOut := bufio.NewWriter(stdout), bufio.NewWriter(stderr)
	walkErr := walkTree(r, start, func(name string, fi fs.FileInfo) {
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, err := os.Readlink(filepath.Join(j.root, name))
			if err != nil {
				return
			}
			fmt.Fprintln(errOut, statLine(fi))
			fmt.Fprintf(out, "%s\x00%s\x00", name, t)
		} else if fi.Mode().IsRegular() {
			fmt.Fprintln(errOut, statLine(fi))
			fmt.Fprintf(out, "%s\x00", name)
		}
	})
	if err := errors.Join(out.Flush(), errOut.Flush()); err != nil {
		return fsIO
	}
	if walkErr != nil {
		fmt.Fprintln(stderr, walkErr)
		return fsIO
	}
	return 0
}

// walkTree calls fn for every entry under the directory dir (named name), without following
// links, skipping the temporary names and what disappears meanwhile.
func walkTree(dir, name string, fn func(name string, fi fs.FileInfo)) error {
	f, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, fsTmpPrefix) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, n))
		if err != nil {
			continue // gone
		}
		if fi.IsDir() {
			if err := walkTree(filepath.Join(dir, n), name+"/"+n, fn); err != nil {
				return err
			}
			continue
		}
		fn(name+"/"+n, fi)
	}
	return nil
}

// readMany writes a tar of the regular files at paths (relative to the root, as resolved) on
// stdout, after their real paths, NUL-terminated, on stderr; a path that does not pass exits
// with its code after "index I" on stderr.
func (j fsJail) readMany(paths []string, stdout, stderr io.Writer) int {
	real := make([]string, len(paths))
	for i, p := range paths {
		r, code := j.resolve(p)
		if code == 0 {
			if fi, err := os.Stat(r); err != nil || !fi.Mode().IsRegular() {
				code = fsNotFound
			}
		}
		if code != 0 {
			fmt.Fprintf(stderr, "index %d\n", i)
			return code
		}
		real[i] = r
	}
	for _, r := range real {
		fmt.Fprintf(stderr, "%s\x00", strings.TrimPrefix(r, j.root+"/"))
	}
	tw := tar.NewWriter(stdout)
	for _, r := range real {
		if code := addFile(tw, r, strings.TrimPrefix(r, j.root+"/")); code != 0 {
			return code
		}
	}
	if tw.Close() != nil {
		return fsIO
	}
	return 0
}

// addFile writes the regular file r into tw as name.
func addFile(tw *tar.Writer, r, name string) int {
	f, fi, code := openRegular(r)
	if code != 0 {
		return fsIO // it passed the check before the tar began: changed since
	}
	defer f.Close()
	h, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return fsIO
	}
	h.Name, h.Uname, h.Gname = name, "", ""
	if tw.WriteHeader(h) != nil {
		return fsIO
	}
	if _, err := io.CopyN(tw, f, h.Size); err != nil {
		return fsIO
	}
	return 0
}

// writeMany takes a tar on stdin whose entries are named 0, 1, ... in the order of paths and
// moves each into place, after every path passed the jail (writeManyScript).
func (j fsJail) writeMany(paths []string, stdin io.Reader, stderr io.Writer) int {
	real := make([]string, len(paths))
	for i, p := range paths {
		r, code := j.resolve(p)
		if code == 0 {
			if fi, err := os.Stat(r); r == j.root || err == nil && fi.IsDir() {
				code = fsIsDir
			}
		}
		if code != 0 {
			fmt.Fprintf(stderr, "index %d\n", i)
			return code
		}
		real[i] = r
	}
	stage := filepath.Join(j.root, fsTmpPrefix+strconv.Itoa(os.Getpid()))
	if os.Mkdir(stage, 0o700) != nil {
		return fsIO
	}
	defer os.RemoveAll(stage)
	tr := tar.NewReader(stdin)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fsIO
		}
		i, err := strconv.Atoi(h.Name)
		if err != nil || i < 0 || i >= len(paths) || h.Typeflag != tar.TypeReg {
			return fsIO
		}
		f, err := os.OpenFile(filepath.Join(stage, h.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fsIO
		}
		_, err = io.Copy(f, tr)
		if err == nil {
			err = f.Chmod(os.FileMode(h.Mode) & 0o777)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fsIO
		}
	}
	for i, r := range real {
		if code := ensureDir(filepath.Dir(r)); code != 0 {
			fmt.Fprintf(stderr, "index %d\n", i)
			return code
		}
		if os.Rename(filepath.Join(stage, strconv.Itoa(i)), r) != nil {
			return fsIO
		}
	}
	return 0
}

// tarOut writes the whole workspace as a tar on stdout (regular files, directories and
// symbolic links, with their modes; names relative to the root): a fork's source.
func (j fsJail) tarOut(stdout, stderr io.Writer) int {
	tw := tar.NewWriter(stdout)
	err := filepath.WalkDir(j.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if p == j.root {
			return nil
		}
		name := p[len(j.root)+1:]
		fi, err := d.Info()
		if err != nil {
			return nil // gone
		}
		switch {
		case fi.Mode().IsRegular():
			if code := addFile(tw, p, name); code != 0 {
				return fmt.Errorf("%s: cannot archive", name)
			}
			return nil
		case fi.IsDir(), fi.Mode()&fs.ModeSymlink != 0:
			link := ""
			if fi.Mode()&fs.ModeSymlink != 0 {
				if link, err = os.Readlink(p); err != nil {
					return nil
				}
			}
			h, err := tar.FileInfoHeader(fi, link)
			if err != nil {
				return err
			}
			h.Name, h.Uname, h.Gname = name, "", ""
			return tw.WriteHeader(h)
		}
		return nil // sockets, fifos, devices: not copied
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return fsIO
	}
	return 0
}

// tarIn unpacks a tar of tarOut's into the workspace: names must stay inside it (no "..", not
// absolute), links are made as they are (their targets are resolved, later, by the jail).
func (j fsJail) tarIn(stdin io.Reader, stderr io.Writer) int {
	tr := tar.NewReader(stdin)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return 0
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return fsIO
		}
		name := path.Clean(h.Name)
		if name == "." {
			continue // the root itself (tar -cf - . has it)
		}
		if !fs.ValidPath(name) {
			fmt.Fprintf(stderr, "%q: a name outside the workspace\n", h.Name)
			return fsEscape
		}
		// Every directory on the way must be a real one of the workspace: a link in the
		// archive cannot redirect a later entry.
		r, code := j.resolve(path.Dir(name))
		if code != 0 || r != filepath.Join(j.root, path.Dir(name)) {
			fmt.Fprintf(stderr, "%q: through a link\n", h.Name)
			return fsEscape
		}
		dst := filepath.Join(j.root, name)
		mode := os.FileMode(h.Mode) & 0o777
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(dst, mode|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fsIO
			}
		case tar.TypeSymlink:
			os.Remove(dst)
			if os.Symlink(h.Linkname, dst) != nil {
				return fsIO
			}
		case tar.TypeReg:
			if ensureDir(filepath.Dir(dst)) != 0 || placeFile(dst, tr, mode) != 0 {
				return fsIO
			}
			os.Chtimes(dst, time.Now(), h.ModTime)
		}
	}
}
