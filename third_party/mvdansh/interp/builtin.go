// Copyright (c) 2017, Daniel Martí <mvdan@mvdan.cc>
// See LICENSE for licensing information

package interp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
	"mvdan.cc/sh/v3/syntax"
)

// TODO: given the categories below, perhaps this should be more like:
//
//   func IsBuiltin(lang syntax.LangVariant, name string) bool
//
// or perhaps some API that also lets the user iterate through the builtins?
//
// Also, should we move this to the syntax package too?
// It's not a syntactical property strictly speaking,
// but it's also odd to require importing the interp package for it.

// IsBuiltin returns true if the given word is a POSIX Shell
// or Bash builtin.
func IsBuiltin(name string) bool {
	switch name {
	case
		// POSIX Shell regular built-ins, that is, the utilities which the shell
		// must provide as built-ins, from section 1.d obtained in September 2025 from:
		// https://pubs.opengroup.org/onlinepubs/9699919799/utilities/V3_chap02.html#tag_18_09_01_01
		"alias",
		"bg",
		"cd",
		"command",
		"false",
		"fc",
		"fg",
		"getopts",
		"hash",
		"jobs",
		"kill",
		"newgrp",
		"pwd",
		"read",
		"true",
		"umask",
		"unalias",
		"wait",

		// POSIX Shell special built-ins, obtained in September 2025 from:
		// https://pubs.opengroup.org/onlinepubs/9699919799/utilities/V3_chap02.html#tag_18_14
		"break",
		":",
		"continue",
		".",
		"eval",
		"exec",
		"exit",
		"export",   // NOTE: our parser treats this as a keyword
		"readonly", // NOTE: our parser treats this as a keyword
		"return",
		"set",
		"shift",
		"times",
		"trap",
		"unset",

		// Bash built-ins which are not present in POSIX, obtained in September 2025 from:
		// https://man.archlinux.org/man/bash.1.en#SHELL_BUILTIN_COMMANDS
		"source",
		"bind",
		"builtin",
		"caller",
		"compgen",
		"complete",
		"compopt",
		"declare", // NOTE: our parser treats this as a keyword
		"typeset", // NOTE: our parser treats this as a keyword
		"dirs",
		"disown",
		"enable",
		"history",
		"help",
		"let", // NOTE: our parser treats this as a keyword
		"local",
		"logout",
		"mapfile",
		"readarray",
		"popd",
		"pushd",
		"shopt",
		"suspend",
		"type",
		"ulimit",

		// POSIX utilities which the shell need not provide as built-ins,
		// so they are separate executables found via PATH, but which we
		// implement as built-ins just like Bash does. Obtained in September
		// 2025 from https://pubs.opengroup.org/onlinepubs/9699919799/utilities/contents.html
		"echo",
		"printf",
		"test",
		"[": // NOTE: an alias for "test", not documented separately
		return true
	}
	return false
}

// TODO: atoi is duplicated in the expand package.

