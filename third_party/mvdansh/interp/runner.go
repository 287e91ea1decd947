// Copyright (c) 2017, Daniel Martí <mvdan@mvdan.cc>
// See LICENSE for licensing information

package interp

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"math"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/internal"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/pattern"
	"mvdan.cc/sh/v3/syntax"
)

const (
	// shellReplyPS3Var, or PS3, is a special variable in Bash used by the select command,
	// while the shell is awaiting for input. the default value is [shellDefaultPS3]
	shellReplyPS3Var = "PS3"
	// shellDefaultPS3, or #?, is PS3's default value
	shellDefaultPS3 = "#? "
	// shellReplyVar, or REPLY, is a special variable in Bash that is used to store the result of
	// the select command or of the read command, when no variable name is specified
	shellReplyVar = "REPLY"

	fifoNamePrefix = "sh-interp-"
)

func (r *Runner) fillExpandConfig(ctx context.Context) {
	r.ectx = ctx
	r.ecfg = &expand.Config{
		Env:         expandEnv{r},
		UserHomeDir: r.userHomeDir,
		CmdSubst: func(w io.Writer, cs *syntax.CmdSubst) error {
			switch len(cs.Stmts) {
			case 0: // nothing to do
				return nil
			case 1: // $(<file)
				word := catShortcutArg(cs.Stmts[0])
				if word == nil {
					break
				}
				path := r.literal(word)
				f, err := r.open(ctx, path, os.O_RDONLY, 0, true)
				if err != nil {
					return err
				}
				_, err = io.Copy(w, f)
				f.Close()
				return err
			}
			r2 := r.subshell(false)
			r2.stdout = w
			// Like Bash, a break or continue in a command substitution inside a loop
			// ends the substitution's commands, not the loop.
			r2.inLoop = r.inLoop
			if !r.opts[optInheritErrExit] {
				// Like Bash, command substitutions don't inherit errexit.
				r2.opts[optErrExit] = false
			}
			r2.stmts(ctx, cs.Stmts)
			r2.exitTrap(ctx)
			r2.exit.endSubshell(true) // subshells don't exit the parent shell
			r.lastExpandExit = r2.exit
			if r2.exit.fatalExit {
				return r2.exit.err // surface fatal errors immediately
			}
			return nil
		},
		ProcSubst: func(ps *syntax.ProcSubst) (string, error) {
			if ps.Op == syntax.CmdInTemp { // zsh's =(...)
				return "", fmt.Errorf("unsupported")
			}
			if runtime.GOOS == "windows" {
				return "", fmt.Errorf("TODO: support process substitution on Windows")
			}
			if len(ps.Stmts) == 0 { // nothing to do
				return os.DevNull, nil
			}
			if r.procSubstDir != "" {
				return r.procSubstFile(ctx, ps)
			}

			// We can't atomically create a random unused temporary FIFO.
			// Similar to [os.CreateTemp],
			// keep trying new random paths until one does not exist.
			// We use a uint64 because a uint32 easily runs into retries.
			var path string
			try := 0
			for {
				path = filepath.Join(r.tempDir, fifoNamePrefix+strconv.FormatUint(mathrand.Uint64(), 16))
				err := mkfifo(path, 0o666)
				if err == nil {
					break
				}
				if !os.IsExist(err) {
					return "", fmt.Errorf("cannot create fifo: %v", err)
				}
				if try++; try > 100 {
					return "", fmt.Errorf("giving up at creating fifo: %v", err)
				}
			}

			r2 := r.subshell(true)
			stdout := r.origStdout
			// TODO: note that `man bash` mentions that `wait` only waits for the last
			// process substitution as long as it is $!; the logic here would mean we wait for all of them.
			bg := r.newBgProc(r2, false)
			go func() {
				defer func() {
					*bg.exit = r2.exit
					close(bg.done)
				}()
				defer r2.recoverPanic()
				switch ps.Op {
				case syntax.CmdIn:
					f, err := os.OpenFile(path, os.O_WRONLY, 0)
					if err != nil {
						r.errf("cannot open fifo for stdout: %v\n", err)
						return
					}
					r2.stdout = f
					defer func() {
						if err := f.Close(); err != nil {
							r.errf("closing stdout fifo: %v\n", err)
						}
						os.Remove(path)
					}()
				case syntax.CmdOut:
					f, err := os.OpenFile(path, os.O_RDONLY, 0)
					if err != nil {
						r.errf("cannot open fifo for stdin: %v\n", err)
						return
					}
					r2.stdin = f
					r2.stdout = stdout

					defer func() {
						f.Close()
						os.Remove(path)
					}()
				default:
					// Should only happen if we forgot a case above.
					panic(fmt.Sprintf("unexpected process substitution operator: %q", ps.Op))
				}
				r2.stmts(ctx, ps.Stmts)
				r2.exit.endSubshell(false) // subshells don't exit the parent shell
			}()
			return path, nil
		},
	}
	r.updateExpandOpts()
}

// catShortcutArg checks if a statement is of the form "$(<file)". The redirect
// word is returned if there's a match, and nil otherwise.
func catShortcutArg(stmt *syntax.Stmt) *syntax.Word {
	if stmt.Cmd != nil || stmt.Negated || stmt.Background || stmt.Coprocess || stmt.Disown {
		return nil
	}
	if len(stmt.Redirs) != 1 {
		return nil
	}
	redir := stmt.Redirs[0]
	if redir.Op != syntax.RdrIn {
		return nil
	}
	return redir.Word
}

func (r *Runner) updateExpandOpts() {
	if r.opts[optNoGlob] {
		r.ecfg.ReadDir2 = nil
	} else {
		r.ecfg.ReadDir2 = func(s string) ([]fs.DirEntry, error) {
			return r.readDirHandler(r.handlerCtx(r.ectx, handlerKindReadDir, todoPos), s)
		}
	}
	r.ecfg.GlobStar = r.opts[optGlobStar]
	r.ecfg.DotGlob = r.opts[optDotGlob]
	r.ecfg.NoCaseGlob = r.opts[optNoCaseGlob]
	r.ecfg.NullGlob = r.opts[optNullGlob]
	r.ecfg.FailGlob = r.opts[optFailGlob]
	r.ecfg.NoUnset = r.opts[optNoUnset]
	r.ecfg.ExtGlob = r.opts[optExtGlob]
}

func (r *Runner) expandErr(err error) {
	if err == nil {
		return
	}
	errMsg := err.Error()
	fmt.Fprintln(r.stderr, errMsg)
	_, unsetParam := errors.AsType[expand.UnsetParameterError](err)
	_, arithm := errors.AsType[expand.ArithmError](err)
	_, paramArithm := errors.AsType[expand.ParamArithmError](err)
	switch {
	case paramArithm:
		// Like Bash, an arithmetic error in the index of a parameter
		// expansion exits the shell.
		r.exit.code = 1
		r.exit.exiting = true
	case unsetParam:
		// Like Bash, a non-interactive shell exits on an unset parameter,
		// with status 127 when it runs a command string.
		r.exit.code = 1
		if r.commandString {
			r.exit.code = 127
			r.exit.unbound = true
		}
		r.exit.exiting = true
	case errMsg == "invalid indirect expansion", strings.HasSuffix(errMsg, ": invalid variable name"),
		strings.HasSuffix(errMsg, ": cannot assign in this way"):
		// Like Bash, abandon the rest of the command line.
		r.exit.code = 1
		r.exit.aborting = true
	case arithm:
		// Like Bash, abandon the rest of the command line.
		r.exit.code = 1
		r.exit.aborting = true
	case errors.As(err, new(expand.NoMatchError)):
		// With failglob, the command at hand fails.
		r.exit.code = 1
		r.exit.cmdFailed = true
	case errors.Is(err, errReadOnly):
		// Like in bash, assigning to a read-only variable fails
		// the command at hand without exiting the shell.
		r.exit.code = 1
	}
}

