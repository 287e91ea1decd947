package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory/coreutils"
	"github.com/sandboxer/sandboxer/adapter/memory/memfs"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/interp"
	"mvdan.cc/sh/v3/syntax"
)

// call is the state of one ExecuteCommand, reached by every handler through the context.
type call struct {
	sb       *Sandbox
	fs       *memfs.FS
	cancel   context.CancelFunc
	commands atomic.Int64
	loops    atomic.Int64
	// read and written count the bytes the call's commands read from and wrote to tree files
	// (its receipt's disk bytes).
	read, written atomic.Int64

	mu   sync.RWMutex // held for reading by tree operations; finish takes it to shut them out
	done bool

	stopped atomic.Bool // the sandbox was stopped while this call ran

	failOnce sync.Once
	fatalErr atomic.Pointer[errs.Error] // a spent limit (errs.LimitExceeded) or a panic (errs.Internal)

	psubMu    sync.Mutex
	psubFiles []string // files of process substitutions, removed when the call ends
}

// procSubstDir holds the files of process substitutions (interp.ProcSubstDir): <(cmd) and >(cmd)
// are regular files of the tree, never host FIFOs.
const procSubstDir = "/dev/.psub"

// procSubstFile records a file that a process substitution created.
func (c *call) procSubstFile(p string) {
	c.psubMu.Lock()
	c.psubFiles = append(c.psubFiles, p)
	c.psubMu.Unlock()
}

// removeProcSubstFiles removes the files of the call's process substitutions.
func (c *call) removeProcSubstFiles() {
	c.psubMu.Lock()
	files := c.psubFiles
	c.psubFiles = nil
	c.psubMu.Unlock()
	for _, p := range files {
		_ = c.fs.Remove(p)
	}
}

// fatal returns the spent limit that ended the call, or nil.
func (c *call) fatal() error {
	if e := c.fatalErr.Load(); e != nil {
		return e
	}
	return nil
}

type callKey struct{}

func callOf(ctx context.Context) *call { return ctx.Value(callKey{}).(*call) }

// limit records a spent limit and ends the call.
func (c *call) limit(what string, format string, args ...any) error {
	e := errs.New(errs.LimitExceeded, "exec", "", format, args...)
	e.Details = map[string]any{"limit": what}
	return c.abort(e)
}

// panicked records a recovered panic and ends the call with errs.Internal.
func (c *call) panicked(p any) error {
	return c.panickedWith(&PanicError{Value: p, Stack: debug.Stack()})
}

func (c *call) panickedWith(pe *PanicError) error {
	return c.abort(&errs.Error{Code: errs.Internal, Op: "exec", Msg: "the shell interpreter failed", Err: pe})
}

// abort records the first error that ends the call and cancels it; it returns that first error.
func (c *call) abort(e *errs.Error) error {
	c.failOnce.Do(func() {
		c.fatalErr.Store(e)
		c.cancel()
	})
	return c.fatal()
}

// enter reports whether the call is still running; tree access after the call returned (a
// background job left behind) is refused. The caller must call leave when enter returns true.
func (c *call) enter() bool {
	c.mu.RLock()
	if c.done {
		c.mu.RUnlock()
		return false
	}
	return true
}

func (c *call) leave() { c.mu.RUnlock() }

// stop ends the call because its sandbox stopped.
func (c *call) stop() {
	c.stopped.Store(true)
	c.cancel()
}

func (c *call) finish() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
}

var errCallOver = &os.PathError{Op: "open", Path: "", Err: errors.New("the command has ended")}

// stream is one captured output stream: a capped buffer plus the live copy, safe for concurrent
// writers (background jobs), closed when the call ends.
type stream struct {
	mu     sync.Mutex
	buf    *adapter.CappedBuffer
	live   io.Writer
	closed bool
}

func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, os.ErrClosed
	}
	s.buf.Write(p)
	if s.live != nil {
		_, _ = s.live.Write(p)
	}
	return len(p), nil
}

func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// killed is how kill ends the shell that signalled itself.
type killed struct{ sig int }

func (k killed) Error() string { return fmt.Sprintf("killed by signal %d", k.sig) }

// notFound is a direct argv whose program does not exist.
type notFound struct{ name, why string }

func (n notFound) Error() string { return n.name + ": " + n.why }