// atoi is like [strconv.ParseInt](s, 10, 64), but it ignores errors and trims whitespace.
func atoi(s string) int64 {
	s = strings.TrimSpace(s)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

type errBuiltinExitStatus exitStatus

func (e errBuiltinExitStatus) Error() string {
	return fmt.Sprintf("builtin exit status %d", e.code)
}

// Builtin allows [ExecHandlerFunc] implementations to execute any builtin,
// which can be useful for an exec handler to wrap or combine builtin calls.
//
// Note that a non-nil error may be returned in cases where the builtin
// alters the control flow of the runner, even if the builtin did not fail.
// For example, this is the case with `exit 0` or `return`.
func (hc HandlerContext) Builtin(ctx context.Context, args []string) error {
	if hc.kind != handlerKindExec {
		return fmt.Errorf("HandlerContext.Builtin can only be called via an ExecHandlerFunc")
	}
	exit := hc.runner.builtin(ctx, hc.Pos, args[0], args[1:])
	if exit != (exitStatus{}) {
		return errBuiltinExitStatus(exit)
	}
	return nil
}

func (r *Runner) builtin(ctx context.Context, pos syntax.Pos, name string, args []string) (exit exitStatus) {
	failf := func(code uint8, format string, args ...any) exitStatus {
		r.errf(format, args...)
		exit.code = code
		return exit
	}
	switch name {
	case ":", "true":
	case "false":
		exit.code = 1
	case "help":
		return r.runHelp(args)
	case "times":
		// js/wasm has no per-process CPU accounting at all, so report zeros
		// in bash's format — shell user/sys, then children user/sys — rather
		// than fail.
		// TODO: report real times on platforms that can, via os/exec's
		// ProcessState or syscall.Getrusage. Not urgent; nothing depends on
		// the values being non-zero.
		r.out("0m0.000s 0m0.000s\n0m0.000s 0m0.000s\n")
	case "exit":
		switch len(args) {
		case 0:
			exit = r.lastExit
		case 1:
			n, err := strconv.Atoi(args[0])
			if err != nil {
				return failf(2, "invalid exit status code: %q\n", args[0])
			}
			exit.code = uint8(n)
		default:
			return failf(1, "exit cannot take multiple arguments\n")
		}
		exit.exiting = true
	case "set":
		if err := Params(args...)(r); err != nil {
			return failf(2, "set: %v\n", err)
		}
		r.updateExpandOpts()
	case "shift":
		n := 1
		switch len(args) {
		case 0:
		case 1:
			if n2, err := strconv.Atoi(args[0]); err == nil {
				n = n2
				break
			}
			fallthrough
		default:
			return failf(2, "usage: shift [n]\n")
		}
		if n > len(r.Params) {
			// Like Bash, shifting more than there is fails and shifts nothing.
			exit.code = 1
			break
		}
		r.Params = r.Params[n:]
	case "unset":
		vars := true
		funcs := true
	unsetOpts:
		for i, arg := range args {
			switch arg {
			case "-v":
				funcs = false
			case "-f":
				vars = false
			default:
				args = args[i:]
				break unsetOpts
			}
		}

		for _, arg := range args {
			r.exit.code = 0
			if name, sub, ok := cutElemSubscript(arg); vars && ok {
				r.unsetElem(name, sub)
			} else if vars && r.lookupVar(arg).IsSet() {
				r.delVar(arg)
			} else if _, ok := r.Funcs[arg]; ok && funcs {
				delete(r.Funcs, arg)
			}
			if r.exit.code != 0 { // such as a read-only variable
				exit.code = r.exit.code
			}
		}
	case "echo":
		newline, doExpand := true, false
	echoOpts:
		for len(args) > 0 {
			// Like Bash, only words made of the flags n, e and E are options.
			opt := args[0]
			if len(opt) < 2 || opt[0] != '-' || strings.Trim(opt[1:], "neE") != "" {
				break echoOpts
			}
			for _, c := range opt[1:] {
				switch c {
				case 'n':
					newline = false
				case 'e':
					doExpand = true
				case 'E':
					doExpand = false
				}
			}
			args = args[1:]
		}
		var sb strings.Builder
		for i, arg := range args {
			if i > 0 {
				sb.WriteByte(' ')
			}
			if !doExpand {
				sb.WriteString(arg)
				continue
			}
			s, stop := expand.EchoEscapes(arg)
			sb.WriteString(s)
			if stop { // \c ends the output, without a newline
				newline = false
				break
			}
		}
		if newline {
			sb.WriteByte('\n')
		}
		if err := r.writeOut(sb.String()); err != nil {
			return failf(1, "echo: write error: %v\n", err)
		}
	case "printf":
		varName := ""
	printfOpts:
		for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
			switch opt := args[0]; {
			case opt == "--":
				args = args[1:]
				break printfOpts
			case opt == "-v" && len(args) > 1:
				varName, args = args[1], args[2:]
			case strings.HasPrefix(opt, "-v") && len(opt) > 2:
				varName, args = opt[2:], args[1:]
			default:
				return failf(2, "printf: %s: invalid option\nprintf: usage: printf [-v var] format [arguments]\n", opt)
			}
		}
		if len(args) == 0 {
			return failf(2, "usage: printf format [arguments]\n")
		}
		format, args := args[0], args[1:]
		var sb strings.Builder
		for {
			s, n, stop, numErr, err := expand.Printf(format, args)
			sb.WriteString(s)
			if numErr != nil {
				r.errf("printf: %v\n", numErr)
				if ne, ok := numErr.(*expand.NumberError); !ok || !ne.Range {
					exit.code = 1
				}
			}
			if err != nil {
				r.errf("printf: %v\n", err)
				exit.code = 1
				break
			}
			args = args[n:]
			if stop || n == 0 || len(args) == 0 {
				break
			}
		}
		if varName != "" {
			if !r.setVarRef(varName, sb.String()) {
				return failf(2, "printf: `%s': not a valid identifier\n", varName)
			}
			break
		}
		if err := r.writeOut(sb.String()); err != nil {
			return failf(1, "printf: write error: %v\n", err)
		}
	case "break", "continue":
		if !r.inLoop {
			return failf(0, "%s is only useful in a loop\n", name)
		}
		enclosing := &r.breakEnclosing
		if name == "continue" {
			enclosing = &r.contnEnclosing
		}
		switch len(args) {
		case 0:
			*enclosing = 1
		case 1:
			n, err := strconv.Atoi(args[0])
			if err != nil {
				// Like Bash, a count that is not a number ends the shell.
				exit = failf(128, "%s: %s: numeric argument required\n", name, args[0])
				exit.exiting = true
				return exit
			}
			if n < 1 {
				// Like Bash, a count below one is an error which leaves every enclosing loop.
				r.breakEnclosing = math.MaxInt
				return failf(1, "%s: %s: loop count out of range\n", name, args[0])
			}
			*enclosing = n
		default:
			// Like Bash, too many arguments end the shell.
			exit = failf(1, "%s: too many arguments\n", name)
			exit.exiting = true
			return exit
		}
	case "pwd":
		evalSymlinks := false
		for len(args) > 0 {
			switch args[0] {
			case "-L":
				evalSymlinks = false
			case "-P":
				evalSymlinks = true
			default:
				return failf(2, "invalid option: %q\n", args[0])
			}
			args = args[1:]
		}
		pwd := r.envGet("PWD")
		if evalSymlinks {
			var err error
			pwd, err = filepath.EvalSymlinks(pwd)
			if err != nil {
				exit.fatal(err) // perhaps overly dramatic?
				return exit
			}
		}
		r.outf("%s\n", pwd)
	case "cd":
		var path string
		switch len(args) {
		case 0:
			path = r.envGet("HOME")
		case 1:
			path = args[0]

			// replicate the commonly implemented behavior of `cd -`
			// ref: https://www.man7.org/linux/man-pages/man1/cd.1p.html#OPERANDS
			if path == "-" {
				path = r.envGet("OLDPWD")
				r.outf("%s\n", path)
			}
		default:
			return failf(2, "usage: cd [dir]\n")
		}
		exit.code = r.changeDir(ctx, "cd", path)
	case "wait":
		return r.waitBuiltin(args)
	case "jobs":
		return r.jobsBuiltin(args)
	case "builtin":
		if len(args) < 1 {
			break
		}
		if !IsBuiltin(args[0]) {
			exit.code = 1
			return exit
		}
		exit = r.builtin(ctx, pos, args[0], args[1:])
	case "type":
		anyNotFound := false
		mode := ""
		fp := flagParser{remaining: args}
		for fp.more() {
			switch flag := fp.flag(); flag {
			case "-a", "-f", "--help":
				return failf(3, "type: NOT IMPLEMENTED\n")
			case "-p", "-P", "-t":
				mode = flag
			default:
				return failf(2, "type: invalid option %q\n", flag)
			}
		}
		args := fp.args()
		for _, arg := range args {
			if mode == "-p" || mode == "-P" {
				if path, err := LookPathDir(r.Dir, r.writeEnv, arg); err == nil {
					r.outf("%s\n", path)
				} else {
					anyNotFound = true
				}
				continue
			}
			if syntax.IsKeyword(arg) {
				if mode == "-t" {
					r.out("keyword\n")
				} else {
					r.outf("%s is a shell keyword\n", arg)
				}
				continue
			}
			if als, ok := r.alias[arg]; ok && r.opts[optExpandAliases] {
				var buf bytes.Buffer
				if len(als.args) > 0 {
					printer := syntax.NewPrinter()
					printer.Print(&buf, &syntax.CallExpr{
						Args: als.args,
					})
				}
				if als.blank {
					buf.WriteByte(' ')
				}
				if mode == "-t" {
					r.out("alias\n")
				} else {
					r.outf("%s is aliased to `%s'\n", arg, &buf)
				}
				continue
			}
			if _, ok := r.Funcs[arg]; ok {
				if mode == "-t" {
					r.out("function\n")
				} else {
					r.outf("%s is a function\n", arg)
				}
				continue
			}
			if IsBuiltin(arg) {
				if mode == "-t" {
					r.out("builtin\n")
				} else {
					r.outf("%s is a shell builtin\n", arg)
				}
				continue
			}
			if path, err := LookPathDir(r.Dir, r.writeEnv, arg); err == nil {
				if mode == "-t" {
					r.out("file\n")
				} else {
					r.outf("%s is %s\n", arg, path)
				}
				continue
			}
			if mode != "-t" {
				r.errf("type: %s: not found\n", arg)
			}
			anyNotFound = true
		}
		if anyNotFound {
			exit.code = 1
		}
	case "hash":
		// There is no table of remembered paths, as programs are looked up each time.
		if len(args) == 0 {
			r.out("hash: hash table empty\n")
		}
	case "caller":
		// The call stack's lines and files are not tracked: like Bash
		// outside of a function, there is nothing to report.
		exit.code = 1
	case "eval":
		src := strings.Join(args, " ")
		p := syntax.NewParser()
		file, err := p.Parse(strings.NewReader(src), "")
		if err != nil {
			return failf(2, "eval: %v\n", err)
		}
		r.stmts(ctx, file.Stmts)
		exit = r.exit
		if exit.errState == errIgnored {
			exit.errState = errUnchecked // eval is a simple command to errexit
		}
	case "source", ".":
		if len(args) < 1 {
			return failf(2, "%v: source: need filename\n", pos)
		}
		path, err := scriptFromPathDir(r.Dir, r.writeEnv, args[0])
		if err != nil {
			// If the script was not found in PATH or there was any error, pass
			// the source path to the open handler so it has a chance to look
			// at files it manages (eg: virtual filesystem), and also allow
			// it to look for the sourced script in the current directory.
			path = args[0]
		}
		f, err := r.open(ctx, path, os.O_RDONLY, 0, false)
		if err != nil {
			return failf(1, "source: %v\n", err)
		}
		defer f.Close()
		p := syntax.NewParser()
		file, err := p.Parse(f, path)
		if err != nil {
			return failf(1, "source: %v\n", err)
		}

		// Keep the current versions of some fields we might modify.
		oldParams := r.Params
		oldSourceSetParams := r.sourceSetParams
		oldInSource := r.inSource

		// If we run "source file args...", set said args as parameters.
		// Otherwise, keep the current parameters.
		sourceArgs := len(args[1:]) > 0
		if sourceArgs {
			r.Params = args[1:]
			r.sourceSetParams = false
		}
		// We want to track if the sourced file explicitly sets the
		// parameters.
		r.sourceSetParams = false
		r.inSource = true // know that we're inside a sourced script.
		r.stmts(ctx, file.Stmts)

		// If we modified the parameters and the sourced file didn't
		// explicitly set them, we restore the old ones.
		if sourceArgs && !r.sourceSetParams {
			r.Params = oldParams
		}
		r.sourceSetParams = oldSourceSetParams
		r.inSource = oldInSource

		exit = r.exit
		exit.returning = false
		if exit.errState == errIgnored {
			exit.errState = errUnchecked // source is a simple command to errexit
		}
	case "[":
		if len(args) == 0 || args[len(args)-1] != "]" {
			return failf(2, "%v: [: missing matching ]\n", pos)
		}
		args = args[:len(args)-1]
		fallthrough
	case "test":
		parseErr := false
		expr := classicTestArgs(args, func(err error) {
			r.errf("%v: %v\n", pos, err)
			parseErr = true
		})
		if parseErr {
			exit.code = 2
			return exit
		}
		r.testErr = false
		res := r.bashTest(ctx, expr, true)
		if r.testErr {
			exit.code = 2
			return exit
		}
		exit.oneIf(res == "")
	case "exec":
		// TODO: Consider unix.Exec, i.e. actually replacing
		// the process. It's in theory what a shell should do,
		// but in practice it would kill the entire Go process
		// and it's not available on Windows.
		if len(args) == 0 {
			r.keepRedirs = true
			break
		}
		r.exit.exiting = true
		r.exec(ctx, pos, args)
		exit = r.exit
	case "command":
		show := false
		fp := flagParser{remaining: args}
		for fp.more() {
			switch flag := fp.flag(); flag {
			case "-p": // a default PATH; programs are looked up the same way
			case "-v":
				show = true
			default:
				return failf(2, "command: invalid option %q\n", flag)
			}
		}
		args := fp.args()
		if len(args) == 0 {
			break
		}
		if !show {
			if IsBuiltin(args[0]) {
				return r.builtin(ctx, pos, args[0], args[1:])
			}
			r.exec(ctx, pos, args)
			exit = r.exit
			return exit
		}
		last := uint8(0)
		for _, arg := range args {
			last = 0
			if r.Funcs[arg] != nil || IsBuiltin(arg) {
				r.outf("%s\n", arg)
			} else if path, err := LookPathDir(r.Dir, r.writeEnv, arg); err == nil {
				r.outf("%s\n", path)
			} else {
				last = 1
			}
		}
		exit.code = last
	case "dirs":
		for i, dir := range slices.Backward(r.dirStack) {
			r.outf("%s", dir)
			if i > 0 {
				r.out(" ")
			}
		}
		r.out("\n")
	case "pushd":
		change := true
		if len(args) > 0 && args[0] == "-n" {
			change = false
			args = args[1:]
		}
		swap := func() string {
			oldtop := r.dirStack[len(r.dirStack)-1]
			top := r.dirStack[len(r.dirStack)-2]
			r.dirStack[len(r.dirStack)-1] = top
			r.dirStack[len(r.dirStack)-2] = oldtop
			return top
		}
		switch len(args) {
		case 0:
			if !change {
				break
			}
			if len(r.dirStack) < 2 {
				return failf(1, "pushd: no other directory\n")
			}
			newtop := swap()
			if code := r.changeDir(ctx, "pushd", newtop); code != 0 {
				exit.code = code
				return exit
			}
			r.builtin(ctx, syntax.Pos{}, "dirs", nil)
		case 1:
			if change {
				if code := r.changeDir(ctx, "pushd", args[0]); code != 0 {
					exit.code = code
					return exit
				}
				r.dirStack = append(r.dirStack, r.Dir)
			} else {
				r.dirStack = append(r.dirStack, args[0])
				swap()
			}
			r.builtin(ctx, syntax.Pos{}, "dirs", nil)
		default:
			return failf(2, "pushd: too many arguments\n")
		}
	case "popd":
		change := true
		if len(args) > 0 && args[0] == "-n" {
			change = false
			args = args[1:]
		}
		switch len(args) {
		case 0:
			if len(r.dirStack) < 2 {
				return failf(1, "popd: directory stack empty\n")
			}
			oldtop := r.dirStack[len(r.dirStack)-1]
			r.dirStack = r.dirStack[:len(r.dirStack)-1]
			if change {
				newtop := r.dirStack[len(r.dirStack)-1]
				if code := r.changeDir(ctx, "popd", newtop); code != 0 {
					exit.code = code
					return exit
				}
			} else {
				r.dirStack[len(r.dirStack)-1] = oldtop
			}
			r.builtin(ctx, syntax.Pos{}, "dirs", nil)
		default:
			return failf(2, "popd: invalid argument\n")
		}
	case "return":
		if !r.inFunc && !r.inSource {
			return failf(2, "return: can only be done from a func or sourced script\n")
		}
		switch len(args) {
		case 0:
			// Like Bash, the status is the last command's.
			exit.code = r.lastExit.code
			exit.err = r.lastExit.err
		case 1:
			n, err := strconv.Atoi(args[0])
			if err != nil {
				return failf(2, "invalid return status code: %q\n", args[0])
			}
			exit.code = uint8(n)
		default:
			return failf(2, "return: too many arguments\n")
		}
		exit.returning = true
	case "read":
		return r.readBuiltin(ctx, args)

	case "getopts":
		if len(args) < 2 {
			return failf(2, "getopts: usage: getopts optstring name [arg ...]\n")
		}
		optind, _ := strconv.Atoi(r.envGet("OPTIND"))
		if optind-1 != r.optState.argidx {
			if optind < 1 {
				optind = 1
			}
			r.optState = getopts{argidx: optind - 1}
		}
		optstr := args[0]
		name := args[1]
		if !syntax.ValidName(name) {
			return failf(2, "getopts: invalid identifier: %q\n", name)
		}
		args = args[2:]
		if len(args) == 0 {
			args = r.Params
		}
		diagnostics := !strings.HasPrefix(optstr, ":")

		opt, optarg, done := r.optState.next(optstr, args)

		r.setVarString(name, string(opt))
		r.delVar("OPTARG")
		switch {
		case opt == '?' && diagnostics && !done:
			r.errf("getopts: illegal option -- %q\n", optarg)
		case opt == ':' && diagnostics:
			r.errf("getopts: option requires an argument -- %q\n", optarg)
		default:
			if optarg != "" {
				r.setVarString("OPTARG", optarg)
			}
		}
		if optind-1 != r.optState.argidx {
			r.setVarString("OPTIND", strconv.FormatInt(int64(r.optState.argidx+1), 10))
		}

		exit.oneIf(done)

	case "shopt":
		mode := ""
		posixOpts := false
		fp := flagParser{remaining: args}
		for fp.more() {
			switch flag := fp.flag(); flag {
			case "-s", "-u":
				mode = flag
			case "-o":
				posixOpts = true
			case "-q":
				mode = "-q"
			case "-p":
				return failf(2, "shopt: unsupported option %q\n", flag)
			default:
				return failf(2, "shopt: invalid option %q\n", flag)
			}
		}
		args := fp.args()
		if len(args) == 0 && mode == "-q" {
			break
		}
		if len(args) == 0 {
			if posixOpts {
				for i, opt := range &posixOptsTable {
					r.printOptLine(opt.name, r.opts[i], true)
				}
			} else {
				for i, opt := range bashOptsTable {
					r.printOptLine(opt.name, r.opts[len(posixOptsTable)+i], opt.supported)
				}
			}
			break
		}
		for _, arg := range args {
			opt, supported := (*bool)(nil), true
			if posixOpts {
				opt = r.posixOptByName(arg)
			} else {
				opt, supported = r.bashOptByName(arg)
			}
			if opt == nil {
				return failf(1, "shopt: invalid option name %q\n", arg)
			}

			switch mode {
			case "-s", "-u":
				if !supported {
					return failf(1, "shopt: unsupported option %q\n", arg)
				}
				*opt = mode == "-s"
			case "-q":
				if !*opt {
					exit.code = 1
				}
			default: // ""
				// Like Bash, listing named options fails if one is off.
				r.printOptLine(arg, *opt, supported)
				if !*opt {
					exit.code = 1
				}
			}
		}
		r.updateExpandOpts()

	case "alias":
		show := func(name string, als alias) {
			var buf bytes.Buffer
			if len(als.args) > 0 {
				printer := syntax.NewPrinter()
				printer.Print(&buf, &syntax.CallExpr{
					Args: als.args,
				})
			}
			if als.blank {
				buf.WriteByte(' ')
			}
			r.outf("alias %s='%s'\n", name, &buf)
		}

		if len(args) == 0 {
			for name, als := range r.alias {
				show(name, als)
			}
		}
	argsLoop:
		for _, arg := range args {
			name, src, ok := strings.Cut(arg, "=")
			if !ok {
				als, ok := r.alias[name]
				if !ok {
					r.errf("alias: %q not found\n", name)
					continue
				}
				show(name, als)
				continue
			}

			// TODO: parse any CallExpr perhaps, or even any Stmt
			parser := syntax.NewParser()
			var words []*syntax.Word
			for w, err := range parser.WordsSeq(strings.NewReader(src)) {
				if err != nil {
					r.errf("alias: could not parse %q: %v\n", src, err)
					continue argsLoop
				}
				words = append(words, w)
			}

			if r.alias == nil {
				r.alias = make(map[string]alias)
			}
			r.alias[name] = alias{
				args:  words,
				blank: strings.TrimRight(src, " \t") != src,
			}
		}
	case "unalias":
		for _, name := range args {
			delete(r.alias, name)
		}

	case "trap":
		fp := flagParser{remaining: args}
		callback := "-"
		for fp.more() {
			switch flag := fp.flag(); flag {
			case "-p":
				for _, sig := range fp.args() {
					switch sig {
					case "EXIT", "0":
						if r.callbackExit != "" {
							r.outf("trap -- %s EXIT\n", expand.QuoteBash(r.callbackExit))
						}
					case "ERR":
						if r.callbackErr != "" {
							r.outf("trap -- %s ERR\n", expand.QuoteBash(r.callbackErr))
						}
					}
				}
				if len(fp.args()) > 0 {
					return exit
				}
				if r.callbackExit != "" {
					r.outf("trap -- %s EXIT\n", expand.QuoteBash(r.callbackExit))
				}
				if r.callbackErr != "" {
					r.outf("trap -- %s ERR\n", expand.QuoteBash(r.callbackErr))
				}
				return exit
			case "-l":
				return failf(2, "trap: %q: NOT IMPLEMENTED flag\n", flag)
			case "-":
				// default signal
			default:
				r.errf("trap: %q: invalid option\n", flag)
				r.errf("trap: usage: trap [-lp] [[arg] signal_spec ...]\n")
				exit.code = 2
				return exit
			}
		}
		args := fp.args()
		switch len(args) {
		case 0:
			// Print non-default signals
			if r.callbackExit != "" {
				r.outf("trap -- %s EXIT\n", expand.QuoteBash(r.callbackExit))
			}
			if r.callbackErr != "" {
				r.outf("trap -- %s ERR\n", expand.QuoteBash(r.callbackErr))
			}
		case 1:
			// assume it's a signal, the default will be restored
		default:
			callback = args[0]
			args = args[1:]
		}
		// For now, treat both empty and - the same since ERR and EXIT have no
		// default callback.
		if callback == "-" {
			callback = ""
		}
		for _, arg := range args {
			switch strings.TrimPrefix(strings.ToUpper(arg), "SIG") {
			case "ERR":
				r.callbackErr = callback
			case "EXIT", "0":
				r.callbackExit = callback
			case "HUP", "1", "INT", "2", "QUIT", "3", "ABRT", "6", "KILL", "9", "USR1", "10",
				"USR2", "12", "PIPE", "13", "ALRM", "14", "TERM", "15", "CHLD", "17", "CONT",
				"18", "STOP", "19", "TSTP", "20", "WINCH", "28", "DEBUG", "RETURN":
				// Accepted, but the interpreter never delivers signals to itself.
			default:
				return failf(2, "trap: %s: invalid signal specification\n", arg)
			}
		}

	case "readarray", "mapfile":
		dropDelim := false
		delim := "\n"
		fp := flagParser{remaining: args}
		for fp.more() {
			switch flag := fp.flag(); flag {
			case "-t":
				// Remove the delim from each line read
				dropDelim = true
			case "-d":
				if len(fp.remaining) == 0 {
					return failf(2, "%s: -d: option requires an argument\n", name)
				}
				delim = fp.value()
				if delim == "" {
					// Bash sets the delim to an ASCII NUL if provided with an empty
					// string.
					delim = "\x00"
				}
			default:
				return failf(2, "%s: invalid option %q\n", name, flag)
			}
		}

		args := fp.args()
		var arrayName string
		switch len(args) {
		case 0:
			arrayName = "MAPFILE"
		case 1:
			if !syntax.ValidName(args[0]) {
				return failf(2, "%s: invalid identifier %q\n", name, args[0])
			}
			arrayName = args[0]
		default:
			return failf(2, "%s: Only one array name may be specified, %v\n", name, args)
		}

		var vr expand.Variable
		vr.Kind = expand.Indexed
		scanner := bufio.NewScanner(r.stdin)
		scanner.Split(mapfileSplit(delim[0], dropDelim))
		for scanner.Scan() {
			vr.List = append(vr.List, scanner.Text())
		}
		if err := scanner.Err(); err != nil {
			return failf(2, "%s: unable to read, %v\n", name, err)
		}
		r.setVar(arrayName, vr)

	case "fg", "bg":
		// Like Bash running a script, the shell has no job control.
		return failf(1, "%s: no job control\n", name)
	case "disown":
		return r.disownBuiltin(args)
	default:
		return failf(2, "%s: unsupported builtin\n", name)
	}
	return exit
}

