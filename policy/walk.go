package policy

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// lang is the shell dialect a script is parsed in.
type lang uint8

const (
	langSh  lang = iota // sh, bash, dash, ash, busybox sh, ...: parsed as bash, a superset
	langZsh             // zsh
	langKsh             // ksh, mksh
	langEnd
)

var parsers [langEnd]sync.Pool

func init() {
	variants := [langEnd]syntax.LangVariant{syntax.LangBash, syntax.LangZsh, syntax.LangMirBSDKorn}
	for i := range parsers {
		v := variants[i]
		parsers[i].New = func() any { return syntax.NewParser(syntax.Variant(v)) }
	}
}

func parse(src string, l lang) (*syntax.File, error) {
	p := parsers[l].Get().(*syntax.Parser)
	defer parsers[l].Put(p)
	return p.Parse(strings.NewReader(src), "")
}

// stdin says where a command's standard input comes from, which matters for a shell that reads
// its script from it.
type stdin uint8

const (
	stdinInherited stdin = iota // the caller's: empty for the bash tool
	stdinUnknown                // a pipe or a file: cannot be inspected
	stdinDoc                    // a here-document or here-string: ctx.doc
)

// ctx is what a command inherits from where it appears.
type ctx struct {
	lang  lang
	stdin stdin
	doc   arg // the here-document text when stdin == stdinDoc
}

// script parses src as a shell script in dialect l and inspects it.
func (c *checker) script(src string, l lang, x ctx) {
	if c.denied {
		return
	}
	if c.depth >= maxDepth {
		c.denyNet(src, "scripts are nested too deeply to inspect")
		return
	}
	f, err := parse(src, l)
	if err != nil {
		c.denyNet(src, "script cannot be parsed, so it cannot be inspected: "+err.Error())
		return
	}
	c.depth++
	outer := c.consts
	c.consts = collectConsts(f)
	defer func() { c.depth--; c.consts = outer }()
	x.lang = l
	for i, s := range f.Stmts {
		if c.denied {
			return
		}
		c.consts.cur = i
		c.stmt(s, x, src)
	}
}

func (c *checker) stmts(ss []*syntax.Stmt, x ctx, src string) {
	for _, s := range ss {
		if c.denied {
			return
		}
		c.stmt(s, x, src)
	}
}

// execRedirectsStdin reports whether s is a bare exec that replaces the shell's stdin.
func execRedirectsStdin(s *syntax.Stmt) bool {
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) != 1 || ce.Args[0].Lit() != "exec" {
		return false
	}
	for _, r := range s.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			return true
		}
	}
	return false
}

func (c *checker) stmt(s *syntax.Stmt, x ctx, src string) {
	if execRedirectsStdin(s) {
		// `exec <file` or `exec <<EOF`: later commands read that as their stdin (see Check).
		c.execStdin = true
	}
	for _, r := range s.Redirs {
		if r.Word != nil {
			c.walk(r.Word, x, src)
		}
		if r.Hdoc != nil {
			c.walk(r.Hdoc, x, src)
		}
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
			if r.Word == nil {
				x.stdin = stdinUnknown
			} else if t, k := wordText(r.Word); k == static && (t == "/dev/null" || r.Op == syntax.DplIn && (t == "-" || t == "0")) {
				x.stdin, x.doc = stdinDoc, arg{}
			} else {
				x.stdin = stdinUnknown
			}
		case syntax.Hdoc, syntax.DashHdoc:
			t, k := heredocText(r.Word, r.Hdoc)
			x.stdin, x.doc = stdinDoc, arg{s: t, k: k, src: srcOf(src, r.Hdoc)}
		case syntax.WordHdoc:
			if r.Word == nil {
				continue
			}
			t, k := wordText(r.Word)
			x.stdin, x.doc = stdinDoc, arg{s: t + "\n", k: k, src: srcOf(src, r.Word)}
		}
	}
	if c.denied || s.Cmd == nil {
		return
	}
	switch cmd := s.Cmd.(type) {
	case *syntax.CallExpr:
		c.call(cmd, x, src)
	case *syntax.BinaryCmd:
		c.stmt(cmd.X, x, src)
		if cmd.Op == syntax.Pipe || cmd.Op == syntax.PipeAll {
			x.stdin = stdinUnknown
		}
		c.stmt(cmd.Y, x, src)
	case *syntax.DeclClause:
		for _, a := range cmd.Args {
			switch {
			case a.Name != nil && a.Value != nil:
				c.assign(a.Name.Value, c.resolveWord(a.Value, srcOf(src, a.Value)), x)
			case a.Naked && a.Name == nil && a.Value != nil: // export "PAGER=..."
				v := c.resolveWord(a.Value, srcOf(src, a.Value))
				if name, val, ok := envAssign(v.s); ok && v.k == static {
					c.assign(name, lit(val), x)
				}
			}
		}
		c.walk(cmd, x, src)
	case *syntax.FuncDecl, *syntax.CoprocClause:
		// A function body runs with its caller's stdin, a coprocess reads a pipe: a shell
		// reading its script from stdin there cannot be inspected.
		x.stdin = stdinUnknown
		c.walk(cmd, x, src)
	default:
		c.walk(cmd, x, src)
	}
}