// ExecuteCommand interprets cmd.Args: "sh -c SCRIPT [NAME ARGS...]" (also bash, dash, with
// bundled flags such as -ec or -euo pipefail) runs the script; any other argv runs as one simple
// command (a shell builtin, a built-in utility, or a script file in the tree). Errors, beyond
// adapter.Sandbox's: errs.LimitExceeded when a Config limit was spent (the Result holds the
// output so far); errs.ProcessFailed when Args[0] is neither a builtin, a utility nor an
// executable file in the tree.
func (s *Sandbox) ExecuteCommand(ctx context.Context, c adapter.Command) (adapter.Result, error) {
	return s.execute(ctx, c, false)
}

// prepare checks a command before it runs and returns its working directory and environment.
func (s *Sandbox) prepare(op string, c adapter.Command) (string, expand.Environ, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return "", nil, errs.New(errs.InvalidInput, op, "", "empty argv")
	}
	if c.MaxOutputBytes < 0 || c.Timeout < 0 {
		return "", nil, errs.New(errs.InvalidInput, op, "", "negative MaxOutputBytes or Timeout")
	}
	if err := s.checkOpen(op); err != nil {
		return "", nil, err
	}
	dir, err := s.workDir(c.Dir)
	if err != nil {
		return "", nil, err
	}
	env := s.envList
	if len(c.Env) > 0 {
		for _, kv := range c.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return "", nil, errs.New(errs.InvalidInput, op, "", "env entry %q is not KEY=VALUE", kv)
			}
		}
		env = shellEnv(append(append([]string(nil), s.baseEnv...), c.Env...))
	}
	return dir, env, nil
}

// execute is ExecuteCommand; a background command (Starter) has no time limit but its own
// Command.Timeout.
func (s *Sandbox) execute(ctx context.Context, c adapter.Command, background bool) (adapter.Result, error) {
	start := time.Now()
	dir, env, err := s.prepare("exec", c)
	if err != nil {
		return adapter.Result{}, err
	}
	limit := c.MaxOutputBytes
	if limit == 0 {
		limit = s.cfg.MaxOutputBytes
	}
	stdout := &stream{buf: adapter.NewCappedBuffer(limit), live: c.Stdout}
	stderr := &stream{buf: adapter.NewCappedBuffer(limit), live: c.Stderr}

	timeout := c.Timeout
	if _, ok := ctx.Deadline(); !ok && timeout == 0 && !background {
		timeout = s.cfg.Timeout
	}
	runCtx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, timeout, context.DeadlineExceeded)
	}
	cl := &call{sb: s, fs: s.fs, cancel: cancel}
	runCtx = context.WithValue(runCtx, callKey{}, cl)
	if !s.track(cl) {
		cancel()
		return adapter.Result{}, errs.New(errs.SandboxUnavailable, "exec", "", "sandbox %s is stopped", s.id)
	}
	defer s.untrack(cl)

	var stdin *os.File
	var stdinDone chan struct{}
	if c.Stdin != nil {
		pr, pw, err := os.Pipe()
		if err != nil {
			cancel()
			return adapter.Result{}, errs.Wrap(errs.Internal, "exec", "", err)
		}
		stdin, stdinDone = pr, make(chan struct{})
		go func() {
			defer close(stdinDone)
			_, _ = io.Copy(pw, c.Stdin)
			pw.Close()
		}()
		stop := context.AfterFunc(runCtx, func() { _ = pr.SetReadDeadline(time.Now()) })
		defer stop()
	}

	code, runErr := s.runGuarded(runCtx, cl, c.Args, dir, env, stdin, stdout, stderr)
	ended := runCtx.Err() // before cancel below: set when the time ran out, ctx ended or a limit hit

	cancel() // background jobs see the end first, then the gate closes behind them
	cl.finish()
	cl.removeProcSubstFiles()
	stdout.close()
	stderr.close()
	if stdin != nil {
		stdin.Close() // a copier blocked on a full pipe gets EPIPE
		// A copier blocked reading Command.Stdin itself cannot be interrupted: give it a moment,
		// then leave it to finish when the caller's reader returns.
		select {
		case <-stdinDone:
		case <-time.After(100 * time.Millisecond):
		}
	}

	var nf notFound
	if errors.As(runErr, &nf) {
		return adapter.Result{}, errs.New(errs.ProcessFailed, "exec", nf.name, "%s", nf.why)
	}
	res := adapter.Result{ExitCode: code, Duration: max(time.Since(start), time.Nanosecond), Isolation: isolation()}
	adapter.Capture(&res, stdout.buf, stderr.buf)
	res.Receipt.Processes = adapter.Int64(cl.commands.Load())
	res.Receipt.DiskReadBytes = adapter.Int64(cl.read.Load())
	res.Receipt.DiskWriteBytes = adapter.Int64(cl.written.Load())
	var k killed
	switch {
	case cl.fatal() != nil:
		return res, withOutput(cl.fatal(), res)
	case cl.stopped.Load():
		return res, withOutput(errs.New(errs.SandboxUnavailable, "exec", "", "sandbox %s was stopped while the command ran", s.id), res)
	case errors.As(runErr, &k):
		res.ExitCode = 128 + k.sig
		return res, nil
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return res, ctx.Err()
	case ended != nil:
		if res.ExitCode == 0 {
			res.ExitCode = 128 + 9
		}
		e := errs.New(errs.ProcessTimeout, "exec", "", "command outlived the context's deadline")
		if timeout > 0 {
			e = errs.New(errs.ProcessTimeout, "exec", "", "command outlived its timeout of %s", timeout)
		}
		return res, withOutput(e, res)
	case runErr != nil:
		// The interpreter stopped on an error of its own: report it like a shell would.
		msg := "sh: " + runErr.Error() + "\n"
		res.Stderr = append(res.Stderr, msg...)
		if c.Stderr != nil {
			_, _ = io.WriteString(c.Stderr, msg)
		}
		if res.ExitCode == 0 {
			res.ExitCode = 1
		}
	}
	return res, nil
}