// expandFailed reports whether the last expansion failed in a way which stops
// the command at hand, such as a division by zero in $((...)).
func (r *Runner) expandFailed() bool {
	return r.exit.exiting || r.exit.aborting || r.exit.cmdFailed
}

// arithm evaluates an arithmetic command or a let expression; unlike errors
// in $((...)), an error only fails the command at hand.
func (r *Runner) arithm(expr syntax.ArithmExpr) int {
	n, err := expand.Arithm(r.ecfg, expr)
	if _, ok := errors.AsType[expand.ArithmError](err); ok {
		r.errf("%v\n", err)
		r.exit.code = 1
		return 0
	}
	r.expandErr(err)
	return n
}

func (r *Runner) fields(words ...*syntax.Word) []string {
	strs, err := expand.Fields(r.ecfg, words...)
	r.expandErr(err)
	return strs
}

func (r *Runner) literal(word *syntax.Word) string {
	str, err := expand.Literal(r.ecfg, word)
	r.expandErr(err)
	return str
}

func (r *Runner) document(word *syntax.Word) string {
	str, err := expand.Document(r.ecfg, word)
	r.expandErr(err)
	return str
}

func (r *Runner) pattern(word *syntax.Word) string {
	str, err := expand.Pattern(r.ecfg, word)
	r.expandErr(err)
	return str
}

// expandEnviron exposes [Runner]'s variables to the expand package.
type expandEnv struct {
	r *Runner
}

var _ expand.WriteEnviron = expandEnv{}

func (e expandEnv) Get(name string) expand.Variable {
	return e.r.lookupVar(name)
}

func (e expandEnv) Set(name string, vr expand.Variable) error {
	return e.r.setVarErr(name, vr)
}

func (e expandEnv) Each(fn func(name string, vr expand.Variable) bool) {
	e.r.writeEnv.Each(fn)
}

var todoPos syntax.Pos // for handlerCtx callers where we don't yet have a position

func (r *Runner) handlerCtx(ctx context.Context, kind handlerKind, pos syntax.Pos) context.Context {
	hc := HandlerContext{
		runner:         r,
		kind:           kind,
		Env:            &overlayEnviron{parent: r.writeEnv},
		Dir:            r.Dir,
		Pos:            pos,
		Stdout:         r.stdout,
		Stderr:         r.stderr,
		LastExitStatus: int(r.lastExit.code),
	}
	if r.stdin != nil { // do not leave hc.Stdin as a typed nil
		hc.Stdin = r.stdin
	} else if r.stdinClosed {
		hc.Stdin = closedReader{}
	}
	return context.WithValue(ctx, handlerCtxKey{}, hc)
}

func (r *Runner) out(s string) {
	io.WriteString(r.stdout, s)
}

func (r *Runner) outf(format string, a ...any) {
	fmt.Fprintf(r.stdout, format, a...)
}

func (r *Runner) errf(format string, a ...any) {
	fmt.Fprintf(r.stderr, format, a...)
}

func (r *Runner) stop(ctx context.Context) bool {
	// Some traps trigger on exit, so we do want those to run.
	if !r.handlingTrap && (r.exit.returning || r.exit.exiting || r.exit.aborting) {
		return true
	}
	if r.breakEnclosing > 0 || r.contnEnclosing > 0 {
		// A break or continue skips the rest of the loop's body,
		// also inside the compound commands that hold it.
		return true
	}
	if err := ctx.Err(); err != nil {
		r.exit.fatal(err)
		return true
	}
	if r.opts[optNoExec] {
		return true
	}
	return false
}

func (r *Runner) stmt(ctx context.Context, st *syntax.Stmt) {
	if r.stop(ctx) {
		return
	}
	r.exit = exitStatus{}
	if st.Background || st.Disown {
		r2 := r.subshell(true)
		st2 := *st
		st2.Background = false
		st2.Disown = false
		bg := r.newBgProc(r2, true)
		bg.stmt = &st2
		jobCtx, cancel := context.WithCancelCause(ctx)
		bg.cancel = cancel
		go func() {
			defer func() {
				// A signalled job ends with 128 plus the signal number,
				// unless it panicked or the whole shell was cancelled.
				_, panicked := r2.exit.err.(*PanicError)
				if sig, ok := context.Cause(jobCtx).(jobSignal); ok && ctx.Err() == nil && !panicked {
					r2.exit = exitStatus{code: uint8(128 + sig)}
					bg.signal = sig
				}
				*bg.exit = r2.exit
				close(bg.done)
				cancel(nil)
			}()
			r2.Run(jobCtx, &st2)       // which recovers a panic
			r2.exit.endSubshell(false) // subshells don't exit the parent shell
		}()
	} else {
		r.stmtSync(ctx, st)
	}
	r.lastExit = r.exit
}

func (r *Runner) stmtSync(ctx context.Context, st *syntax.Stmt) {
	oldIn, oldOut, oldErr, oldFds, oldInClosed := r.stdin, r.stdout, r.stderr, r.fds, r.stdinClosed
	var closers []io.Closer
	if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(st.Redirs) > 0 && len(call.Args) == 0 {
		// Like Bash, the assignments of a command without a name happen before
		// its redirections, which then only create or open their files.
		r.cmd(ctx, st.Cmd)
		if !r.expandFailed() {
			assignExit := r.exit
			for _, rd := range st.Redirs {
				cls, err := r.redir(ctx, rd)
				if err != nil {
					r.errf("%v\n", err)
					assignExit.code = 1
					break
				}
				if cls != nil {
					cls.Close()
				}
			}
			r.exit = assignExit
		}
		r.stdin, r.stdout, r.stderr, r.fds, r.stdinClosed = oldIn, oldOut, oldErr, oldFds, oldInClosed
		r.stmtStatus(ctx, st)
		return
	}
	if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(st.Redirs) > 0 && len(call.Args) > 0 {
		// Like POSIX shells, expand the words of a simple command before
		// performing its redirections, so that the errors and the standard
		// error of expansions are not redirected.
		fields := r.callExprFields(call)
		if r.expandFailed() {
			return
		}
		r.callFields = &fields
	}
	for _, rd := range st.Redirs {
		cls, err := r.redir(ctx, rd)
		if err != nil {
			if !r.exit.fatalExit {
				// A fatal error from a handler is reported by [Runner.Run].
				r.errf("%v\n", err)
			}
			r.exit.code = 1
			break
		}
		if cls != nil {
			closers = append(closers, cls)
		}
	}
	if r.exit.ok() && st.Cmd != nil {
		r.cmd(ctx, st.Cmd)
	}
	r.stmtStatus(ctx, st)
	if len(r.procSubstOut) > 0 {
		r.runProcSubstOut(ctx)
	}
	if r.keepRedirs {
		// The exec builtin made this statement's redirections apply to the
		// shell itself, so don't undo them and keep their files open.
		r.keepRedirs = false
	} else if len(st.Redirs) > 0 {
		r.stdin, r.stdout, r.stderr, r.fds, r.stdinClosed = oldIn, oldOut, oldErr, oldFds, oldInClosed
		for _, cls := range closers {
			cls.Close()
		}
	}
	r.callFields = nil
}