// disownBuiltin removes jobs from the job table, as Bash's disown: the
// current job, the jobs named, or with -a all of them (-r: those running).
// A disowned job is no longer listed by jobs nor waited for by a wait
// without arguments. -h, which keeps a job from receiving SIGHUP, changes
// nothing here, as jobs never receive it.
func (r *Runner) disownBuiltin(args []string) exitStatus {
	var exit exitStatus
	fp := flagParser{remaining: args}
	all, running, keep := false, false, false
	for fp.more() {
		switch flag := fp.flag(); flag {
		case "-a":
			all = true
		case "-r":
			running = true
		case "-h":
			keep = true
		default:
			r.errf("disown: %s: invalid option\n", flag)
			r.errf("disown: usage: disown [-h] [-ar] [jobspec ... | pid ...]\n")
			exit.code = 2
			return exit
		}
	}
	var jobs []*bgProc
	switch specs := fp.args(); {
	case len(specs) > 0:
		for _, spec := range specs {
			bg, _ := r.findBgProc("disown", spec)
			if bg == nil {
				exit.code = 1
				continue
			}
			jobs = append(jobs, bg)
		}
	case all || running:
		for _, bg := range r.bgProcs {
			if bg.job > 0 && !bg.waited {
				jobs = append(jobs, bg)
			}
		}
	default:
		bg, _ := r.findBgProc("disown", "%+")
		if bg == nil {
			exit.code = 1
		} else {
			jobs = append(jobs, bg)
		}
	}
	for _, bg := range jobs {
		if running {
			select {
			case <-bg.done:
				continue
			default:
			}
		}
		if !keep {
			bg.waited = true
			bg.disowned = true
		}
	}
	return exit
}