// PanicError is a panic of the shell interpreter or of a utility, recovered and returned as the
// cause of an errs.Internal error instead of ending the process.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// runGuarded is runTop with a panic on the call's goroutine turned into the call's errs.Internal.
// Panics on the interpreter's other goroutines (pipeline elements, background jobs) are
// recovered where they run: in execHandler for the utilities, in the interpreter itself for its
// own code (third_party/mvdansh, interp.PanicError), which runNode turns into the same error.
func (s *Sandbox) runGuarded(ctx context.Context, cl *call, args []string, dir string, env expand.Environ, stdin *os.File, stdout, stderr io.Writer) (code int, err error) {
	defer func() {
		if p := recover(); p != nil {
			code, err = 1, cl.panicked(p)
		}
	}()
	return s.runTop(ctx, cl, args, dir, env, stdin, stdout, stderr)
}

func withOutput(err error, res adapter.Result) error {
	var e *errs.Error
	if errors.As(err, &e) {
		c := *e
		c.Details = map[string]any{"stdout": string(res.Stdout), "stderr": string(res.Stderr), "exitCode": res.ExitCode}
		for k, v := range e.Details {
			c.Details[k] = v
		}
		return &c
	}
	return err
}

// workDir resolves Command.Dir inside the workspace.
func (s *Sandbox) workDir(d string) (string, error) {
	if d == "" {
		return Workspace, nil
	}
	a, err := s.abs("exec", d)
	if err != nil {
		return "", err
	}
	info, resolved, err := s.fs.StatJailed(a, Workspace, true)
	if err != nil {
		return "", fsErr("exec", d, err)
	}
	if !info.IsDir() {
		return "", errs.New(errs.InvalidInput, "exec", d, "not a directory")
	}
	return resolved, nil
}

// shells are the names run as a shell invocation.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "ksh": true, "zsh": false}

func isShell(name string) bool { return shells[name] }

// runTop runs the top-level argv. The error is notFound, killed, or whatever ended the runner.
func (s *Sandbox) runTop(ctx context.Context, cl *call, args []string, dir string, env expand.Environ, stdin *os.File, stdout, stderr io.Writer) (int, error) {
	name := binName(args[0])
	if isShell(name) && !strings.Contains(name, "/") {
		return s.runShell(ctx, cl, args, dir, env, stdin, stdout, stderr)
	}
	if err := s.findProgram(name, dir, env); err != nil {
		return 127, err
	}
	return s.runNode(ctx, cl, callExpr(args), false, nil, dir, env, stdin, stdout, stderr)
}