// stmtStatus finishes the status of a statement which ran: negation, errexit and the ERR
// trap, and PIPESTATUS.
func (r *Runner) stmtStatus(ctx context.Context, st *syntax.Stmt) {
	if st.Negated {
		if r.exit.ok() {
			r.exit.code = 1
			r.exit.errState = errIgnored
		} else {
			r.exit.clear()
		}
	} else if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.AndStmt || b.Op == syntax.OrStmt) {
		// The status is that of the last command which ran, which was checked.
	} else if !r.exit.ok() && r.exit.errState == errUnchecked {
		if r.noErrExit {
			// Conditions, such as if <cond> or while <cond>.
			r.exit.errState = errIgnored
		} else {
			r.exit.errState = errHandled
			r.trapCallback(ctx, r.callbackErr, "error")
			// If the "errexit" option is set and a command failed, exit the shell.
			if r.opts[optErrExit] {
				r.exit.exiting = true
			}
		}
	}
	// PIPESTATUS is the status of each command of the last pipeline,
	// which may be a single command, but not a compound command.
	switch cm := st.Cmd.(type) {
	case *syntax.Block, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
	case *syntax.BinaryCmd:
		if cm.Op == syntax.AndStmt || cm.Op == syntax.OrStmt {
			break
		}
		if !r.pipeSet { // a pipeline which could not start
			r.pipeStatus = append(r.pipeStatus[:0], r.exit.code)
		}
	default:
		r.pipeStatus = append(r.pipeStatus[:0], r.exit.code)
	}
	r.pipeSet = false
}

