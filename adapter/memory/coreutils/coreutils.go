// Package coreutils owns the memory adapter's built-in utilities (cat, ls, grep, rg, sed, find,
// ...): Go functions that read and write an in-memory memfs tree and never touch the host.
//
// A utility is a Func called with an Env (the tree, the working directory, the standard streams,
// the environment and a way to run further commands) and its argv; it returns the exit status.
// Messages go to Env.Stderr in the usual "NAME: ..." form. Utilities honour Env.Ctx: long loops
// and sleep stop when it is cancelled.
package coreutils

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter/memory/memfs"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
)

// Env is what a running utility sees.
type Env struct {
	Ctx    context.Context
	FS     FS
	Dir    string // absolute working directory in the tree
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Vars   expand.Environ // the shell's variables; only exported ones are the environment
	// Exec runs another command (for xargs, env, find -exec) with the given streams and returns its
	// exit status; nil means utilities cannot start commands.
	Exec func(e *Env, args []string) int
}

// FS is the tree as utilities use it: memfs.FS's methods, with absolute paths. The adapter passes
// a wrapper that refuses access once the command has ended and turns a spent byte budget into its
// limit error.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Stat(name string, follow bool) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Content(name string) ([]byte, error)
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Mkdir(name string, perm fs.FileMode) error
	MkdirAll(name string, perm fs.FileMode) error
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	Symlink(target, link string) error
	Readlink(name string) (string, error)
	Chtimes(name string, mtime time.Time) error
	Chmod(name string, perm fs.FileMode) error
	Walk(dir string) ([]memfs.Entry, error)
	Resolve(name, jail string, follow bool) (string, error)
}

// File is an open file of an FS.
type File interface {
	io.ReadWriteCloser
	Stat() (fs.FileInfo, error)
}

// Plain adapts a memfs.FS to FS without any gate (for tests and tools that own the tree).
func Plain(f *memfs.FS) FS { return plainFS{f} }

type plainFS struct{ *memfs.FS }

func (p plainFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := p.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Func is one utility: it returns the exit status.
type Func func(e *Env, args []string) int

var table = map[string]Func{}

func register(name string, f Func) { table[name] = f }

// Lookup returns the utility called name.
func Lookup(name string) (Func, bool) {
	f, ok := table[name]
	return f, ok
}

// Names lists every utility, sorted.
func Names() []string {
	out := make([]string, 0, len(table))
	for n := range table {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Abs turns a path as a command gives it into an absolute tree path.
func (e *Env) Abs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(e.Dir, p)
}

// Getenv returns the value of an exported variable.
func (e *Env) Getenv(key string) string {
	if e.Vars == nil {
		return ""
	}
	v := e.Vars.Get(key)
	if !v.Exported {
		return ""
	}
	return v.String()
}

// Environ returns the exported variables as sorted KEY=VALUE entries.
func (e *Env) Environ() []string {
	return Environ(e.Vars)
}

// Environ returns the exported string variables of vars as sorted KEY=VALUE entries.
func Environ(vars expand.Environ) []string {
	if vars == nil {
		return nil
	}
	var out []string
	vars.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() && vr.Kind == expand.String {
			out = append(out, name+"="+vr.Str)
		}
		return true
	})
	sort.Strings(out)
	return out
}

func (e *Env) errf(name, format string, args ...any) {
	fmt.Fprintf(e.Stderr, name+": "+format+"\n", args...)
}

// fail prints "name: msg" and returns status 1.
func (e *Env) fail(name, format string, args ...any) int {
	e.errf(name, format, args...)
	return 1
}

// usage prints a usage error and returns status 2.
func (e *Env) usage(name, format string, args ...any) int {
	e.errf(name, format, args...)
	return 2
}

// stdin returns standard input, empty when there is none.
func (e *Env) stdin() io.Reader {
	if e.Stdin == nil {
		return strings.NewReader("")
	}
	if f, ok := e.Stdin.(*os.File); ok && f == nil {
		return strings.NewReader("")
	}
	return e.Stdin
}

// open opens a file argument for reading; "-" is standard input.
func (e *Env) open(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(e.stdin()), nil
	}
	f, err := e.FS.OpenFile(e.Abs(name), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	if st, _ := f.Stat(); st != nil && st.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return f, nil
}

// readAll reads a whole file argument ("-" is standard input).
func (e *Env) readAll(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(ctxReader{e.Ctx, e.stdin()})
	}
	data, err := e.FS.Content(e.Abs(name))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// ErrText renders an error the way coreutils do ("No such file or directory").
func ErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrExist):
		return "File exists"
	case errors.Is(err, syscall.EISDIR):
		return "Is a directory"
	case errors.Is(err, syscall.ENOTDIR):
		return "Not a directory"
	case errors.Is(err, syscall.ENOTEMPTY):
		return "Directory not empty"
	case errors.Is(err, syscall.ELOOP):
		return "Too many levels of symbolic links"
	case errors.Is(err, syscall.ENOSPC):
		return "No space left on device"
	case errors.Is(err, fs.ErrInvalid):
		return "Invalid argument"
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	}
	return err.Error()
}

// ctxReader stops reading when the context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// isBrokenPipe reports a write error that means the reader went away (or the adapter stopped
// listening): the utility ends quietly, as a process killed by SIGPIPE would.
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

// writeErr turns a write error into an exit status, printing a message unless it is a broken pipe.
func (e *Env) writeErr(name string, err error) int {
	if isBrokenPipe(err) {
		return 141
	}
	if e.Ctx.Err() != nil {
		return 130
	}
	e.errf(name, "write error: %s", ErrText(err))
	return 1
}

// parseFlags splits single-letter flags (bundled like -rf, anywhere on the line as GNU tools
// allow) from operands. Flags listed in withArg take a value (-n 5, -n5). "--" ends the flags and
// "-" is an operand. Unknown flags are an error.
func parseFlags(args []string, known, withArg string) (flags map[byte]string, rest []string, err error) {
	flags = map[byte]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			switch {
			case strings.IndexByte(withArg, c) >= 0:
				v := a[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return nil, nil, fmt.Errorf("option requires an argument -- '%c'", c)
					}
					i++
					v = args[i]
				}
				flags[c] = v
				j = len(a)
			case strings.IndexByte(known, c) >= 0:
				flags[c] += "1"
			default:
				return nil, nil, fmt.Errorf("invalid option -- '%c'", c)
			}
		}
	}
	return flags, rest, nil
}

func expandList(list []string) expand.Environ { return expand.ListEnviron(list...) }
