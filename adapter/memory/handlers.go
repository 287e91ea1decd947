package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter/memory/coreutils"
	"github.com/sandboxer/sandboxer/adapter/memory/memfs"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Names the call handler rewrites builtins to, so that they reach execHandler instead of an
// interpreter builtin that would look at the host (type, command -v, pwd -P) or is missing
// (kill). A NUL byte keeps them out of reach of scripts.
const (
	loopTick      = "__sandboxer_loop_tick" // printable: it survives eval's print-and-reparse
	internalKill  = "\x00sandboxer:kill"
	internalType  = "\x00sandboxer:type"
	internalCmdV  = "\x00sandboxer:command-v"
	internalPwd   = "\x00sandboxer:pwd"
	internalUnsup = "\x00sandboxer:unsupported"
	internalNoop  = "\x00sandboxer:noop"
	internalSrc   = "\x00sandboxer:" // prefix of a source path resolved in the tree
)

// internalFunc runs one internal command; a negative status -N means "the shell was killed by
// signal N".
type internalFunc func(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int

var internal map[string]internalFunc

func init() {
	internal = map[string]internalFunc{
		internalKill:  runKill,
		internalType:  runType,
		internalCmdV:  runCommandV,
		internalPwd:   runPwd,
		internalUnsup: runUnsupported,
		internalNoop:  runNoop,
		"which":       runWhich,
	}
}

// callHandler sees every simple command (builtins and functions included): it counts commands
// and loop iterations against the limits and reroutes the builtins that would reach the host.
func callHandler(ctx context.Context, args []string) ([]string, error) {
	cl := callOf(ctx)
	n := cl.commands.Add(1)
	if args[0] == loopTick {
		cl.commands.Add(-1)
		if l := cl.loops.Add(1); l > int64(cl.sb.cfg.MaxLoopIterations) {
			return nil, cl.limit("loop_iterations", "more than %d loop iterations", cl.sb.cfg.MaxLoopIterations)
		}
		if err := checkVars(ctx, cl); err != nil {
			return nil, err
		}
		return []string{":"}, nil
	}
	if n > int64(cl.sb.cfg.MaxCommands) {
		return nil, cl.limit("commands", "more than %d commands", cl.sb.cfg.MaxCommands)
	}
	if n%64 == 0 {
		if err := checkVars(ctx, cl); err != nil {
			return nil, err
		}
	}
	switch args[0] {
	case "kill":
		return append([]string{internalKill}, args[1:]...), nil
	case "umask", "ulimit":
		return append([]string{internalNoop, args[0]}, args[1:]...), nil
	case "type":
		return append([]string{internalType}, args[1:]...), nil
	case "command":
		if len(args) > 1 && (args[1] == "-v" || args[1] == "-V") {
			return append([]string{internalCmdV}, args[1:]...), nil
		}
	case "pwd":
		if len(args) > 1 {
			return append([]string{internalPwd}, args[1:]...), nil
		}
	case "source", ".":
		if len(args) > 1 {
			// Resolve the file in the tree ourselves; the prefix makes the interpreter's own PATH
			// lookup fail without a host call, and openHandler strips it.
			hc := interp.HandlerCtx(ctx)
			p := sourcePath(cl, hc, args[1])
			out := append([]string{args[0], internalSrc + p}, args[2:]...)
			return out, nil
		}
	case "eval":
		src := strings.Join(args[1:], " ")
		if out, err := instrumentSource(src); err == nil {
			return []string{"eval", out}, nil
		} else if errors.Is(err, errUnsupported) {
			return []string{internalUnsup, err.Error()}, nil
		} else if out, ok := evalRecovered(src, err); ok {
			return []string{"eval", out}, nil
		}
	case "trap":
		if len(args) > 2 && !strings.HasPrefix(args[1], "-") {
			if src, err := instrumentSource(args[1]); err == nil {
				return append([]string{"trap", src}, args[2:]...), nil
			}
		}
	case "set":
		if setsMonitor(args[1:]) {
			return []string{internalUnsup, "set -m: job control (the monitor option) is not supported"}, nil
		}
		// Job control is off, as in any bash script: turning it off changes nothing.
		for i := 1; i < len(args) && args[i] != "--"; i++ {
			if args[i] == "+m" || args[i] == "+o" && i+1 < len(args) && args[i+1] == "monitor" {
				n := 1
				if args[i] == "+o" {
					n = 2
				}
				args = append(args[:i:i], args[i+n:]...)
				i--
				if len(args) == 1 {
					return []string{":"}, nil // not a bare set, which lists the variables
				}
			}
		}
	case "test", "[":
		for _, a := range args[1:] {
			if a == "-O" || a == "-G" {
				return []string{internalUnsup, args[0] + " " + a + ": file ownership is not modelled"}, nil
			}
		}
	}
	return args, nil
}

// setsMonitor says whether the arguments of set turn job control on (-m, -o monitor).
func setsMonitor(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return false
		case a == "-o":
			if i+1 < len(args) && args[i+1] == "monitor" {
				return true
			}
			i++
		case a == "+o":
			i++
		case strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'm'):
			return true
		}
	}
	return false
}