// findProgram returns notFound when the top-level program name is neither a shell, a builtin,
// a utility nor an executable file of the tree.
func (s *Sandbox) findProgram(name, dir string, env expand.Environ) error {
	if isShell(name) && !strings.Contains(name, "/") {
		return nil
	}
	if _, ok := coreutils.Lookup(name); !ok && !interp.IsBuiltin(name) && internal[name] == nil {
		if !strings.Contains(name, "/") {
			if s.lookPath(env.Get("PATH").String(), name) == "" {
				return notFound{name, "executable file not found in $PATH"}
			}
		} else if _, why := s.executable(dir, name); why != "" {
			return notFound{name, why}
		}
	}
	return nil
}

// executable finds an executable file of the tree, or says why not.
func (s *Sandbox) executable(dir, name string) (string, string) {
	p := name
	if !strings.HasPrefix(p, "/") {
		p = path.Join(dir, p)
	}
	info, err := s.fs.Stat(p, true)
	switch {
	case err != nil:
		return "", "No such file or directory"
	case info.IsDir():
		return "", "Is a directory"
	case info.Mode().Perm()&0o111 == 0:
		return "", "Permission denied"
	}
	return p, ""
}

func callExpr(args []string) *syntax.CallExpr {
	words := make([]*syntax.Word, len(args))
	for i, a := range args {
		words[i] = &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: a}}}
	}
	return &syntax.CallExpr{Args: words}
}

// shellInvocation is a parsed "sh [flags] [-c script | file] args..." argv.
type shellInvocation struct {
	opts   []string // for interp.Params: "-e", "-o", "pipefail", ...
	script string   // the script text
	name   string   // $0
	params []string
	file   string // script file, when not -c
	stdin  bool   // script from stdin
}

func parseShellArgs(args []string) (shellInvocation, error) {
	inv := shellInvocation{name: path.Base(args[0])}
	cmdMode := false
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" {
			i++
			break
		}
		if strings.HasPrefix(a, "--") {
			switch a {
			case "--login", "--norc", "--noprofile", "--posix", "--noediting":
				continue
			}
			return inv, fmt.Errorf("%s: invalid option", a)
		}
		if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			break
		}
		for _, ch := range a[1:] {
			switch ch {
			case 'c':
				cmdMode = true
			case 'l', 'i', 'p':
			case 's':
				inv.stdin = true
			case 'o':
				if i+1 >= len(args) {
					return inv, fmt.Errorf("-o: option requires an argument")
				}
				i++
				inv.opts = append(inv.opts, string(a[0])+"o", args[i])
			default:
				inv.opts = append(inv.opts, string(a[0])+string(ch))
			}
		}
	}
	rest := args[i:]
	switch {
	case cmdMode:
		if len(rest) == 0 {
			return inv, fmt.Errorf("-c: option requires an argument")
		}
		inv.script = rest[0]
		if len(rest) > 1 {
			inv.name = rest[1]
			inv.params = rest[2:]
		}
	case len(rest) > 0 && !inv.stdin:
		inv.file = rest[0]
		inv.name = rest[0]
		inv.params = rest[1:]
	default:
		inv.stdin = true
		inv.params = rest
	}
	return inv, nil
}

// runShell runs a shell invocation argv in a fresh shell (its own variables, like a child
// process).
func (s *Sandbox) runShell(ctx context.Context, cl *call, args []string, dir string, env expand.Environ, stdin *os.File, stdout, stderr io.Writer) (int, error) {
	shName := path.Base(args[0])
	inv, err := parseShellArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", shName, err)
		return 2, nil
	}
	script := inv.script
	switch {
	case inv.file != "":
		p := inv.file
		if !strings.HasPrefix(p, "/") {
			p = path.Join(dir, p)
		}
		if !cl.enter() {
			return 1, nil
		}
		data, err := s.fs.ReadFile(p)
		cl.leave()
		if err != nil {
			fmt.Fprintf(stderr, "%s: %s: %s\n", shName, inv.file, coreutils.ErrText(err))
			return 127, nil
		}
		script = string(data)
	case inv.stdin && inv.script == "":
		if stdin != nil {
			data, err := io.ReadAll(io.LimitReader(stdin, s.cfg.MaxStringBytes+1))
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(stderr, "%s: reading script: %v\n", shName, err)
				return 2, nil
			}
			if int64(len(data)) > s.cfg.MaxStringBytes {
				return 2, cl.limit("string_bytes", "script on stdin larger than %d bytes", s.cfg.MaxStringBytes)
			}
			script = string(data)
		}
		stdin = nil
	}
	file, err := parseScript(script)
	if err != nil {
		message := func(err error) string { return fmt.Sprintf("%s: %s", shName, shellSyntaxError(inv, err)) }
		if file = recoverSyntaxError(script, err, message); file == nil {
			fmt.Fprintln(stderr, message(err))
			return 2, nil
		}
	}
	named := *file
	named.Name = inv.name
	return s.runNode(ctx, cl, &named, inv.script != "", append(inv.opts, append([]string{"--"}, inv.params...)...), dir, env, stdin, stdout, stderr)
}