func (r *Runner) cmd(ctx context.Context, cm syntax.Command) {
	if r.stop(ctx) {
		return
	}

	tracingEnabled := r.opts[optXTrace]
	trace := r.tracer()

	switch cm := cm.(type) {
	case *syntax.Block:
		r.stmts(ctx, cm.Stmts)
	case *syntax.Subshell:
		r2 := r.subshell(false)
		r2.stmts(ctx, cm.Stmts)
		r2.exitTrap(ctx)
		r2.exit.endSubshell(true) // subshells don't exit the parent shell
		r.exit = r2.exit
	case *syntax.CallExpr:
		var fields []string
		if r.callFields != nil {
			fields, r.callFields = *r.callFields, nil
		} else {
			fields = r.callExprFields(cm)
		}
		if r.expandFailed() {
			break
		}
		if len(fields) == 0 {
			for _, as := range cm.Assigns {
				name := as.Name.Value

				prev := r.lookupVar(name)
				// Here we have a naked "foo=bar", so if we inherited a local var from a parent
				// function we want to signal that we are modifying the parent var rather than
				// creating a new local var via "local foo=bar".
				// TODO: there is likely a better way to do this.
				prev.Local = false

				name, vr := r.assignVal(name, prev, as, "")
				if r.expandFailed() {
					break
				}
				r.setVarWithIndex(prev, name, as.Index, vr)
				if !r.exit.ok() {
					// Like Bash, a failed assignment, as to a read-only
					// variable, abandons the rest of the command line.
					r.exit.aborting = true
					break
				}

				if !tracingEnabled {
					continue
				}

				// Strangely enough, it seems like Bash prints original
				// source for arrays, but the expanded value otherwise.
				// Note that, unlike bash, we print neither the subscript
				// in `x[i]=y` nor just the appended value in `x+=y`.
				if as.Array != nil {
					trace.expr(as)
				} else if as.Value != nil {
					trace.stringf("%s=%s", name, quoteBash(vr.String()))
				}
				trace.newLineFlush()
			}
			// If interpreting the last expansion like $(foo) failed,
			// and the expansion and assignments otherwise succeeded,
			// we need to surface that last exit code.
			if r.exit.ok() {
				r.exit = r.lastExpandExit
			}
			break
		}

		type restoreVar struct {
			name string
			vr   expand.Variable
		}
		var restores []restoreVar

		for _, as := range cm.Assigns {
			name := as.Name.Value
			prev := r.lookupVar(name)
			// Resolve any nameref so we can restore the original final value later on.
			if n, v := prev.Resolve(r.writeEnv); n != "" {
				name, prev = n, v
			}

			name, vr := r.assignVal(name, prev, as, "")
			// Inline command vars are always exported.
			vr.Exported = true

			restores = append(restores, restoreVar{name, prev})

			r.setVar(name, vr)
		}

		trace.call(fields[0], fields[1:]...)
		trace.newLineFlush()

		r.call(ctx, cm.Args[0].Pos(), fields)
		for _, restore := range restores {
			r.setVar(restore.name, restore.vr)
		}
	case *syntax.BinaryCmd:
		switch cm.Op {
		case syntax.AndStmt, syntax.OrStmt:
			oldNoErrExit := r.noErrExit
			r.noErrExit = true
			r.stmt(ctx, cm.X)
			r.noErrExit = oldNoErrExit
			if r.exit.ok() == (cm.Op == syntax.AndStmt) {
				r.stmt(ctx, cm.Y)
			}
		case syntax.Pipe, syntax.PipeAll:
			r.pipeline(ctx, cm)
		}
	case *syntax.IfClause:
		oldNoErrExit := r.noErrExit
		r.noErrExit = true
		r.stmts(ctx, cm.Cond)
		r.noErrExit = oldNoErrExit

		if r.exit.ok() {
			r.stmts(ctx, cm.Then)
			break
		}
		r.exit.clear()
		if cm.Else != nil {
			r.cmd(ctx, cm.Else)
		}
	case *syntax.WhileClause:
		for !r.stop(ctx) {
			oldNoErrExit, oldInLoop := r.noErrExit, r.inLoop
			r.noErrExit, r.inLoop = true, true
			r.stmts(ctx, cm.Cond)
			r.noErrExit, r.inLoop = oldNoErrExit, oldInLoop
			// Like Bash, break and continue also work in the loop's condition.
			if done, broken := r.loopControl(!oldInLoop); done {
				if broken {
					break
				}
				continue
			}

			stop := r.exit.ok() == cm.Until
			r.exit.clear()
			if stop || r.loopStmtsBroken(ctx, cm.Do) {
				break
			}
		}
	case *syntax.ForClause:
		switch y := cm.Loop.(type) {
		case *syntax.WordIter:
			name := y.Name.Value
			items := r.Params // for i; do ...

			inToken := y.InPos.IsValid()
			if inToken {
				items = r.fields(y.Items...) // for i in ...; do ...
			}

			if cm.Select {
				ps3 := cmp.Or(r.envGet(shellReplyPS3Var), shellDefaultPS3)

				for menu := true; ; {
					if menu {
						// display menu
						for i, word := range items {
							r.errf("%d) %v\n", i+1, word)
						}
						menu = false
					}
					r.errf("%s", ps3)

					line, err := r.readLine(ctx, true)
					if err != nil {
						// Like Bash, the newline after the end of the input goes to stdout.
						r.out("\n")
						r.exit.code = 1
						break
					}
					if len(line) == 0 {
						menu = true // no reply; show the menu again
						continue
					}

					reply := string(line)
					r.setVarString(shellReplyVar, reply)

					if c, _ := strconv.Atoi(reply); c > 0 && c <= len(items) {
						r.setVarString(name, items[c-1])
					} else {
						r.setVarString(name, "")
					}

					// execute commands until break or return is encountered
					if r.loopStmtsBroken(ctx, cm.Do) {
						break
					}
				}
				break
			}

			for _, field := range items {
				r.setVarString(name, field)
				trace.stringf("for %s in", y.Name.Value)
				if inToken {
					for _, item := range y.Items {
						trace.string(" ")
						trace.expr(item)
					}
				} else {
					trace.string(` "$@"`)
				}
				trace.newLineFlush()
				if r.loopStmtsBroken(ctx, cm.Do) {
					break
				}
			}
		case *syntax.CStyleLoop:
			// arithm evaluates one of the loop's expressions; an error ends the loop.
			arithm := func(x syntax.ArithmExpr) (int, bool) {
				before := r.exit
				r.exit = exitStatus{}
				n := r.arithm(x)
				if !r.exit.ok() {
					return 0, false
				}
				r.exit = before
				return n, true
			}
			if y.Init != nil {
				if _, ok := arithm(y.Init); !ok {
					break
				}
			}
			for !r.stop(ctx) {
				// The status of the body's last command does not end the loop,
				// as in "for ((;;)); do ((i++)); ...; done" where ((i++)) fails once.
				if y.Cond != nil {
					if n, ok := arithm(y.Cond); !ok || n == 0 {
						break
					}
				}
				if r.loopStmtsBroken(ctx, cm.Do) {
					break
				}
				if y.Post != nil {
					if _, ok := arithm(y.Post); !ok {
						break
					}
				}
			}
		}
	case *syntax.FuncDecl:
		if cm.Name == nil { // e.g. zsh's anonymous or multi-name functions
			r.errf("unsupported\n")
			r.exit.code = 1
			break
		}
		r.setFunc(cm.Name.Value, cm.Body)
	case *syntax.ArithmCmd:
		r.exit.oneIf(r.arithm(cm.X) == 0)
	case *syntax.LetClause:
		if tracingEnabled {
			trace.string("let")
			for _, expr := range cm.Exprs {
				trace.stringf(" %s", r.letArgString(trace.printer, expr))
			}
			trace.newLineFlush()
		}
		var val int
		for _, expr := range cm.Exprs {
			val = r.arithm(expr)
		}
		r.exit.oneIf(val == 0)
	case *syntax.CaseClause:
		trace.string("case ")
		trace.expr(cm.Word)
		trace.string(" in")
		trace.newLineFlush()
		str := r.literal(cm.Word)
		runNext := false // whether the previous item ended with ";&"
		for _, ci := range cm.Items {
			if !runNext && !slices.ContainsFunc(ci.Patterns, func(word *syntax.Word) bool {
				return r.match(r.pattern(word), str)
			}) {
				continue
			}
			r.stmts(ctx, ci.Stmts)
			switch ci.Op {
			case syntax.Fallthrough: // ";&" runs the next item unconditionally
				runNext = true
			case syntax.Resume, syntax.ResumeKorn: // ";;&" and ";|" resume matching
				runNext = false
			default: // ";;" or the last item stop
				return
			}
		}
	case *syntax.TestClause:
		if r.bashTest(ctx, cm.X, false) == "" && r.exit.ok() {
			// to preserve exit status code 2 for regex errors, etc
			r.exit.code = 1
		}
	case *syntax.DeclClause:
		local, global := false, false
		var modes []string
		valType := ""
		declQuery := "" // "-f", "-F" or "-p" for query mode
		unexport := false
		switch cm.Variant.Value {
		case "declare":
			// When used in a function, "declare" acts as "local"
			// unless the "-g" option is used.
			local = r.inFunc
		case "local":
			if !r.inFunc {
				r.errf("local: can only be used in a function\n")
				r.exit.code = 1
				return
			}
			local = true
		case "export":
			modes = append(modes, "-x")
		case "readonly":
			modes = append(modes, "-r")
		case "nameref":
			valType = "-n"
		}
	assignLoop:
		for as := range r.flattenAssigns(cm.Args) {
			fp := flagParser{remaining: []string{as.Name.Value}}
			for fp.more() {
				switch flag := fp.flag(); flag {
				case "-n":
					if cm.Variant.Value == "export" {
						unexport = true // export -n
						break
					}
					valType = flag
				case "-x", "-r", "-i", "-l", "-u", "+x", "+i", "+l", "+u":
					modes = append(modes, flag)
				case "-a", "-A":
					valType = flag
				case "-g":
					global = true
				case "-f", "-F", "-p":
					declQuery = flag
				default:
					r.errf("declare: invalid option %q\n", flag)
					r.exit.code = 2
					return
				}
				continue assignLoop
			}
			name := as.Name.Value
			if !syntax.ValidName(name) {
				r.errf("declare: invalid name %q\n", name)
				r.exit.code = 1
				return
			}
			if declQuery == "-F" {
				// declare -F name: print the name of a function.
				if r.Funcs[name] != nil {
					r.outf("%s\n", name)
				} else {
					r.exit.code = 1
				}
				continue
			}
			if declQuery == "-f" && cm.Variant.Value == "export" {
				// export -f name: pass the function on to child shells in the
				// environment, as Bash does, in a variable named BASH_FUNC_name%%.
				body := r.Funcs[name]
				if body == nil {
					r.errf("export: %s: not a function\n", name)
					r.exit.code = 1
					continue
				}
				var buf bytes.Buffer
				syntax.NewPrinter().Print(&buf, body)
				if err := r.writeEnv.Set(funcVarPrefix+name+funcVarSuffix, expand.Variable{
					Set: true, Exported: true, Kind: expand.String, Str: "() " + buf.String(),
				}); err != nil {
					r.errf("export: %s: %v\n", name, err)
					r.exit.code = 1
				}
				continue
			}
			if declQuery == "-f" {
				// declare -f name: print function definition.
				// Bash silently returns exit 1 for missing functions.
				if body := r.Funcs[name]; body != nil {
					r.outf("%s\n", funcText(name, body))
				} else {
					r.exit.code = 1
				}
				continue
			}
			if declQuery == "-p" {
				// declare -p name: print variable with attributes.
				vr := r.lookupVar(name)
				if !vr.Declared() {
					r.errf("declare: %s: not found\n", name)
					r.exit.code = 1
					continue
				}
				flags := vr.Flags()
				if flags == "" {
					flags = "-"
				}
				switch {
				case !vr.IsSet():
					r.outf("declare -%s %s\n", flags, name)
				case vr.Kind == expand.Indexed:
					r.outf("declare -%s %s=(", flags, name)
					for i, v := range vr.List {
						if i > 0 {
							r.out(" ")
						}
						idx := i
						if vr.Indexes != nil {
							idx = vr.Indexes[i]
						}
						r.outf("[%d]=%s", idx, dblQuote(v))
					}
					r.out(")\n")
				case vr.Kind == expand.Associative:
					// Like Bash, with a space before the closing parenthesis.
					r.outf("declare -%s %s=(", flags, name)
					for _, k := range slices.Sorted(maps.Keys(vr.Map)) {
						r.outf("[%s]=%s ", assocKey(k), dblQuote(vr.Map[k]))
					}
					r.out(")\n")
				default:
					r.outf("declare -%s %s=%s\n", flags, name, dblQuote(vr.Str))
				}
				continue
			}
			vr := r.lookupVar(name)
			// Attributes such as -i apply to the value being assigned.
			for _, mode := range modes {
				switch on := mode[0] == '-'; mode[1] {
				case 'x':
					vr.Exported = on
				case 'r':
					vr.ReadOnly = on
				case 'i':
					vr.Integer = on
				case 'l':
					vr.Lower, vr.Upper = on, vr.Upper && !on
				case 'u':
					vr.Upper, vr.Lower = on, vr.Lower && !on
				}
			}
			if unexport {
				vr.Exported = false
			}
			switch {
			case as.Naked && local && !global && !r.localHere(name):
				// Like Bash, "local x" makes a new variable, unset until assigned.
				kind := expand.Unknown
				switch valType {
				case "-a":
					kind = expand.Indexed
				case "-A":
					kind = expand.Associative
				}
				vr = expand.Variable{Kind: kind, Exported: vr.Exported, ReadOnly: vr.ReadOnly,
					Integer: vr.Integer, Lower: vr.Lower, Upper: vr.Upper}
			case as.Naked:
				switch {
				case valType == "-A":
					vr.Kind = expand.Associative
				case valType == "-a" && !vr.IsSet():
					vr.Kind = expand.Indexed
				default:
					vr.Kind = expand.KeepValue
				}
			default:
				name, vr = r.assignVal(name, vr, as, valType)
			}
			if global {
				vr.Local = false
			} else if local {
				vr.Local = true
			}
			r.setVar(name, vr)
		}
	case *syntax.TimeClause:
		start := time.Now()
		if cm.Stmt != nil {
			r.stmt(ctx, cm.Stmt)
		}
		// Like Bash, the report goes to the shell's standard error.
		format := "%s\t%s\n"
		if cm.PosixFormat {
			format = "%s %s\n"
		} else {
			r.errf("\n")
		}
		real := time.Since(start)
		r.errf(format, "real", elapsedString(real, cm.PosixFormat))
		// TODO: can we do these?
		r.errf(format, "user", elapsedString(0, cm.PosixFormat))
		r.errf(format, "sys", elapsedString(0, cm.PosixFormat))
	default:
		// Should only happen if we forgot a case above.
		r.errf("unhandled command node: %T\n", cm)
		r.exit.code = 1
	}
}