// walk inspects every statement, command substitution and word under n (n itself is never a
// statement): nested statements get their own stmt call, words are scanned for URLs.
func (c *checker) walk(n syntax.Node, x ctx, src string) {
	if c.visitFn == nil {
		c.visitFn = c.visit // one allocation per Check, not one per walk
	}
	px, psrc := c.wx, c.wsrc
	c.wx, c.wsrc = x, src
	syntax.Walk(n, c.visitFn)
	c.wx, c.wsrc = px, psrc
}

func (c *checker) visit(n syntax.Node) bool {
	if c.denied {
		return false
	}
	switch n := n.(type) {
	case *syntax.Stmt:
		c.stmt(n, c.wx, c.wsrc)
		return false
	case *syntax.CmdSubst:
		c.stmts(n.Stmts, ctx{lang: c.wx.lang}, c.wsrc)
		return false
	case *syntax.ProcSubst:
		c.stmts(n.Stmts, ctx{lang: c.wx.lang}, c.wsrc)
		return false
	case *syntax.Word:
		t, _ := wordText(n)
		c.scanText(t)
	}
	return true
}

// call inspects a simple command: its assignments, its words, then the command itself.
func (c *checker) call(ce *syntax.CallExpr, x ctx, src string) {
	for _, a := range ce.Assigns {
		c.walk(a, x, src)
		if a.Name != nil && a.Value != nil && !c.denied {
			c.assign(a.Name.Value, c.resolveWord(a.Value, srcOf(src, a.Value)), x)
		}
	}
	if len(ce.Args) == 0 || c.denied {
		return
	}
	// The words live in c.argBuf: commands nested in them append after them and truncate
	// back, so one buffer serves the whole Check.
	start := len(c.argBuf)
	defer func() { c.argBuf = c.argBuf[:start] }()
	for _, w := range ce.Args {
		if !literalWord(w) {
			// A variable assigned a constant earlier in the script is that constant.
			if as, ok := c.consts.resolve(w, srcOf(src, w)); ok {
				for _, a := range as {
					c.scanText(a.s)
				}
				c.argBuf = append(c.argBuf, as...)
				continue
			}
		}
		t, k := wordText(w)
		c.scanText(t)
		if !literalWord(w) {
			c.walk(w, x, src) // substitutions and the words nested in expansions
		}
		if c.denied {
			return
		}
		if hasBraceCandidate(w) {
			c.argBuf = c.appendBraces(c.argBuf, w, src)
			continue
		}
		a := arg{s: t, k: k, src: srcOf(src, w)}
		knownBase(&a)
		c.argBuf = append(c.argBuf, a)
	}
	end := len(c.argBuf)
	c.argv(c.argBuf[start:end:end], x) // capped: a handler's append cannot write into the buffer
}

// literalWord reports whether w holds only literal text (no expansion or substitution).
func literalWord(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}