// checkVars bounds the bytes held by shell variables.
func checkVars(ctx context.Context, cl *call) error {
	hc := interp.HandlerCtx(ctx)
	var total int64
	maxBytes := cl.sb.cfg.MaxStringBytes
	hc.Env.Each(func(name string, vr expand.Variable) bool {
		total += int64(len(vr.Str))
		for _, s := range vr.List {
			total += int64(len(s))
		}
		for _, s := range vr.Map {
			total += int64(len(s))
		}
		return total <= maxBytes
	})
	if total > maxBytes {
		return cl.limit("string_bytes", "shell variables hold more than %d bytes", maxBytes)
	}
	return nil
}

func sourcePath(cl *call, hc interp.HandlerContext, name string) string {
	if strings.Contains(name, "/") {
		return absIn(hc.Dir, name)
	}
	for _, d := range strings.Split(hc.Env.Get("PATH").String(), ":") {
		if d == "" {
			continue
		}
		p := path.Join(d, name)
		if info, err := cl.fs.Stat(p, true); err == nil && info.Mode().IsRegular() {
			return p
		}
	}
	return absIn(hc.Dir, name)
}

func absIn(dir, p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

// execHandler runs every command that is not a builtin or a function. It never reaches the host.
// A panic in a utility, on whichever goroutine the interpreter runs it, ends the call with a
// *PanicError instead of the process.
func execHandler(ctx context.Context, args []string) (err error) {
	cl := callOf(ctx)
	defer func() {
		if p := recover(); p != nil {
			err = cl.panicked(p)
		}
	}()
	hc := interp.HandlerCtx(ctx)
	code, err := cl.sb.runCommand(ctx, cl, hc, args)
	if err != nil {
		return err
	}
	if code < 0 {
		return killed{-code}
	}
	if err := cl.fatal(); err != nil {
		return err
	}
	if code == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(code))
}

func stdinFile(r io.Reader) *os.File {
	if f, ok := r.(*os.File); ok {
		return f
	}
	return nil
}

// runCommand dispatches one command: internal helpers, shells, utilities, builtins run for
// xargs/env, and executable scripts of the tree.
func (s *Sandbox) runCommand(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) (int, error) {
	name := binName(args[0])
	if f := internal[name]; f != nil {
		return f(ctx, cl, hc, args), nil
	}
	if isShell(name) {
		// A child shell, like a child process, sees only the exported variables.
		code, err := s.runShell(ctx, cl, args, hc.Dir, exportedOnly(hc.Env), stdinFile(hc.Stdin), hc.Stdout, hc.Stderr)
		return nestedExit(code, err)
	}
	if u, ok := coreutils.Lookup(name); ok {
		return s.runUtility(ctx, cl, hc, u, args), nil
	}
	if interp.IsBuiltin(name) {
		// Reached through xargs or env, or by path: run it in a child shell, as /usr/bin/NAME would.
		argv := append([]string{name}, args[1:]...) // /bin/true is the builtin true
		code, err := s.runNode(ctx, cl, callExpr(argv), false, nil, hc.Dir, exportedOnly(hc.Env), stdinFile(hc.Stdin), hc.Stdout, hc.Stderr)
		return nestedExit(code, err)
	}
	if strings.Contains(name, "/") {
		if !cl.enter() {
			return 126, nil
		}
		p, why := s.executable(hc.Dir, name)
		cl.leave()
		if why != "" {
			code := 126
			if why == "No such file or directory" {
				code = 127
			}
			fmt.Fprintf(hc.Stderr, "sh: %s: %s\n", name, why)
			return code, nil
		}
		shArgs := append([]string{"sh", p}, args[1:]...)
		code, err := s.runShell(ctx, cl, shArgs, hc.Dir, exportedOnly(hc.Env), stdinFile(hc.Stdin), hc.Stdout, hc.Stderr)
		return nestedExit(code, err)
	}
	if p := s.lookPath(hc.Env.Get("PATH").String(), name); p != "" {
		shArgs := append([]string{"sh", p}, args[1:]...)
		code, err := s.runShell(ctx, cl, shArgs, hc.Dir, exportedOnly(hc.Env), stdinFile(hc.Stdin), hc.Stdout, hc.Stderr)
		return nestedExit(code, err)
	}
	fmt.Fprintf(hc.Stderr, "sh: %s: command not found\n", name)
	return 127, nil
}