// writeOut writes the output of a builtin like echo. A write to a pipe whose
// reader went away is not reported, as a shell's builtin would be ended by
// SIGPIPE; other write errors are returned.
func (r *Runner) writeOut(s string) error {
	_, err := io.WriteString(r.stdout, s)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// mapfileSplit returns a suitable Split function for a [bufio.Scanner];
// the code is mostly stolen from [bufio.ScanLines].
func mapfileSplit(delim byte, dropDelim bool) bufio.SplitFunc {
	return func(data []byte, atEOF bool) (advance int, token []byte, err error) {
		if atEOF && len(data) == 0 {
			return 0, nil, nil
		}
		if i := bytes.IndexByte(data, delim); i >= 0 {
			// We have a full newline-terminated line.
			if dropDelim {
				return i + 1, data[0:i], nil
			} else {
				return i + 1, data[0 : i+1], nil
			}
		}
		// If we're at EOF, we have a final, non-terminated line. Return it.
		if atEOF {
			return len(data), data, nil
		}
		// Request more data.
		return 0, nil, nil
	}
}

func (r *Runner) printOptLine(name string, enabled, supported bool) {
	state := r.optStatusText(enabled)
	// Like Bash, the name is padded to 15 columns before the tab.
	if supported {
		r.outf("%-15s\t%s\n", name, state)
		return
	}
	r.outf("%-15s\t%s\t(%q not supported)\n", name, state, r.optStatusText(!enabled))
}

func (r *Runner) readLine(ctx context.Context, raw bool) ([]byte, error) {
	line, err := r.readInput(ctx, r.stdin, readOpts{raw: raw, delim: '\n', nchars: -1})
	if err == nil {
		return line, nil
	}
	return line, err
}

// readOpts are the options of the read builtin which decide what it reads.
type readOpts struct {
	raw     bool      // -r: a backslash does not escape the next character
	delim   byte      // -d: the character that ends the input, a newline by default
	nchars  int       // -n or -N: how many characters to read at most, or -1
	exact   bool      // -N: the delimiter is not special
	timeout time.Time // -t: when to give up, or zero
}

// errReadTimeout is read's -t running out.
var errReadTimeout = errors.New("timed out")

// readInput reads one input unit for read: up to the delimiter, which is
// dropped, or up to a number of characters. Without raw, a backslash
// escapes the next character and is kept for field splitting, and a
// backslash before the delimiter continues the input. The error is io.EOF
// when the input ended first, or errReadTimeout.
func (r *Runner) readInput(ctx context.Context, f stdinFile, o readOpts) ([]byte, error) {
	if f == nil {
		return nil, errors.New("interp: can't read, there's no stdin")
	}
	var line []byte
	esc := false
	if !o.timeout.IsZero() {
		f.SetReadDeadline(o.timeout)
		defer f.SetReadDeadline(time.Time{})
	}
	stopc := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		f.SetReadDeadline(time.Now())
		close(stopc)
	})
	defer func() {
		if !stop() {
			// The AfterFunc was started.
			// Wait for it to complete, and reset the file's deadline.
			<-stopc
			f.SetReadDeadline(time.Time{})
		}
	}()
	var buf [utf8.UTFMax]byte
	for chars := 0; o.nchars < 0 || chars < o.nchars; {
		n, err := f.Read(buf[:1])
		if n > 0 {
			if b := buf[0]; b >= 0xc0 {
				// Read the rest of a multibyte character, so that -n counts characters.
				size := 2
				if b >= 0xf0 {
					size = 4
				} else if b >= 0xe0 {
					size = 3
				}
				m, _ := io.ReadFull(f, buf[1:size])
				n += m
			}
			b := buf[0]
			switch {
			case !o.raw && b == '\\' && !esc:
				line = append(line, b)
				esc = true
				continue // the escaped character counts, not the backslash
			case !o.raw && esc && b == o.delim && !o.exact:
				// line continuation; drop the trailing backslash
				line = line[:len(line)-1]
				esc = false
				continue
			case b == o.delim && !o.exact && n == 1:
				return line, nil
			}
			line = append(line, buf[:n]...)
			esc = false
			chars++
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
				return line, errReadTimeout
			}
			return line, err
		}
	}
	return line, nil
}