// pipeline runs a pipeline like "a | b |& c". Like Bash, every command runs
// in a subshell, the last one too unless the lastpipe option is set, and
// PIPESTATUS records the status of each.
func (r *Runner) pipeline(ctx context.Context, cm *syntax.BinaryCmd) {
	// The parser nests "a | b | c" as "(a | b) | c": flatten it.
	var stmts []*syntax.Stmt
	var ops []syntax.BinCmdOperator // ops[i] connects stmts[i] and stmts[i+1]
	var flatten func(cm *syntax.BinaryCmd)
	flatten = func(cm *syntax.BinaryCmd) {
		if x, ok := cm.X.Cmd.(*syntax.BinaryCmd); ok && (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) &&
			len(cm.X.Redirs) == 0 && !cm.X.Negated && !cm.X.Background && !cm.X.Coprocess && !cm.X.Disown {
			flatten(x)
		} else {
			stmts = append(stmts, cm.X)
		}
		ops = append(ops, cm.Op)
		stmts = append(stmts, cm.Y)
	}
	flatten(cm)

	subs := make([]*Runner, len(stmts)-1)
	in := r.stdin
	var wg sync.WaitGroup
	for i, st := range stmts[:len(stmts)-1] {
		pr, pw, err := newPipe()
		if err != nil {
			r.exit.fatal(err) // not being able to create a pipe is rare but critical
			break
		}
		r2 := r.subshell(true)
		r2.stdin, r2.stdout = in, pw
		if ops[i] == syntax.PipeAll {
			r2.stderr = pw
		}
		subs[i] = r2
		closeIn := in
		if i == 0 {
			closeIn = nil // the pipeline's own stdin is not ours to close
		}
		wg.Go(func() {
			defer func() {
				pw.Close()
				if closeIn != nil {
					closeIn.Close()
				}
			}()
			defer r2.recoverPanic()
			r2.stmt(ctx, st)
			r2.exit.endSubshell(false) // subshells don't exit the parent shell
		})
		in = pr
	}
	last := stmts[len(stmts)-1]
	var lastExit exitStatus
	if r.exit.fatalExit {
		lastExit = r.exit
	} else if r.opts[optLastPipe] {
		oldIn := r.stdin
		r.stdin = in
		r.stmt(ctx, last)
		r.stdin = oldIn
		lastExit = r.exit
	} else {
		r2 := r.subshell(false)
		r2.stdin = in
		r2.stmt(ctx, last)
		r2.exit.endSubshell(false)
		lastExit = r2.exit
		// Process substitutions like in "x | tee >(y)" can still be waited for.
		r.bgProcs = append(r.bgProcs, r2.bgProcs...)
	}
	if in != r.stdin && in != nil {
		in.Close()
	}
	wg.Wait()

	r.exit = lastExit
	r.pipeStatus = r.pipeStatus[:0]
	for _, r2 := range subs {
		if r2 == nil {
			continue
		}
		r.pipeStatus = append(r.pipeStatus, r2.exit.code)
		if r.opts[optPipeFail] && !r2.exit.ok() {
			// With pipefail, the status is the last failure's.
			r.exit = r2.exit
		}
		if r2.exit.fatalExit {
			r.exit.fatal(r2.exit.err) // surface fatal errors immediately
		}
	}
	r.pipeStatus = append(r.pipeStatus, lastExit.code)
	if r.opts[optPipeFail] && !lastExit.ok() {
		r.exit = lastExit
	}
	r.pipeSet = true
}

// callExprFields expands the words of a simple command, after aliases.
func (r *Runner) callExprFields(cm *syntax.CallExpr) []string {
	// Build new slices, to not modify the caller's AST
	// nor the slices in the alias map.
	args := cm.Args
	for i := 0; i < len(args); {
		if !r.opts[optExpandAliases] {
			break
		}
		als, ok := r.alias[args[i].Lit()]
		if !ok {
			break
		}
		args = slices.Concat(args[:i], als.args, args[i+1:])
		if !als.blank {
			break
		}
		i += len(als.args)
	}
	// Like Bash, an argument that looks like an assignment, such as
	// "prefix=~/x" in "make prefix=~/x", has its tildes expanded as one.
	copied := false
	for i, arg := range args {
		if i == 0 {
			continue
		}
		if w := argTildes(arg, r.envGet); w != arg {
			if !copied {
				args, copied = slices.Clone(args), true
			}
			args[i] = w
		}
	}
	r.lastExpandExit = exitStatus{}
	return r.fields(args...)
}

// The name of the environment variable which holds an exported function,
// like Bash's: BASH_FUNC_name%%.
const (
	funcVarPrefix = "BASH_FUNC_"
	funcVarSuffix = "%%"
)

// importFuncs defines the functions exported to this shell in its environment,
// as with export -f in a parent shell.
func (r *Runner) importFuncs() {
	for name, vr := range r.Env.Each {
		fname, ok := strings.CutPrefix(name, funcVarPrefix)
		if !ok || !vr.Exported || !strings.HasSuffix(fname, funcVarSuffix) {
			continue
		}
		fname = strings.TrimSuffix(fname, funcVarSuffix)
		f, err := syntax.NewParser().Parse(strings.NewReader(fname+" "+vr.String()), "")
		if err != nil || len(f.Stmts) != 1 {
			continue
		}
		fd, ok := f.Stmts[0].Cmd.(*syntax.FuncDecl)
		if !ok || fd.Name == nil || fd.Name.Value != fname {
			continue
		}
		if r.Funcs == nil {
			r.Funcs = make(map[string]*syntax.Stmt)
		}
		r.Funcs[fname] = fd.Body
	}
}