// recoverSyntaxError is what bash runs of a script with a syntax error, or nil when the error
// ends the script before anything runs. Bash reads and runs a script one line at a time and
// parses arithmetic and parameter expansions only when it expands them, where mvdan.cc/sh's
// parser rejects the whole script:
//
//   - an error inside $(( )), (( )) or ${ } on a line of its own (not inside a compound command
//     spanning lines) fails that line with status 1, as bash's expansion error does, and the
//     script goes on;
//   - any other error runs the complete commands on the lines before it and then ends the shell
//     with status 2 (unless those commands exited first).
//
// message formats a parse error as the shell reports it.
func recoverSyntaxError(script string, err error, message func(error) string) *syntax.File {
	return recoverParse(script, err, message, "builtin exit 2")
}

// recoverParse is recoverSyntaxError, with end the command that follows the report of an error
// that is not recovered: the shell exits (a script), or its status is 2 (eval).
func recoverParse(script string, err error, message func(error) string, end string) *syntax.File {
	pos, ok := errorPos(err)
	if !ok {
		return nil
	}
	lines := strings.SplitAfter(script, "\n")
	n := int(pos.Line())
	if n < 1 || n > len(lines) {
		return nil
	}
	if !strings.HasSuffix(script, "\n") {
		return recoverParse(script+"\n", err, message, end)
	}
	if lineLocal(err, lines[n-1], int(pos.Col())) && strings.HasSuffix(lines[n-1], "\n") {
		// The commands of the line before the one in error still run: the line is cut after
		// the last ; before the error that leaves complete commands.
		line, before, after := lines[n-1], strings.Join(lines[:n-1], ""), strings.Join(lines[n:], "")
		fail, ok := failLine(message(err), "builtin false")
		for cut := min(int(pos.Col()), len(line)); ok && cut >= 0; cut-- {
			if cut > 0 && line[cut-1] != ';' {
				continue
			}
			if !parses(before + line[:cut]) {
				continue
			}
			fixed := before + line[:cut] + " " + fail + after
			f, err := parseScript(fixed)
			if err == nil {
				return f
			}
			if next, ok := errorPos(err); ok && next.Line() > pos.Line() {
				return recoverParse(fixed, err, message, end)
			}
			break
		}
	}
	tail, ok := failLine(message(err), end)
	if !ok {
		return nil
	}
	for n--; n > 0; n-- {
		prefix := strings.Join(lines[:n], "")
		if strings.HasSuffix(prefix, "\\\n") {
			continue // the line goes on
		}
		alone, err := parseScript(prefix)
		if err != nil {
			continue
		}
		// The tail is parsed with the lines so that its line numbers come after theirs; it
		// must add its own two statements, not end a quote or a here-document of theirs.
		if f, err := parseScript(prefix + tail); err == nil && len(f.Stmts) == len(alone.Stmts)+2 {
			return f
		}
		return nil
	}
	return nil
}

// errorPos is where the parser found err.
func errorPos(err error) (syntax.Pos, bool) {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return pe.Pos, true
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return le.Pos, true
	}
	return syntax.Pos{}, false
}

// failLine is one line of shell that reports msg on standard error and then runs then.
func failLine(msg, then string) (string, bool) {
	quoted, err := syntax.Quote(msg, syntax.LangBash)
	if err != nil || strings.Contains(quoted, "\n") {
		return "", false
	}
	return "builtin printf '%s\\n' " + quoted + " >&2; " + then + "\n", true
}

// parses says whether src is complete shell source.
func parses(src string) bool {
	_, err := parseScript(src)
	return err == nil
}