// readBuiltin is the read builtin.
func (r *Runner) readBuiltin(ctx context.Context, args []string) (exit exitStatus) {
	failf := func(code uint8, format string, args ...any) exitStatus {
		r.errf(format, args...)
		exit.code = code
		return exit
	}
	o := readOpts{delim: '\n', nchars: -1}
	var prompt, arrayName string
	silent, readArray := false, false
	fd := 0
	fp := flagParser{remaining: args}
	for fp.more() {
		flag := fp.flag()
		value := func() (string, bool) {
			if fp.current != "" {
				// The rest of a group like -n1 or -d,.
				v := fp.current[1:]
				fp.current = ""
				return v, true
			}
			if len(fp.remaining) == 0 {
				r.errf("read: %s: option requires an argument\n", flag)
				return "", false
			}
			return fp.value(), true
		}
		switch flag {
		case "-s":
			silent = true
		case "-r":
			o.raw = true
		case "-e", "-E": // readline editing, only for terminals
		case "-a", "-p", "-d", "-n", "-N", "-t", "-u", "-i":
			v, ok := value()
			if !ok {
				exit.code = 2
				return exit
			}
			switch flag {
			case "-a":
				readArray, arrayName = true, v
			case "-p":
				prompt = v
			case "-d":
				o.delim = 0 // -d '' reads up to a NUL byte
				if v != "" {
					o.delim = v[0]
				}
			case "-n", "-N":
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return failf(2, "read: %s: invalid number\n", v)
				}
				o.nchars, o.exact = n, flag == "-N"
			case "-t":
				secs, err := strconv.ParseFloat(v, 64)
				if err != nil || secs < 0 {
					return failf(2, "read: %s: invalid timeout specification\n", v)
				}
				if secs == 0 {
					// Only report whether input is available; assume it is.
					exit.oneIf(r.stdin == nil)
					return exit
				}
				o.timeout = time.Now().Add(time.Duration(secs * float64(time.Second)))
			case "-u":
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return failf(1, "read: %s: invalid file descriptor specification\n", v)
				}
				fd = n
			}
		default:
			return failf(2, "read: %s: invalid option\n", flag)
		}
	}
	args = fp.args()
	if readArray {
		args = []string{arrayName}
	}
	for _, name := range args {
		if !syntax.ValidName(name) {
			if _, _, ok := cutElemSubscript(name); !ok || readArray {
				return failf(1, "read: `%s': not a valid identifier\n", name)
			}
		}
	}
	in := r.stdin
	if fd != 0 {
		e, ok := r.getFd(fd)
		if !ok || (e.r == nil && !e.empty) {
			return failf(1, "read: %d: invalid file descriptor: Bad file descriptor\n", fd)
		}
		in = e.r
	}
	if prompt != "" {
		if _, terminal := stdinTerminal(in); terminal {
			r.errf("%s", prompt)
		}
	}

	var line []byte
	var err error
	termFd, terminal := -1, false
	if silent {
		termFd, terminal = stdinTerminal(in)
	}
	if terminal {
		// Only a terminal echoes what we read, so it is the only case
		// where we need to read without echoing.
		line, err = term.ReadPassword(termFd)
	} else {
		line, err = r.readInput(ctx, in, o)
	}
	switch {
	case readArray:
		// read -a name: split the input into the elements of an indexed array.
		values := expand.ReadFields(r.ecfg, string(line), -1, o.raw)
		r.setVar(arrayName, expand.Variable{
			Set:  true,
			Kind: expand.Indexed,
			List: values,
		})
	case len(args) == 0:
		// Bare "read" assigns the whole input to REPLY without any
		// trimming, only discarding backslash escapes unless raw.
		val := string(line)
		if !o.raw {
			var sb strings.Builder
			esc := false
			for i := range len(val) {
				if val[i] == '\\' && !esc {
					esc = true
					continue
				}
				sb.WriteByte(val[i])
				esc = false
			}
			val = sb.String()
		}
		r.setVarString(shellReplyVar, val)
	default:
		values := expand.ReadFields(r.ecfg, string(line), len(args), o.raw)
		for i, name := range args {
			val := ""
			if i < len(values) {
				val = values[i]
			}
			r.setVarRef(name, val)
		}
	}

	// We can get data back from readInput and an error at the same time, so
	// check err after we process the data.
	switch {
	case errors.Is(err, errReadTimeout):
		exit.code = 128 + 14 // like Bash, as if killed by SIGALRM
	case err != nil:
		exit.code = 1
	}
	return exit
}