// funcText prints a function like Bash's declare -f: its statements on their
// own lines, indented, separated by semicolons.
func funcText(name string, body *syntax.Stmt) string {
	var sb strings.Builder
	sb.WriteString(name + " () \n")
	printer := syntax.NewPrinter(syntax.Indent(4))
	block, ok := body.Cmd.(*syntax.Block)
	if !ok || body.Negated || len(body.Redirs) > 0 {
		printer.Print(&sb, body)
		return sb.String()
	}
	sb.WriteString("{ \n")
	for i, st := range block.Stmts {
		var b strings.Builder
		printer.Print(&b, st)
		for j, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			if j > 0 {
				sb.WriteString("\n")
			}
			sb.WriteString("    " + line)
		}
		if i < len(block.Stmts)-1 {
			sb.WriteString(";")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("}")
	return sb.String()
}

// procSubstFile implements a process substitution with a regular file in
// [ProcSubstDir], for interpreters whose files are not the host's: <(cmd)
// runs cmd to its end now, writing the file which the command then reads;
// >(cmd) returns an empty file, and runs cmd on what the command wrote into
// it once the statement is done (see [Runner.stmtSync]).
func (r *Runner) procSubstFile(ctx context.Context, ps *syntax.ProcSubst) (string, error) {
	path := filepath.Join(r.procSubstDir, fifoNamePrefix+strconv.FormatUint(mathrand.Uint64(), 16))
	f, err := r.open(ctx, path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600, false)
	if err != nil {
		return "", fmt.Errorf("cannot create process substitution file: %v", err)
	}
	if ps.Op == syntax.CmdOut {
		f.Close()
		r.procSubstOut = append(r.procSubstOut, procSubstOut{path: path, stmts: ps.Stmts, stdout: r.stdout, stderr: r.stderr})
		return path, nil
	}
	r2 := r.subshell(false)
	r2.stdout = f
	r2.stmts(ctx, ps.Stmts)
	r2.exitTrap(ctx)
	r2.exit.endSubshell(true)
	f.Close()
	if r2.exit.fatalExit {
		return "", r2.exit.err
	}
	return path, nil
}

// procSubstOut is a pending >(cmd) of [ProcSubstDir].
type procSubstOut struct {
	path           string
	stmts          []*syntax.Stmt
	stdout, stderr io.Writer
}

// runProcSubstOut runs the pending >(cmd) process substitutions of a statement
// which is done, each reading what was written to its file.
func (r *Runner) runProcSubstOut(ctx context.Context) {
	pending := r.procSubstOut
	r.procSubstOut = nil
	for _, p := range pending {
		f, err := r.open(ctx, p.path, os.O_RDONLY, 0, false)
		if err != nil {
			r.errf("cannot read process substitution file: %v\n", err)
			continue
		}
		stdin, err := newStdinFile(f)
		if err != nil {
			f.Close()
			continue
		}
		r2 := r.subshell(false)
		r2.stdin, r2.stdout, r2.stderr = stdin, p.stdout, p.stderr
		r2.stmts(ctx, p.stmts)
		r2.exitTrap(ctx)
		f.Close()
	}
}

// exitTrap runs the EXIT trap that a subshell set, when it ends.
func (r *Runner) exitTrap(ctx context.Context) {
	if r.callbackExit != "" {
		r.trapCallback(ctx, r.callbackExit, "exit")
	}
}

func (r *Runner) trapCallback(ctx context.Context, callback, name string) {
	if callback == "" {
		return // nothing to do
	}
	if r.handlingTrap {
		return // don't recurse, as that could lead to cycles
	}
	r.handlingTrap = true
	defer func() { r.handlingTrap = false }()

	p := syntax.NewParser()
	// TODO: do this parsing when "trap" is called?
	file, err := p.Parse(strings.NewReader(callback), name+" trap")
	if err != nil {
		r.errf(name+"trap: %v\n", err)
		// ignore errors in the callback
		return
	}
	oldExit, oldLastExit := r.exit, r.lastExit
	r.lastExit = r.exit
	r.stmts(ctx, file.Stmts)
	r.exit, r.lastExit = oldExit, oldLastExit // traps on EXIT or ERR should not modify the result
}

func (r *Runner) flattenAssigns(args []*syntax.Assign) iter.Seq[*syntax.Assign] {
	return func(yield func(*syntax.Assign) bool) {
		for _, as := range args {
			// Convert "declare $x" into "declare value".
			// Don't use syntax.Parser here, as we only want the basic
			// splitting by '='.
			if as.Name != nil {
				if !yield(as) {
					return
				}
				continue
			}
			for _, field := range r.fields(as.Value) {
				as := &syntax.Assign{}
				name, val, ok := strings.Cut(field, "=")
				as.Name = &syntax.Lit{Value: name}
				if !ok {
					as.Naked = true
				} else {
					as.Value = &syntax.Word{Parts: []syntax.WordPart{
						&syntax.Lit{Value: val},
					}}
				}
				if !yield(as) {
					return
				}
			}
		}
	}
}

// letArgString reproduces one expression of a let clause as bash would print it
// when tracing, that is, as the single quoted word that bash's let receives.
func (r *Runner) letArgString(printer *syntax.Printer, expr syntax.ArithmExpr) string {
	if word, ok := expr.(*syntax.Word); ok {
		return quoteBash(r.literal(word))
	}
	// The printer only prints an arithmetic expression as part of a parent node,
	// so print a let clause holding just this expression and drop the keyword.
	// The keyword borrows the expression's position to stay on the same line.
	// TODO: drop this workaround if [syntax.Printer.Print] learns to print
	// an arithmetic expression on its own.
	var sb strings.Builder
	if err := printer.Print(&sb, &syntax.LetClause{
		Let:   expr.Pos(),
		Exprs: []syntax.ArithmExpr{expr},
	}); err != nil { // should never happen
		panic(err)
	}
	return strings.TrimPrefix(sb.String(), "let ")
}

func (r *Runner) match(pat, name string) bool {
	mode := pattern.EntireString | pattern.ExtendedOperators
	if r.opts[optNoCaseMatch] {
		mode |= pattern.NoGlobCase
	}
	matcher, err := internal.ExtendedPatternMatcher(pat, mode)
	if err != nil {
		// A malformed pattern simply does not match, like in bash.
		// Any other error, such as an unsupported extended pattern, is reported.
		if _, ok := errors.AsType[*pattern.SyntaxError](err); !ok {
			r.expandErr(err)
		}
		return false
	}
	return matcher(name)
}

func elapsedString(d time.Duration, posix bool) string {
	if posix {
		return fmt.Sprintf("%.2f", d.Seconds())
	}
	mins := int(d.Minutes())
	sec := math.Mod(d.Seconds(), 60.0)
	return fmt.Sprintf("%dm%.3fs", mins, sec)
}

// topStmts runs the statements of a whole program. After an expansion error
// which abandons a command line, like Bash, it skips the rest of that line.
func (r *Runner) topStmts(ctx context.Context, stmts []*syntax.Stmt) {
	var skipLine uint
	for _, stmt := range stmts {
		if skipLine > 0 && stmt.Pos().Line() == skipLine {
			continue
		}
		r.stmt(ctx, stmt)
		if r.exit.aborting {
			r.exit.aborting = false
			r.lastExit.aborting = false
			skipLine = stmt.End().Line()
		}
	}
}

func (r *Runner) stmts(ctx context.Context, stmts []*syntax.Stmt) {
	for _, stmt := range stmts {
		r.stmt(ctx, stmt)
	}
}

func (r *Runner) hdocReader(rd *syntax.Redirect) (stdinFile, error) {
	pr, pw, err := newPipe()
	if err != nil {
		return nil, err
	}
	hdoc := r.hdocString(rd)
	// We write to the pipe in a new goroutine,
	// as pipe writes may block once the buffer gets full.
	// We still construct and buffer the entire heredoc first,
	// as doing it concurrently would lead to different semantics and be racy.
	go func() {
		io.WriteString(pw, hdoc)
		pw.Close()
	}()
	return pr, nil
}

// hdocQuotedDelim reports whether a here-document delimiter word is quoted,
// as in "<<'EOF'" or "<<\EOF", which makes its body literal.
func hdocQuotedDelim(word *syntax.Word) bool {
	for _, wp := range word.Parts {
		switch wp := wp.(type) {
		case *syntax.Lit:
			if strings.Contains(wp.Value, "\\") {
				return true
			}
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		}
	}
	return false
}

// hdocWord returns a here-document body, or one of its lines, as a string.
// A quoted delimiter, as in "<<'EOF'", makes the body literal,
// in which case the parser only gives us literal parts.
// Note that a partly quoted delimiter, such as "<<'A'B",
// is not spotted by the parser either, so we still expand its body.
func (r *Runner) hdocWord(word *syntax.Word, quoted bool) string {
	if quoted {
		if lit := word.Lit(); lit != "" {
			return lit
		}
		// The parser parsed the body of a partly quoted delimiter, such as
		// <<E"N"D, as if it was unquoted: print its source back instead.
		var sb strings.Builder
		if err := syntax.NewPrinter().Print(&sb, &syntax.CallExpr{Args: []*syntax.Word{word}}); err == nil {
			return sb.String()
		}
	}
	return r.document(word)
}

// hdocString returns the body of a here-document as a string.
func (r *Runner) hdocString(rd *syntax.Redirect) string {
	if rd.Hdoc == nil {
		return "" // an empty here-document
	}
	quoted := hdocQuotedDelim(rd.Word)
	if rd.Op != syntax.DashHdoc {
		return r.hdocWord(rd.Hdoc, quoted)
	}
	// Strip the leading tabs from each line.
	var buf strings.Builder
	var cur []syntax.WordPart
	flushLine := func() {
		if buf.Len() > 0 {
			buf.WriteByte('\n')
		}
		buf.WriteString(r.hdocWord(&syntax.Word{Parts: cur}, quoted))
		cur = cur[:0]
	}
	for _, wp := range rd.Hdoc.Parts {
		lit, ok := wp.(*syntax.Lit)
		if !ok {
			cur = append(cur, wp)
			continue
		}
		first := true
		for part := range strings.SplitSeq(lit.Value, "\n") {
			if !first {
				flushLine()
			}
			first = false
			part = strings.TrimLeft(part, "\t")
			cur = append(cur, &syntax.Lit{Value: part})
		}
	}
	flushLine()
	return buf.String()
}

// fdEntry is a file descriptor above 2: its reading end, its writing end,
// or both, as with 3<>file.
type fdEntry struct {
	r stdinFile
	w io.Writer

	// empty is set for an input which reads nothing, such as the
	// standard input of a Runner given none, when r is nil.
	empty bool
}

// closedWriter is the writer of a closed output file descriptor, as with >&-.
type closedWriter struct{}

func (closedWriter) Write([]byte) (int, error) { return 0, errBadFd }

// closedReader is standard input closed with <&-, as handlers see it.
type closedReader struct{}

func (closedReader) Read([]byte) (int, error) { return 0, errBadFd }

var errBadFd = errors.New("Bad file descriptor")

// getFd returns the file descriptor n.
func (r *Runner) getFd(n int) (fdEntry, bool) {
	switch n {
	case 0:
		// A Runner without standard input reads nothing from it, as
		// from /dev/null, until it is closed with <&-.
		return fdEntry{r: r.stdin, empty: r.stdin == nil}, !r.stdinClosed
	case 1:
		_, closed := r.stdout.(closedWriter)
		return fdEntry{w: r.stdout}, !closed
	case 2:
		_, closed := r.stderr.(closedWriter)
		return fdEntry{w: r.stderr}, !closed
	}
	e, ok := r.fds[n]
	return e, ok
}

// setFd points the file descriptor n at e; an empty e closes it.
func (r *Runner) setFd(n int, e fdEntry) {
	switch n {
	case 0:
		r.stdin = e.r
		r.stdinClosed = e.r == nil && !e.empty
		return
	case 1, 2:
		w := e.w
		if w == nil {
			w = closedWriter{}
		}
		if n == 1 {
			r.stdout = w
		} else {
			r.stderr = w
		}
		return
	}
	fds := make(map[int]fdEntry, len(r.fds)+1)
	maps.Copy(fds, r.fds)
	if e.r == nil && e.w == nil && !e.empty {
		delete(fds, n)
	} else {
		fds[n] = e
	}
	r.fds = fds
}

func (r *Runner) redir(ctx context.Context, rd *syntax.Redirect) (io.Closer, error) {
	isHdoc := rd.Op == syntax.Hdoc || rd.Op == syntax.DashHdoc
	var arg string
	switch {
	case isHdoc:
	case rd.Op == syntax.WordHdoc:
		arg = r.literal(rd.Word)
	default:
		// Like Bash, the target of a redirection is split into fields
		// and globbed, and must then be exactly one word.
		fields := r.fields(rd.Word)
		if r.expandFailed() {
			return nil, nil
		}
		if len(fields) != 1 {
			var sb strings.Builder
			syntax.NewPrinter().Print(&sb, rd.Word)
			return nil, fmt.Errorf("%s: ambiguous redirect", sb.String())
		}
		arg = fields[0]
	}
	fd := -1 // the default for the operator
	if rd.N != nil {
		n, err := strconv.Atoi(rd.N.Value)
		if name, ok := fdVarName(rd.N.Value); ok {
			n, err = r.fdOfVar(name, (rd.Op == syntax.DplIn || rd.Op == syntax.DplOut) && arg == "-")
			if err != nil {
				return nil, err
			}
		} else if err != nil || n < 0 {
			return nil, fmt.Errorf("unsupported redirect fd: %v", rd.N.Value)
		}
		fd = n
	}
	fdOr := func(def int) int {
		if fd >= 0 {
			return fd
		}
		return def
	}
	// Note that Hdoc is nil for an empty here-document.
	if isHdoc {
		pr, err := r.hdocReader(rd)
		if err != nil {
			return nil, err
		}
		r.setFd(fdOr(0), fdEntry{r: pr})
		return pr, nil
	}
	switch rd.Op {
	case syntax.WordHdoc:
		pr, pw, err := newPipe()
		if err != nil {
			return nil, err
		}
		r.setFd(fdOr(0), fdEntry{r: pr})
		// We write to the pipe in a new goroutine,
		// as pipe writes may block once the buffer gets full.
		go func() {
			io.WriteString(pw, arg)
			io.WriteString(pw, "\n")
			pw.Close()
		}()
		return pr, nil
	case syntax.DplIn, syntax.DplOut:
		n := fdOr(0)
		if rd.Op == syntax.DplOut {
			n = fdOr(1)
		}
		if arg == "-" {
			r.setFd(n, fdEntry{})
			return nil, nil
		}
		// "N>&M-" moves M to N: it duplicates M, then closes it.
		srcArg, move := strings.CutSuffix(arg, "-")
		src, err := strconv.Atoi(srcArg)
		if err != nil {
			if rd.Op == syntax.DplOut && fd < 0 {
				// ">&file" is the same as "&>file".
				break
			}
			return nil, fmt.Errorf("%s: ambiguous redirect", arg)
		}
		e, ok := r.getFd(src)
		if !ok || (rd.Op == syntax.DplIn && e.r == nil && !e.empty && n == 0) {
			return nil, fmt.Errorf("%d: %w", src, errBadFd)
		}
		r.setFd(n, e)
		if move && src != n {
			r.setFd(src, fdEntry{})
		}
		return nil, nil
	case syntax.RdrIn, syntax.RdrOut, syntax.AppOut, syntax.RdrClob:
		// Like Bash, /dev/fd/N names the shell's own descriptor N.
		if rest, ok := strings.CutPrefix(arg, "/dev/fd/"); ok {
			if src, err := strconv.Atoi(rest); err == nil && src > 2 {
				e, ok := r.getFd(src)
				if !ok || (rd.Op == syntax.RdrIn && e.r == nil && !e.empty) || (rd.Op != syntax.RdrIn && e.w == nil) {
					return nil, fmt.Errorf("%s: %w", arg, errBadFd)
				}
				if rd.Op == syntax.RdrIn {
					r.setFd(fdOr(0), e)
				} else {
					r.setFd(fdOr(1), e)
				}
				return nil, nil
			}
		}
	case syntax.RdrInOut, syntax.RdrAll, syntax.AppAll:
		// done further below
	default:
		return nil, fmt.Errorf("unhandled redirect op: %v", rd.Op)
	}
	op := rd.Op
	if op == syntax.DplOut {
		op = syntax.RdrAll
	}
	mode := os.O_RDONLY
	switch op {
	case syntax.AppOut, syntax.AppAll:
		mode = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	case syntax.RdrOut, syntax.RdrAll, syntax.RdrClob:
		mode = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	case syntax.RdrInOut:
		mode = os.O_RDWR | os.O_CREATE
	}
	if r.opts[optNoClobber] && (op == syntax.RdrOut || op == syntax.RdrAll) {
		// Like POSIX shells, refuse to truncate an existing regular file.
		if info, err := r.stat(ctx, arg); err == nil && info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: cannot overwrite existing file", arg)
		}
	}
	f, err := r.open(ctx, arg, mode, 0o644, false)
	if err != nil {
		return nil, err
	}
	switch op {
	case syntax.RdrIn:
		stdin, err := newStdinFile(f)
		if err != nil {
			return nil, err
		}
		r.setFd(fdOr(0), fdEntry{r: stdin})
	case syntax.RdrInOut:
		// A reader that is not an [*os.File] is copied into a pipe by a
		// goroutine as soon as it is opened; reading it through its own
		// offset keeps that copy from moving the offset that writes use
		// (echo b 1<>f writes at the start, as in Bash, not after what
		// the copy happened to read already).
		in := io.Reader(f)
		if ra, ok := f.(io.ReaderAt); ok {
			if _, isFile := f.(*os.File); !isFile {
				in = io.NewSectionReader(ra, 0, math.MaxInt64)
			}
		}
		stdin, err := newStdinFile(in)
		if err != nil {
			return nil, err
		}
		r.setFd(fdOr(0), fdEntry{r: stdin, w: f})
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob:
		r.setFd(fdOr(1), fdEntry{w: f})
	case syntax.RdrAll, syntax.AppAll:
		r.stdout = f
		r.stderr = f
	}
	return f, nil
}