// lookPath finds an executable script of the tree on PATH (built-in programs are found before
// PATH is searched).
func (s *Sandbox) lookPath(pathVar, name string) string {
	for _, d := range strings.Split(pathVar, ":") {
		if !strings.HasPrefix(d, "/") {
			continue
		}
		if p, why := s.executable("/", path.Join(d, name)); why == "" {
			return p
		}
	}
	return ""
}

// binDirs are where the built-in programs live, as far as scripts can tell.
var binDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true}

// binName maps /bin/sh, /usr/bin/cat and the like to the built-in program's bare name; other
// names are returned as they are.
func binName(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	dir, base := path.Split(name)
	if !binDirs[path.Clean(dir)] {
		return name
	}
	if _, ok := coreutils.Lookup(base); ok || isShell(base) || programBuiltins[base] {
		return base
	}
	return name
}

// programBuiltins are the shell builtins that systems also install as programs (/bin/true,
// /usr/bin/printf, ...), so that a script may run them by path.
var programBuiltins = map[string]bool{"true": true, "false": true, "echo": true, "printf": true,
	"test": true, "[": true, "kill": true, "pwd": true}

// nestedExit turns a child shell's end into its exit status: a child that killed itself
// reports 128+signo to its parent instead of ending it.
func nestedExit(code int, err error) (int, error) {
	var k killed
	if errors.As(err, &k) {
		return 128 + k.sig, nil
	}
	return code, err
}

func exportedOnly(env expand.Environ) expand.Environ {
	return shellEnv(coreutils.Environ(env))
}

// runUtility runs a utility of coreutils with the calling command's directory, variables, standard
// streams and descriptors (hc).
func (s *Sandbox) runUtility(ctx context.Context, cl *call, hc interp.HandlerContext, u coreutils.Func, args []string) int {
	fsys := stdioFS{FS: gatedFS{cl}, stdin: hc.Stdin, stdout: hc.Stdout, stderr: hc.Stderr, fd: hc.Fd}
	e := &coreutils.Env{Ctx: ctx, FS: fsys, Dir: hc.Dir, Stdin: hc.Stdin, Stdout: hc.Stdout, Stderr: hc.Stderr, Vars: hc.Env}
	e.Exec = func(e *coreutils.Env, args []string) int {
		if n := cl.commands.Add(1); n > int64(cl.sb.cfg.MaxCommands) {
			_ = cl.limit("commands", "more than %d commands", cl.sb.cfg.MaxCommands)
			return 1
		}
		hc := interp.HandlerContext{Env: e.Vars, Dir: e.Dir, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr}
		code, err := s.runCommand(e.Ctx, cl, hc, args)
		if code < 0 {
			return 128 - code
		}
		if err != nil {
			return 1
		}
		return code
	}
	code := u(e, args)
	if err := ctx.Err(); err != nil && code == 0 {
		code = 130
	}
	return code
}

// gatedFS is the tree as one call's utilities see it: every operation is refused once the call
// has ended, and a spent byte budget becomes the call's LimitExceeded.
type gatedFS struct{ cl *call }