func (r *Runner) changeDir(ctx context.Context, cmd, path string) uint8 {
	if path == "" {
		r.errf("%s: empty directory path\n", cmd)
		return 1
	}
	apath := r.absPath(path)
	info, err := r.stat(ctx, apath)
	if err != nil || !info.IsDir() {
		r.errf("%s: no such file or directory: %q\n", cmd, path)
		return 1
	}
	if r.access(ctx, apath, AccessExec) != nil {
		r.errf("%s: permission denied: %q\n", cmd, path)
		return 1
	}
	r.Dir = apath
	r.setVarString("OLDPWD", r.envGet("PWD"))
	r.setVarString("PWD", apath)
	return 0
}

func absPath(dir, path string) string {
	if path == "" {
		return ""
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	// Note that [filepath.Join] cleans its result, but an already absolute
	// path needs cleaning too, such as turning "/a/../b" into "/b".
	return filepath.Clean(path)
}

func (r *Runner) absPath(path string) string {
	return absPath(r.Dir, path)
}

// flagParser is used to parse builtin flags.
//
// It's similar to the getopts implementation, but with some key differences.
// First, the API is designed for Go loops, making it easier to use directly.
// Second, it doesn't require the awkward ":ab" syntax that getopts uses.
// Third, it supports "-a" flags as well as "+a".
type flagParser struct {
	current   string
	remaining []string
}

func (p *flagParser) more() bool {
	if p.current != "" {
		// We're still parsing part of "-ab".
		return true
	}
	if len(p.remaining) == 0 {
		// Nothing left.
		p.remaining = nil
		return false
	}
	arg := p.remaining[0]
	if arg == "--" {
		// We explicitly stop parsing flags.
		p.remaining = p.remaining[1:]
		return false
	}
	if len(arg) == 0 || (arg[0] != '-' && arg[0] != '+') {
		// The next argument is not a flag.
		return false
	}
	// More flags to come.
	return true
}

func (p *flagParser) flag() string {
	arg := p.current
	if arg == "" {
		arg = p.remaining[0]
		p.remaining = p.remaining[1:]
	} else {
		p.current = ""
	}
	if len(arg) > 2 {
		// We have "-ab", so return "-a" and keep "-b".
		p.current = arg[:1] + arg[2:]
		arg = arg[:2]
	}
	return arg
}

func (p *flagParser) value() string {
	if len(p.remaining) == 0 {
		return ""
	}
	arg := p.remaining[0]
	p.remaining = p.remaining[1:]
	return arg
}

func (p *flagParser) args() []string { return p.remaining }

type getopts struct {
	argidx  int
	runeidx int
}

func (g *getopts) next(optstr string, args []string) (opt rune, optarg string, done bool) {
	if len(args) == 0 || g.argidx >= len(args) {
		return '?', "", true
	}
	arg := []rune(args[g.argidx])
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return '?', "", true
	}

	opts := arg[1:]
	opt = opts[g.runeidx]

	i := strings.IndexRune(optstr, opt)
	if i >= 0 && i+1 < len(optstr) && optstr[i+1] == ':' {
		// the option requires an argument
		if g.runeidx+1 < len(opts) {
			// attached to the option in the same word, like -bval
			optarg = string(opts[g.runeidx+1:])
		} else if g.argidx+1 < len(args) {
			// the word that follows
			optarg = args[g.argidx+1]
			g.argidx++
		} else {
			// missing argument
			g.argidx++
			g.runeidx = 0
			return ':', string(opt), false
		}
		g.argidx++
		g.runeidx = 0
		return opt, optarg, false
	}

	if g.runeidx+1 < len(opts) {
		g.runeidx++
	} else {
		g.argidx++
		g.runeidx = 0
	}
	if i < 0 {
		// invalid option
		return '?', string(opt), false
	}
	return opt, "", false
}