// lineLocal says whether bash would find err, at column col (1-based, in bytes) of line, only
// when it runs that line: inside an arithmetic or parameter expansion or arithmetic command, or
// a name a declaration builtin refuses. A line defining a function is not: its body runs later.
func lineLocal(err error, line string, col int) bool {
	if defunLine.MatchString(line) {
		return false
	}
	var pe syntax.ParseError
	if errors.As(err, &pe) && pe.Text == "invalid var name" {
		return true
	}
	if col < 1 || col > len(line) {
		col = len(line)
	}
	head := line[:col]
	return strings.Contains(head, "((") || strings.Contains(head, "${")
}

// defunLine matches a line that defines a function.
var defunLine = regexp.MustCompile(`(^|[;&|({]\s*)(function\s|[^\s;&|()=]+\s*\(\s*\))`)

func shellSyntaxError(inv shellInvocation, err error) string {
	where := "-c"
	if inv.file != "" {
		where = inv.file
	}
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: line %d: syntax error: %s", where, pe.Pos.Line(), pe.Text)
	}
	return where + ": " + err.Error()
}

// runNode runs a parsed script or one command on a pooled runner; cmdString says that the script
// is a command string (sh -c), which changes a few exit statuses (interp.CommandString).
func (s *Sandbox) runNode(ctx context.Context, cl *call, node syntax.Node, cmdString bool, params []string, dir string, env expand.Environ, stdin *os.File, stdout, stderr io.Writer) (code int, err error) {
	r := getRunner()
	_ = interp.Env(env)(r)
	_ = commandString[cmdString](r)
	r.Reset()
	_ = interp.StdIO(stdin, stdout, stderr)(r)
	if params != nil {
		if err := interp.Params(params...)(r); err != nil {
			fmt.Fprintf(stderr, "sh: %v\n", err)
			putRunner(r)
			return 2, nil
		}
	}
	if dir != Workspace {
		if err := r.Run(ctx, callExpr([]string{"cd", dir})); err != nil {
			putRunner(r)
			return 1, err
		}
	}
	err = r.Run(ctx, node)
	if err != nil {
		if ipe := (*interp.PanicError)(nil); errors.As(err, &ipe) {
			// A runner that panicked is not reused.
			return 1, cl.panickedWith(&PanicError{Value: ipe.Value, Stack: ipe.Stack})
		}
	}
	putRunner(r)
	if err == nil {
		return 0, nil
	}
	if es, ok := interp.IsExitStatus(err); ok {
		return int(es), nil
	}
	return 1, err
}

var runnerPool sync.Pool // of *interp.Runner

// commandString holds both interp.CommandString options, built once rather than per call.
var commandString = map[bool]interp.RunnerOption{true: interp.CommandString(true), false: interp.CommandString(false)}

func getRunner() *interp.Runner {
	if r, ok := runnerPool.Get().(*interp.Runner); ok {
		return r
	}
	return newRunner()
}

func putRunner(r *interp.Runner) { runnerPool.Put(r) }

// bootEnv is the environment runners are created with. Its TMPDIR fixes the interpreter's
// private temporary directory (used only for process substitution FIFOs, which ProcSubstDir
// replaces with files of the tree) to a path with a NUL byte: any host call on it fails before
// reaching the kernel.
var bootEnv = shellEnv([]string{"TMPDIR=/\x00sandboxer-no-host-tmp", "HOME=" + Workspace})

func newRunner() *interp.Runner {
	r, err := interp.New(
		interp.Env(bootEnv),
		func(r *interp.Runner) error { r.Dir = Workspace; return nil }, // interp.Dir would stat the host
		interp.StdIO(nil, io.Discard, io.Discard),
		interp.ProcSubstDir(procSubstDir),
		// The tree has no user database: ~root stays as written, as with an empty /etc/passwd,
		// rather than the interpreter reading the host's.
		interp.UserHomeDirs(func(string) (string, bool) { return "", false }),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return execHandler }),
		interp.CallHandler(callHandler),
		interp.OpenHandler(openHandler),
		interp.ReadDirHandler2(readDirHandler),
		interp.StatHandler(statHandler),
		interp.AccessHandler(accessHandler),
	)
	if err != nil {
		panic("memory: building the interpreter: " + err.Error())
	}
	r.Reset()
	return r
}