func (g gatedFS) do(err *error, f func() error) {
	if !g.cl.enter() {
		*err = errCallOver
		return
	}
	func() {
		defer g.cl.leave() // released even when f panics and execHandler recovers
		*err = f()
	}()
	if errors.Is(*err, memfs.ErrNoSpace) {
		_ = g.cl.limit("tree_bytes", "the file tree would exceed %d bytes", g.cl.fs.MaxBytes())
	}
}

func (g gatedFS) OpenFile(name string, flag int, perm fs.FileMode) (f coreutils.File, err error) {
	g.do(&err, func() error {
		mf, e := g.cl.fs.OpenFile(name, flag, perm)
		if e == nil {
			f = &treeFile{File: mf, cl: g.cl}
		}
		return e
	})
	return f, err
}

func (g gatedFS) Stat(name string, follow bool) (info fs.FileInfo, err error) {
	g.do(&err, func() (e error) { info, e = g.cl.fs.Stat(name, follow); return })
	return info, err
}

func (g gatedFS) ReadDir(name string) (d []fs.DirEntry, err error) {
	g.do(&err, func() (e error) { d, e = g.cl.fs.ReadDir(name); return })
	return d, err
}

func (g gatedFS) Content(name string) (b []byte, err error) {
	g.do(&err, func() (e error) { b, e = g.cl.fs.Content(name); return })
	g.cl.read.Add(int64(len(b)))
	return b, err
}

func (g gatedFS) WriteFile(name string, data []byte, perm fs.FileMode) (err error) {
	g.do(&err, func() error { return g.cl.fs.WriteFile(name, data, perm) })
	if err == nil {
		g.cl.written.Add(int64(len(data)))
	}
	return err
}

func (g gatedFS) Mkdir(name string, perm fs.FileMode) (err error) {
	g.do(&err, func() error { return g.cl.fs.Mkdir(name, perm) })
	return err
}

func (g gatedFS) MkdirAll(name string, perm fs.FileMode) (err error) {
	g.do(&err, func() error { return g.cl.fs.MkdirAll(name, perm) })
	return err
}

func (g gatedFS) Remove(name string) (err error) {
	g.do(&err, func() error { return g.cl.fs.Remove(name) })
	return err
}

func (g gatedFS) RemoveAll(name string) (err error) {
	g.do(&err, func() error { return g.cl.fs.RemoveAll(name) })
	return err
}

func (g gatedFS) Rename(o, n string) (err error) {
	g.do(&err, func() error { return g.cl.fs.Rename(o, n) })
	return err
}

func (g gatedFS) Symlink(t, l string) (err error) {
	g.do(&err, func() error { return g.cl.fs.Symlink(t, l) })
	return err
}

func (g gatedFS) Readlink(name string) (t string, err error) {
	g.do(&err, func() (e error) { t, e = g.cl.fs.Readlink(name); return })
	return t, err
}

func (g gatedFS) Chtimes(name string, mtime time.Time) (err error) {
	g.do(&err, func() error { return g.cl.fs.Chtimes(name, mtime) })
	return err
}

func (g gatedFS) Chmod(name string, perm fs.FileMode) (err error) {
	g.do(&err, func() error { return g.cl.fs.Chmod(name, perm) })
	return err
}

func (g gatedFS) Walk(dir string) (out []memfs.Entry, err error) {
	g.do(&err, func() (e error) { out, e = g.cl.fs.Walk(dir); return })
	return out, err
}

func (g gatedFS) Resolve(name, jail string, follow bool) (p string, err error) {
	g.do(&err, func() (e error) { p, e = g.cl.fs.Resolve(name, jail, follow); return })
	return p, err
}

// Tree handlers: every path the interpreter opens, stats or lists goes to the call's tree.