// optStatusText returns a shell option's status text display
func (r *Runner) optStatusText(status bool) string {
	if status {
		return "on"
	}
	return "off"
}

// waitBuiltin is Bash's wait without job control: with no arguments it
// waits for every background shell and returns 0; with ids (pids from $!
// or job specs %N, %%, %+, %-) it returns the status of the last one;
// with -n it waits for the next job of the table, or of the ids, to end.
// -p VAR stores the pid of the job whose status is returned, and -f is
// accepted and does nothing, as in Bash when job control is off.
func (r *Runner) waitBuiltin(args []string) exitStatus {
	var exit exitStatus
	fp := flagParser{remaining: args}
	next, pidVar := false, ""
	for fp.more() {
		switch flag := fp.flag(); flag {
		case "-n":
			next = true
		case "-f":
		case "-p":
			if pidVar = fp.value(); pidVar == "" {
				r.errf("wait: -p: option requires an argument\n")
				exit.code = 2
				return exit
			}
		default:
			r.errf("wait: %s: invalid option\nwait: usage: wait [-fn] [-p var] [id ...]\n", flag)
			exit.code = 2
			return exit
		}
	}
	args = fp.args()
	if pidVar != "" && !syntax.ValidName(pidVar) {
		r.errf("wait: `%s': not a valid identifier\n", pidVar)
		exit.code = 2
		return exit
	}
	report := func(bg *bgProc) {
		if !bg.waited {
			r.reportSignal(bg)
		}
		bg.waited = true
		exit = *bg.exit
		if pidVar != "" {
			r.setVarString(pidVar, strconv.Itoa(bg.pid))
		}
	}
	var ids []*bgProc
	for _, arg := range args {
		bg, code := r.findBgProc("wait", arg)
		if bg == nil {
			exit.code = code
			if !next {
				continue
			}
			return exit
		}
		if next {
			ids = append(ids, bg)
			continue
		}
		<-bg.done
		report(bg)
		if bg.panicked() {
			return exit
		}
	}
	if !next {
		if len(args) == 0 {
			// Note that "wait" without arguments always returns exit status zero.
			for _, bg := range r.bgProcs {
				if bg.disowned {
					continue
				}
				<-bg.done
				if bg.job > 0 && !bg.waited {
					r.reportSignal(bg)
				}
				bg.waited = bg.job > 0
				if bg.panicked() {
					return *bg.exit
				}
			}
		}
		return exit
	}
	if len(args) == 0 {
		for _, bg := range r.bgProcs {
			if bg.job > 0 && !bg.waited {
				ids = append(ids, bg)
			}
		}
	}
	if len(ids) == 0 {
		exit.code = 127
		return exit
	}
	// Report a job that already ended first, in the order they started.
	for _, bg := range ids {
		select {
		case <-bg.done:
			report(bg)
			return exit
		default:
		}
	}
	cases := make([]reflect.SelectCase, len(ids))
	for i, bg := range ids {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(bg.done)}
	}
	i, _, _ := reflect.Select(cases)
	report(ids[i])
	return exit
}