// fdVarName reports whether the word before a redirection is "{varname}",
// which asks the shell to allocate a descriptor and store it in varname.
func fdVarName(s string) (string, bool) {
	name, ok := strings.CutPrefix(s, "{")
	name, ok2 := strings.CutSuffix(name, "}")
	return name, ok && ok2 && syntax.ValidName(name)
}

// fdOfVar is the descriptor of a "{varname}" redirection: a new one from 10
// up, stored in varname, or the one varname holds when closing it.
func (r *Runner) fdOfVar(name string, closing bool) (int, error) {
	if closing {
		n, err := strconv.Atoi(r.envGet(name))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: ambiguous redirect", name)
		}
		return n, nil
	}
	n := 10
	for {
		if _, used := r.fds[n]; !used {
			break
		}
		n++
	}
	r.setVarString(name, strconv.Itoa(n))
	return n, nil
}

func (r *Runner) loopStmtsBroken(ctx context.Context, stmts []*syntax.Stmt) bool {
	oldInLoop := r.inLoop
	r.inLoop = true
	defer func() { r.inLoop = oldInLoop }()
	for _, stmt := range stmts {
		r.stmt(ctx, stmt)
		if done, broken := r.loopControl(!oldInLoop); done {
			return broken
		}
	}
	return false
}