func openHandler(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	cl := callOf(ctx)
	hc := interp.HandlerCtx(ctx)
	isSource := false
	if rest, ok := strings.CutPrefix(p, internalSrc); ok {
		p, isSource = rest, true
	}
	abs := absIn(hc.Dir, p)
	switch abs {
	case "/dev/stdin", "/dev/fd/0":
		if f, isFile := hc.Stdin.(*os.File); hc.Stdin == nil || isFile && f == nil {
			return pipeFrom(ctx, strings.NewReader(""))
		}
		return pipeFrom(ctx, hc.Stdin)
	case "/dev/stdout", "/dev/fd/1":
		return nopRWC{w: hc.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2":
		return nopRWC{w: hc.Stderr}, nil
	}
	if !cl.enter() {
		return nil, errCallOver
	}
	defer cl.leave()
	if isSource && flag == os.O_RDONLY {
		// A sourced script: instrument its loops like any other script.
		data, err := cl.fs.ReadFile(abs)
		if err != nil {
			return nil, shellPathError("open", p, err)
		}
		src, err := instrumentSource(string(data))
		if err != nil {
			src = string(data) // the interpreter reports the syntax error itself
		}
		return nopRWC{r: strings.NewReader(src)}, nil
	}
	f, err := cl.fs.OpenFile(abs, flag, perm)
	if err != nil {
		return nil, shellPathError("open", p, err)
	}
	if flag&os.O_CREATE != 0 && path.Dir(abs) == procSubstDir {
		cl.procSubstFile(abs)
	}
	if flag == os.O_RDONLY {
		// The interpreter turns any input redirection that is not an *os.File into a pipe fed by
		// a goroutine it never stops; feeding our own pipe, closed by the interpreter after the
		// command, ends the feeder however much of the file the command read.
		if st, err := f.Stat(); err == nil && !st.IsDir() {
			return pipeFrom(ctx, &treeFile{File: f, cl: cl})
		}
	}
	return &treeFile{File: f, cl: cl}, nil
}

// pipeFrom returns the read end of an OS pipe fed from src. The feeder ends when src ends, when
// the read end is closed, or when the call ends.
func pipeFrom(ctx context.Context, src io.Reader) (*os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = pw.Close() })
	go func() {
		defer stop()
		_, _ = io.Copy(pw, src)
		if c, ok := src.(io.Closer); ok {
			_ = c.Close()
		}
		_ = pw.Close()
	}()
	return pr, nil
}

// treeFile is an open tree file that refuses I/O once its call ended and turns a spent tree
// budget into the call's LimitExceeded.
type treeFile struct {
	*memfs.File
	cl *call
}

func (t *treeFile) Write(p []byte) (int, error) {
	if !t.cl.enter() {
		return 0, os.ErrClosed
	}
	defer t.cl.leave()
	n, err := t.File.Write(p)
	t.cl.written.Add(int64(n))
	if errors.Is(err, memfs.ErrNoSpace) {
		_ = t.cl.limit("tree_bytes", "the file tree would exceed %d bytes", t.cl.fs.MaxBytes())
	}
	return n, err
}

func (t *treeFile) Read(p []byte) (int, error) {
	if !t.cl.enter() {
		return 0, os.ErrClosed
	}
	defer t.cl.leave()
	n, err := t.File.Read(p)
	t.cl.read.Add(int64(n))
	return n, err
}

type nopRWC struct {
	r io.Reader
	w io.Writer
}

func (n nopRWC) Read(p []byte) (int, error) {
	if n.r == nil {
		return 0, syscall.EBADF
	}
	return n.r.Read(p)
}

func (n nopRWC) Write(p []byte) (int, error) {
	if n.w == nil {
		return 0, syscall.EBADF
	}
	return n.w.Write(p)
}

func (nopRWC) Close() error { return nil }

// shellPathError renders tree errors the way a shell prints them ("x: No such file or
// directory"); the interpreter prints *os.PathError values and sets status 1.
func shellPathError(op, p string, err error) error {
	return &os.PathError{Op: op, Path: p, Err: errors.New(coreutils.ErrText(err))}
}

func readDirHandler(ctx context.Context, p string) ([]fs.DirEntry, error) {
	cl := callOf(ctx)
	if !cl.enter() {
		return nil, errCallOver
	}
	defer cl.leave()
	return cl.fs.ReadDir(absIn(interp.HandlerCtx(ctx).Dir, p))
}

func statHandler(ctx context.Context, p string, follow bool) (fs.FileInfo, error) {
	cl := callOf(ctx)
	if !cl.enter() {
		return nil, errCallOver
	}
	defer cl.leave()
	return cl.fs.Stat(absIn(interp.HandlerCtx(ctx).Dir, p), follow)
}