// jobsBuiltin is Bash's jobs without job control: it lists the jobs of the
// table that are still running, as "[N]+  Running  command &", or their
// pids with -p. A job that has ended is no longer listed, as Bash drops it
// silently without job control. -l adds the pid; -r and -n list the same
// jobs, -s none, as no job is ever stopped.
func (r *Runner) jobsBuiltin(args []string) exitStatus {
	var exit exitStatus
	fp := flagParser{remaining: args}
	mode := ""
	for fp.more() {
		switch flag := fp.flag(); flag {
		case "-p", "-l", "-s":
			mode = flag
		case "-r", "-n":
		case "-x":
			r.errf("jobs: -x is not supported\n")
			exit.code = 2
			return exit
		default:
			r.errf("jobs: %s: invalid option\njobs: usage: jobs [-lnprs] [jobspec ...] or jobs -x command [args]\n", flag)
			exit.code = 2
			return exit
		}
	}
	jobs := r.jobTable()
	mark := func(bg *bgProc) byte {
		switch {
		case bg == jobs[len(jobs)-1]:
			return '+'
		case len(jobs) > 1 && bg == jobs[len(jobs)-2]:
			return '-'
		}
		return ' '
	}
	list := jobs
	if specs := fp.args(); len(specs) > 0 {
		list = nil
		for _, spec := range specs {
			// A subshell's table holds its parent's jobs too, as its
			// listing does.
			if bg := jobInTable(jobs, spec); bg != nil {
				list = append(list, bg)
				continue
			}
			bg, code := r.findBgProc("jobs", spec)
			if bg == nil {
				exit.code = min(code, 1)
				continue
			}
			list = append(list, bg)
		}
	}
	for _, bg := range list {
		select {
		case <-bg.done:
			continue // ended: no longer listed
		default:
		}
		if mode == "-s" {
			continue
		}
		if mode == "-p" {
			r.outf("%d\n", bg.pid)
			continue
		}
		var sb strings.Builder
		syntax.NewPrinter().Print(&sb, bg.stmt)
		text := strings.TrimSpace(sb.String())
		if mode == "-l" {
			r.outf("[%d]%c %d %-24s%s &\n", bg.job, mark(bg), bg.pid, "Running", text)
		} else {
			r.outf("[%d]%c  %-24s%s &\n", bg.job, mark(bg), "Running", text)
		}
	}
	return exit
}

// findBgProc finds the background shell that a wait argument names, a pid
// or a job spec, or reports why there is none and the status for it.
// jobInTable finds a job spec (%N, %%, %+, %-) in a job table, or returns nil.
func jobInTable(jobs []*bgProc, arg string) *bgProc {
	spec, ok := strings.CutPrefix(arg, "%")
	if !ok || len(jobs) == 0 {
		return nil
	}
	switch spec {
	case "", "%", "+":
		return jobs[len(jobs)-1]
	case "-":
		if len(jobs) > 1 {
			return jobs[len(jobs)-2]
		}
		return jobs[0]
	}
	n, err := strconv.Atoi(spec)
	if err != nil {
		return nil
	}
	for _, bg := range jobs {
		if bg.job == n {
			return bg
		}
	}
	return nil
}

func (r *Runner) findBgProc(builtin, arg string) (*bgProc, uint8) {
	spec, isJob := strings.CutPrefix(arg, "%")
	if !isJob {
		pid, err := strconv.Atoi(arg)
		if err != nil || pid <= 0 {
			r.errf("%s: `%s': not a pid or valid job spec\n", builtin, arg)
			return nil, 1
		}
		for _, bg := range r.bgProcs {
			if bg.pid == pid {
				return bg, 0
			}
		}
		if builtin == "kill" {
			r.errf("%s: (%s) - No such process\n", builtin, arg)
			return nil, 1
		}
		r.errf("%s: pid %s is not a child of this shell\n", builtin, arg)
		return nil, 127
	}
	var jobs []*bgProc // the job table, in order of job number
	for _, bg := range r.bgProcs {
		if bg.job > 0 && !bg.waited {
			jobs = append(jobs, bg)
		}
	}
	slices.SortStableFunc(jobs, func(a, b *bgProc) int { return a.job - b.job })
	switch {
	case spec == "" || spec == "%" || spec == "+":
		if len(jobs) > 0 {
			return jobs[len(jobs)-1], 0
		}
		r.errf("%s: %s: no current job\n", builtin, arg)
		return nil, 127
	case spec == "-":
		if len(jobs) > 1 {
			return jobs[len(jobs)-2], 0
		}
		if len(jobs) == 1 {
			return jobs[0], 0
		}
		r.errf("%s: %s: no previous job\n", builtin, arg)
		return nil, 127
	}
	n, err := strconv.Atoi(spec)
	if err != nil {
		r.errf("%s: %s: job specifications by command name are not supported\n", builtin, arg)
		return nil, 2
	}
	for _, bg := range jobs {
		if bg.job == n {
			return bg, 0
		}
	}
	r.errf("%s: %s: no such job\n", builtin, arg)
	return nil, 127
}