// loopControl takes one loop's level off a pending break or continue, reporting whether there
// was one, and whether the loop is to end. Like Bash, a count above the number of enclosing
// loops ends at the outermost one: a break leaves it, a continue resumes it.
func (r *Runner) loopControl(outermost bool) (done, broken bool) {
	if r.contnEnclosing > 0 {
		r.contnEnclosing--
		if outermost {
			r.contnEnclosing = 0
		}
		return true, r.contnEnclosing > 0
	}
	if r.breakEnclosing > 0 {
		r.breakEnclosing--
		if outermost {
			r.breakEnclosing = 0
		}
		return true, true
	}
	return false, false
}

func (r *Runner) call(ctx context.Context, pos syntax.Pos, args []string) {
	if r.stop(ctx) {
		return
	}
	if r.callHandler != nil {
		var err error
		args, err = r.callHandler(r.handlerCtx(ctx, handlerKindCall, pos), args)
		if err != nil {
			// handler's custom fatal error
			r.exit.fatal(err)
			return
		}
	}
	name := args[0]
	r.lastArg = args[len(args)-1]
	if body := r.Funcs[name]; body != nil {
		// stack them to support nested func calls
		oldParams := r.Params
		r.Params = args[1:]
		oldInFunc := r.inFunc
		r.inFunc = true
		// Like Bash outside POSIX mode, break and continue in a function
		// do not reach the loops of its callers.
		oldInLoop := r.inLoop
		r.inLoop = false
		r.funcNames = append(r.funcNames, name)

		// Functions run in a nested scope.
		// Note that [Runner.exec] below does something similar.
		origEnv := r.writeEnv
		r.writeEnv = &overlayEnviron{parent: r.writeEnv, funcScope: true}

		r.stmt(ctx, body)
		if r.exit.errState == errIgnored {
			// Like Bash, a function call is a simple command which can trigger
			// errexit, even if its last command failed while errexit was ignored.
			r.exit.errState = errUnchecked
		}

		r.writeEnv = origEnv

		r.Params = oldParams
		r.inFunc = oldInFunc
		r.inLoop = oldInLoop
		r.breakEnclosing, r.contnEnclosing = 0, 0
		r.funcNames = r.funcNames[:len(r.funcNames)-1]
		r.exit.returning = false
		r.lastArg = args[len(args)-1]
		return
	}
	if IsBuiltin(name) {
		r.exit = r.builtin(ctx, pos, name, args[1:])
		return
	}
	r.exec(ctx, pos, args)
}

func (r *Runner) exec(ctx context.Context, pos syntax.Pos, args []string) {
	r.exit.fromHandlerError(r.execHandler(r.handlerCtx(ctx, handlerKindExec, pos), args))
}

func (r *Runner) open(ctx context.Context, path string, flags int, mode os.FileMode, print bool) (io.ReadWriteCloser, error) {
	// If we are opening a FIFO temporary file created by the interpreter itself,
	// don't pass this along to the open handler as it will not work at all
	// unless [os.OpenFile] is used directly with it.
	// Matching by directory and basename prefix isn't perfect, but works.
	//
	// If we want FIFOs to use a handler in the future, they probably
	// need their own separate handler API matching Unix-like semantics.
	dir, name := filepath.Split(path)
	dir = strings.TrimSuffix(dir, "/")
	if r.procSubstDir == "" && dir == r.tempDir && strings.HasPrefix(name, fifoNamePrefix) {
		return os.OpenFile(path, flags, mode)
	}

	f, err := r.openHandler(r.handlerCtx(ctx, handlerKindOpen, todoPos), path, flags, mode)
	// TODO: support wrapped PathError returned from openHandler.
	switch err.(type) {
	case nil:
		return f, nil
	case *os.PathError:
		if print {
			r.errf("%v\n", err)
		}
	default: // handler's custom fatal error
		r.exit.fatal(err)
	}
	return nil, err
}

func (r *Runner) stat(ctx context.Context, name string) (fs.FileInfo, error) {
	path := absPath(r.Dir, name)
	return r.statHandler(r.handlerCtx(ctx, handlerKindStat, todoPos), path, true)
}

func (r *Runner) lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	path := absPath(r.Dir, name)
	return r.statHandler(r.handlerCtx(ctx, handlerKindStat, todoPos), path, false)
}

func (r *Runner) access(ctx context.Context, name string, mode AccessMode) error {
	path := absPath(r.Dir, name)
	return r.accessHandler(r.handlerCtx(ctx, handlerKindAccess, todoPos), path, mode)
}