// accessHandler checks permission bits as if the sandbox user owned every file.
func accessHandler(ctx context.Context, p string, mode interp.AccessMode) error {
	info, err := statHandler(ctx, p, true)
	if err != nil {
		return err
	}
	perm := info.Mode().Perm()
	if info.Mode()&fs.ModeDevice != 0 {
		perm |= 0o666
	}
	if (mode&interp.AccessRead != 0 && perm&0o400 == 0) ||
		(mode&interp.AccessWrite != 0 && perm&0o200 == 0) ||
		(mode&interp.AccessExec != 0 && perm&0o100 == 0) {
		return &os.PathError{Op: "access", Path: p, Err: fs.ErrPermission}
	}
	return nil
}

// Internal commands.

var signals = []string{"", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1",
	"SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU",
	"URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"}

// lastEndingSignal is the last signal of 1-15, which all end a process by default: the ones a
// background job can be sent.
const lastEndingSignal = 15

// killList is kill -l with arguments: each signal number (or exit status above 128) is printed
// as its name, each name as its number.
func killList(hc interp.HandlerContext, args []string) int {
	status := 0
	for _, a := range args {
		if n, err := strconv.Atoi(a); err == nil {
			if n > 128 {
				n -= 128
			}
			if n == 0 {
				fmt.Fprintln(hc.Stdout, "EXIT")
				continue
			}
			if n > 0 && n < len(signals) {
				fmt.Fprintln(hc.Stdout, signals[n])
				continue
			}
		} else if n, ok := signalNumber(a); ok {
			fmt.Fprintln(hc.Stdout, n)
			continue
		}
		fmt.Fprintf(hc.Stderr, "kill: %s: invalid signal specification\n", a)
		status = 1
	}
	return status
}

func signalNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < 65 {
		return n, true
	}
	s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
	for i, name := range signals {
		if name != "" && name == s {
			return i, true
		}
	}
	return 0, false
}

// isJobPid reports whether a is the pid of a background job or subshell: the interpreter numbers
// them $$+1, $$+2... ($! and $BASHPID).
func isJobPid(a string) bool {
	n, err := strconv.Atoi(a)
	return err == nil && n > os.Getpid()
}

// runKill models kill for what the interpreter can honour: the shell itself ($$, or 0 for its
// process group) can be signalled and ends with 128+signo; kill -0 $$ succeeds; kill -l lists
// signals. A background job (%N or its $!) is a goroutine: it can be sent a signal whose default
// action ends a process, and ends with 128+signo at its next command (interp's SignalJob), as
// if it had no trap; other signals (STOP, CONT, CHLD...) are refused with an error naming them.
func runKill(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int {
	args = args[1:]
	sig := 15
	if len(args) > 1 && (args[0] == "-l" || args[0] == "-L") {
		return killList(hc, args[1:])
	}
	if len(args) > 0 && (args[0] == "-l" || args[0] == "-L") {
		for i, n := range signals[1 : lastEndingSignal+1] {
			fmt.Fprintf(hc.Stdout, "%2d) SIG%s\n", i+1, n)
		}
		return 0
	}
	if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "--" {
		spec := args[0][1:]
		args = args[1:]
		if spec == "s" || spec == "n" {
			if len(args) == 0 {
				fmt.Fprintln(hc.Stderr, "kill: option requires an argument")
				return 2
			}
			spec, args = args[0], args[1:]
		}
		n, ok := signalNumber(spec)
		if !ok {
			fmt.Fprintf(hc.Stderr, "kill: %s: invalid signal specification\n", spec)
			return 1
		}
		sig = n
	} else if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(hc.Stderr, "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid ...")
		return 2
	}
	self := strconv.Itoa(os.Getpid())
	status := 0
	for _, a := range args {
		switch {
		case a == self || a == "0":
			if sig == 0 {
				continue
			}
			return -sig
		case strings.HasPrefix(a, "%") || isJobPid(a):
			if sig > lastEndingSignal { // 0 only checks
				name := strconv.Itoa(sig)
				if sig < len(signals) {
					name = "SIG" + signals[sig]
				}
				fmt.Fprintf(hc.Stderr, "kill: %s: background jobs can only be sent signals that end them (not %s) in the memory sandbox\n", a, name)
				status = 1
			} else if hc.SignalJob(a, sig) != 0 {
				status = 1
			}
		default:
			fmt.Fprintf(hc.Stderr, "kill: (%s) - No such process\n", a)
			status = 1
		}
	}
	return status
}

var keywords = map[string]bool{}

func init() {
	for _, k := range []string{"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while",
		"until", "do", "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc"} {
		keywords[k] = true
	}
}

// lookupKind says what a name runs as, in bash's order: keyword, function, builtin, file.
func lookupKind(cl *call, hc interp.HandlerContext, name string) (kind, where string) {
	switch {
	case keywords[name]:
		return "keyword", ""
	case hc.IsFunction(name):
		return "function", ""
	}
	name = binName(name)
	switch {
	case interp.IsBuiltin(name):
		return "builtin", ""
	case isShell(name):
		return "file", "/bin/" + name
	}
	if _, ok := coreutils.Lookup(name); ok {
		return "file", "/usr/bin/" + name
	}
	if !strings.Contains(name, "/") {
		if p := cl.sb.lookPath(hc.Env.Get("PATH").String(), name); p != "" {
			return "file", p
		}
	}
	if strings.Contains(name, "/") {
		if p, why := cl.sb.executable(hc.Dir, name); why == "" {
			return "file", p
		}
	}
	return "", ""
}

func runType(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int {
	mode := ""
	names := args[1:]
	for len(names) > 0 && strings.HasPrefix(names[0], "-") {
		mode = names[0]
		names = names[1:]
	}
	status := 0
	for _, n := range names {
		kind, where := lookupKind(cl, hc, n)
		switch {
		case kind == "":
			if mode != "-t" && mode != "-p" && mode != "-P" {
				fmt.Fprintf(hc.Stderr, "sh: type: %s: not found\n", n)
			}
			status = 1
		case mode == "-t":
			fmt.Fprintln(hc.Stdout, kind)
		case mode == "-p" || mode == "-P":
			if where != "" {
				fmt.Fprintln(hc.Stdout, where)
			}
		case kind == "keyword":
			fmt.Fprintf(hc.Stdout, "%s is a shell keyword\n", n)
		case kind == "builtin":
			fmt.Fprintf(hc.Stdout, "%s is a shell builtin\n", n)
		case kind == "function":
			fmt.Fprintf(hc.Stdout, "%s is a function\n", n)
		default:
			fmt.Fprintf(hc.Stdout, "%s is %s\n", n, where)
		}
	}
	return status
}

func runCommandV(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int {
	verbose := args[1] == "-V"
	status := 0
	for _, n := range args[2:] {
		kind, where := lookupKind(cl, hc, n)
		switch {
		case kind == "":
			if verbose {
				fmt.Fprintf(hc.Stderr, "sh: command: %s: not found\n", n)
			}
			status = 1
		case verbose && kind == "file":
			fmt.Fprintf(hc.Stdout, "%s is %s\n", n, where)
		case verbose && kind == "function":
			fmt.Fprintf(hc.Stdout, "%s is a function\n", n)
		case verbose:
			fmt.Fprintf(hc.Stdout, "%s is a shell %s\n", n, kind)
		case kind == "file":
			fmt.Fprintln(hc.Stdout, where)
		default:
			fmt.Fprintln(hc.Stdout, n)
		}
	}
	return status
}

func runWhich(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int {
	status := 0
	for _, n := range args[1:] {
		if strings.HasPrefix(n, "-") {
			continue
		}
		kind, where := lookupKind(cl, hc, n)
		if kind == "file" {
			fmt.Fprintln(hc.Stdout, where)
		} else {
			status = 1
		}
	}
	return status
}

// runPwd is pwd with flags: -P resolves symlinks in the tree.
func runPwd(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int {
	physical := false
	for _, a := range args[1:] {
		switch a {
		case "-P":
			physical = true
		case "-L":
			physical = false
		default:
			fmt.Fprintf(hc.Stderr, "pwd: %s: invalid option\n", a)
			return 2
		}
	}
	dir := hc.Dir
	if physical {
		if r, err := cl.fs.Resolve(dir, "/", true); err == nil {
			dir = r
		}
	}
	fmt.Fprintln(hc.Stdout, dir)
	return 0
}

// runNoop answers the process-attribute builtins the interpreter lacks: umask (reports 0022 and
// accepts a new value, which files created here ignore) and ulimit (everything unlimited; the
// adapter's own limits apply).
func runNoop(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int {
	name, rest := args[1], args[2:]
	switch name {
	case "umask":
		if len(rest) == 0 {
			fmt.Fprintln(hc.Stdout, "0022")
		} else if rest[0] == "-S" {
			fmt.Fprintln(hc.Stdout, "u=rwx,g=rx,o=rx")
		}
	case "ulimit":
		set := false
		for _, a := range rest {
			if !strings.HasPrefix(a, "-") {
				set = true
			}
		}
		if !set {
			fmt.Fprintln(hc.Stdout, "unlimited")
		}
	}
	return 0
}

func runUnsupported(ctx context.Context, cl *call, hc interp.HandlerContext, args []string) int {
	msg := strings.Join(args[1:], " ")
	if !strings.Contains(msg, "memory sandbox") {
		msg += " in the memory sandbox"
	}
	fmt.Fprintf(hc.Stderr, "sh: %s\n", msg)
	return 2
}

// Script parsing, cached: parsing costs more than running a short script.

var parseCache struct {
	sync.RWMutex
	m map[string]*syntax.File
}

const parseCacheSize = 512

func parseScript(src string) (*syntax.File, error) {
	parseCache.RLock()
	f := parseCache.m[src]
	parseCache.RUnlock()
	if f != nil {
		return f, nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, err
	}
	if _, err := instrument(f); err != nil {
		return nil, err
	}
	if len(src) <= 64<<10 {
		parseCache.Lock()
		if parseCache.m == nil || len(parseCache.m) >= parseCacheSize {
			parseCache.m = make(map[string]*syntax.File, parseCacheSize)
		}
		parseCache.m[src] = f
		parseCache.Unlock()
	}
	return f, nil
}

var errUnsupported = errors.New("not supported in the memory sandbox")

// evalRecovered is the source eval runs for a string with a syntax error. Like bash's eval, which
// runs its string line by line as a script: an error inside $(( )), (( )) or ${ } fails its line
// with status 1 and the other lines run; any other error ends eval with status 2 after the
// lines before it ran. ok is false when no line comes before such an error: the interpreter's
// eval reports it itself (status 2).
func evalRecovered(src string, err error) (string, bool) {
	message := func(err error) string {
		if pos, ok := errorPos(err); ok {
			var pe syntax.ParseError
			if errors.As(err, &pe) {
				return fmt.Sprintf("eval: line %d: syntax error: %s", pos.Line(), pe.Text)
			}
		}
		return "eval: " + err.Error()
	}
	f := recoverParse(src, err, message, "(builtin exit 2)")
	if f == nil {
		return "", false
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, f); err != nil {
		return "", false
	}
	return b.String(), true
}

// instrumentSource parses, instruments and prints back shell source that the interpreter will
// parse again itself (eval, source, trap).
func instrumentSource(src string) (string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return "", err
	}
	loops, err := instrument(f)
	if err != nil {
		return "", err
	}
	if !loops {
		return src, nil // unchanged, as trap -p shows it
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, f); err != nil {
		return "", err
	}
	return b.String(), nil
}

// instrument refuses what would reach the host (coproc uses host pipes outside the handlers;
// -O/-G tests read the host's user database) and puts a loop counter at the head of every loop,
// so that loops without commands still meet MaxLoopIterations.
func instrument(f *syntax.File) (loops bool, err error) {
	var bad error
	tick := func() *syntax.Stmt {
		return &syntax.Stmt{Cmd: &syntax.CallExpr{Args: []*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{Value: loopTick}}}}}}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Coprocess {
				bad = fmt.Errorf("coproc is %w", errUnsupported)
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsUsrOwn || n.Op == syntax.TsGrpOwn {
				bad = fmt.Errorf("-O and -G tests are %w", errUnsupported)
			}
		case *syntax.WhileClause:
			n.Cond = append([]*syntax.Stmt{tick()}, n.Cond...)
			loops = true
		case *syntax.ForClause:
			n.Do = append([]*syntax.Stmt{tick()}, n.Do...)
			loops = true
		}
		return bad == nil
	})
	return loops, bad
}
