package coreutils

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

func init() { register("find", find) }

// findNode is one node of find's expression.
type findNode struct {
	op   string // "and", "or", "not", "pred"
	kids []*findNode
	pred func(p string, info fs.FileInfo, depth int) bool
}

type findCtx struct {
	e        *Env
	args     []string
	pos      int
	maxDepth int
	minDepth int
	action   bool
	execs    []func(p string) bool
	status   int
	batch    [][]string // -exec ... + accumulators
	batchCmd [][]string
	prune    bool
	err      error
}

func find(e *Env, args []string) int {
	rest := args[1:]
	var roots []string
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && rest[0] != "!" && rest[0] != "(" {
		roots = append(roots, rest[0])
		rest = rest[1:]
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	fc := &findCtx{e: e, args: rest, maxDepth: -1}
	var expr *findNode
	if len(rest) > 0 {
		expr = fc.parseOr()
		if fc.err == nil && fc.pos < len(fc.args) {
			fc.err = fmt.Errorf("unexpected argument '%s'", fc.args[fc.pos])
		}
		if fc.err != nil {
			return e.fail("find", "%v", fc.err)
		}
	}
	out := e.Stdout
	status := 0
	for _, root := range roots {
		abs := e.Abs(root)
		info, err := e.FS.Stat(abs, false)
		if err != nil {
			e.errf("find", "'%s': %s", root, ErrText(err))
			status = 1
			continue
		}
		var visit func(label, abs string, info fs.FileInfo, depth int) bool
		visit = func(label, abs string, info fs.FileInfo, depth int) bool {
			if e.Ctx.Err() != nil {
				return false
			}
			fc.prune = false
			if depth >= fc.minDepth {
				matched := expr == nil || fc.eval(expr, label, info, depth)
				if matched && !fc.action {
					if _, err := fmt.Fprintln(out, label); err != nil {
						return false
					}
				}
			}
			if !info.IsDir() || fc.prune || (fc.maxDepth >= 0 && depth >= fc.maxDepth) {
				return true
			}
			ents, err := e.FS.ReadDir(abs)
			if err != nil {
				e.errf("find", "'%s': %s", label, ErrText(err))
				status = 1
				return true
			}
			for _, d := range ents {
				ci, err := d.Info()
				if err != nil {
					continue
				}
				cl := label + "/" + d.Name()
				if strings.HasSuffix(label, "/") {
					cl = label + d.Name()
				}
				if !visit(cl, path.Join(abs, d.Name()), ci, depth+1) {
					return false
				}
			}
			return true
		}
		if !visit(root, abs, info, 0) {
			if e.Ctx.Err() != nil {
				return 130
			}
		}
	}
	fc.flushBatches()
	if fc.status != 0 {
		status = fc.status
	}
	return status
}

func (fc *findCtx) next() (string, bool) {
	if fc.pos >= len(fc.args) {
		return "", false
	}
	a := fc.args[fc.pos]
	fc.pos++
	return a, true
}

func (fc *findCtx) parseOr() *findNode {
	left := fc.parseAnd()
	for fc.pos < len(fc.args) && (fc.args[fc.pos] == "-o" || fc.args[fc.pos] == "-or") {
		fc.pos++
		right := fc.parseAnd()
		left = &findNode{op: "or", kids: []*findNode{left, right}}
	}
	return left
}

func (fc *findCtx) parseAnd() *findNode {
	left := fc.parseNot()
	for fc.pos < len(fc.args) && fc.err == nil {
		a := fc.args[fc.pos]
		if a == "-o" || a == "-or" || a == ")" {
			break
		}
		if a == "-a" || a == "-and" {
			fc.pos++
		}
		right := fc.parseNot()
		left = &findNode{op: "and", kids: []*findNode{left, right}}
	}
	return left
}

func (fc *findCtx) parseNot() *findNode {
	if fc.pos < len(fc.args) && (fc.args[fc.pos] == "!" || fc.args[fc.pos] == "-not") {
		fc.pos++
		return &findNode{op: "not", kids: []*findNode{fc.parseNot()}}
	}
	return fc.parsePrimary()
}

func (fc *findCtx) parsePrimary() *findNode {
	a, ok := fc.next()
	if !ok {
		fc.err = fmt.Errorf("expected an expression")
		return &findNode{op: "pred", pred: func(string, fs.FileInfo, int) bool { return true }}
	}
	always := func(f func(p string, info fs.FileInfo, depth int) bool) *findNode {
		return &findNode{op: "pred", pred: f}
	}
	arg := func() string {
		v, ok := fc.next()
		if !ok {
			fc.err = fmt.Errorf("missing argument to '%s'", a)
		}
		return v
	}
	switch a {
	case "(":
		n := fc.parseOr()
		if v, ok := fc.next(); !ok || v != ")" {
			fc.err = fmt.Errorf("invalid expression; expected ')'")
		}
		return n
	case "-name", "-iname":
		pat := arg()
		fold := a == "-iname"
		return always(func(p string, _ fs.FileInfo, _ int) bool {
			base := path.Base(p)
			if fold {
				ok, _ := path.Match(strings.ToLower(pat), strings.ToLower(base))
				return ok
			}
			ok, _ := path.Match(pat, base)
			return ok
		})
	case "-path", "-ipath", "-wholename":
		pat := arg()
		fold := a == "-ipath"
		return always(func(p string, _ fs.FileInfo, _ int) bool {
			if fold {
				return globMatch(strings.ToLower(pat), strings.ToLower(p))
			}
			return globMatch(pat, p)
		})
	case "-type":
		t := arg()
		return always(func(_ string, info fs.FileInfo, _ int) bool {
			m := info.Mode()
			for _, c := range strings.Split(t, ",") {
				switch c {
				case "f":
					if m.IsRegular() {
						return true
					}
				case "d":
					if m.IsDir() {
						return true
					}
				case "l":
					if m&fs.ModeSymlink != 0 {
						return true
					}
				case "c":
					if m&fs.ModeCharDevice != 0 {
						return true
					}
				}
			}
			return false
		})
	case "-maxdepth", "-mindepth":
		v := arg()
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fc.err = fmt.Errorf("invalid argument '%s' to '%s'", v, a)
		}
		if a == "-maxdepth" {
			fc.maxDepth = n
		} else {
			fc.minDepth = n
		}
		return always(func(string, fs.FileInfo, int) bool { return true })
	case "-empty":
		return always(func(p string, info fs.FileInfo, _ int) bool {
			if info.IsDir() {
				ents, err := fc.e.FS.ReadDir(fc.e.Abs(p))
				return err == nil && len(ents) == 0
			}
			return info.Size() == 0
		})
	case "-size":
		v := arg()
		return always(func(_ string, info fs.FileInfo, _ int) bool { return sizeMatch(v, info.Size()) })
	case "-newer":
		ref := arg()
		ri, err := fc.e.FS.Stat(fc.e.Abs(ref), true)
		if err != nil {
			fc.err = fmt.Errorf("'%s': %s", ref, ErrText(err))
			return always(func(string, fs.FileInfo, int) bool { return false })
		}
		return always(func(_ string, info fs.FileInfo, _ int) bool { return info.ModTime().After(ri.ModTime()) })
	case "-true":
		return always(func(string, fs.FileInfo, int) bool { return true })
	case "-false":
		return always(func(string, fs.FileInfo, int) bool { return false })
	case "-prune":
		return always(func(string, fs.FileInfo, int) bool { fc.prune = true; return true })
	case "-print", "-print0":
		fc.action = true
		end := "\n"
		if a == "-print0" {
			end = "\x00"
		}
		return always(func(p string, _ fs.FileInfo, _ int) bool {
			fmt.Fprint(fc.e.Stdout, p+end)
			return true
		})
	case "-delete":
		fc.action = true
		return always(func(p string, info fs.FileInfo, _ int) bool {
			var err error
			if info.IsDir() {
				err = fc.e.FS.RemoveAll(fc.e.Abs(p))
				fc.prune = true
			} else {
				err = fc.e.FS.Remove(fc.e.Abs(p))
			}
			if err != nil {
				fc.e.errf("find", "cannot delete '%s': %s", p, ErrText(err))
				fc.status = 1
				return false
			}
			return true
		})
	case "-exec", "-execdir", "-ok":
		fc.action = true
		var cmd []string
		plus := false
		for {
			v, ok := fc.next()
			if !ok {
				fc.err = fmt.Errorf("missing argument to '%s'", a)
				break
			}
			if v == ";" {
				break
			}
			if v == "+" && len(cmd) > 0 && cmd[len(cmd)-1] == "{}" {
				plus = true
				cmd = cmd[:len(cmd)-1]
				break
			}
			cmd = append(cmd, v)
		}
		if len(cmd) == 0 {
			fc.err = fmt.Errorf("missing argument to '%s'", a)
		}
		if plus {
			idx := len(fc.batchCmd)
			fc.batchCmd = append(fc.batchCmd, cmd)
			fc.batch = append(fc.batch, nil)
			return always(func(p string, _ fs.FileInfo, _ int) bool {
				fc.batch[idx] = append(fc.batch[idx], p)
				return true
			})
		}
		return always(func(p string, _ fs.FileInfo, _ int) bool {
			argv := make([]string, len(cmd))
			for i, c := range cmd {
				argv[i] = strings.ReplaceAll(c, "{}", p)
			}
			return fc.run(argv) == 0
		})
	}
	fc.err = fmt.Errorf("unknown predicate '%s'", a)
	return always(func(string, fs.FileInfo, int) bool { return false })
}

func (fc *findCtx) run(argv []string) int {
	if fc.e.Exec == nil {
		fc.e.errf("find", "cannot run commands here")
		fc.status = 1
		return 1
	}
	code := fc.e.Exec(fc.e, argv)
	return code
}

func (fc *findCtx) flushBatches() {
	for i, cmd := range fc.batchCmd {
		if len(fc.batch[i]) == 0 {
			continue
		}
		if fc.run(append(append([]string(nil), cmd...), fc.batch[i]...)) != 0 {
			fc.status = 1
		}
	}
}

func (fc *findCtx) eval(n *findNode, p string, info fs.FileInfo, depth int) bool {
	switch n.op {
	case "and":
		return fc.eval(n.kids[0], p, info, depth) && fc.eval(n.kids[1], p, info, depth)
	case "or":
		return fc.eval(n.kids[0], p, info, depth) || fc.eval(n.kids[1], p, info, depth)
	case "not":
		return !fc.eval(n.kids[0], p, info, depth)
	}
	return n.pred(p, info, depth)
}

// globMatch matches a whole path against a pattern where * also crosses slashes (find -path).
func globMatch(pat, s string) bool {
	if pat == "" {
		return s == ""
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pat[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pat[1:], s[1:])
	case '[':
		end := strings.IndexByte(pat[1:], ']')
		if end < 0 || s == "" {
			return s != "" && pat[0] == s[0] && globMatch(pat[1:], s[1:])
		}
		ok, _ := path.Match(pat[:end+2], s[:1])
		return ok && globMatch(pat[end+2:], s[1:])
	case '\\':
		if len(pat) > 1 {
			return s != "" && s[0] == pat[1] && globMatch(pat[2:], s[1:])
		}
	}
	return s != "" && s[0] == pat[0] && globMatch(pat[1:], s[1:])
}

func sizeMatch(spec string, size int64) bool {
	cmp := byte(0)
	if spec != "" && (spec[0] == '+' || spec[0] == '-') {
		cmp, spec = spec[0], spec[1:]
	}
	unit := int64(512)
	if spec != "" {
		switch spec[len(spec)-1] {
		case 'c':
			unit, spec = 1, spec[:len(spec)-1]
		case 'k':
			unit, spec = 1024, spec[:len(spec)-1]
		case 'M':
			unit, spec = 1<<20, spec[:len(spec)-1]
		case 'G':
			unit, spec = 1<<30, spec[:len(spec)-1]
		case 'b':
			spec = spec[:len(spec)-1]
		}
	}
	n, err := strconv.ParseInt(spec, 10, 64)
	if err != nil {
		return false
	}
	units := (size + unit - 1) / unit
	switch cmp {
	case '+':
		return units > n
	case '-':
		return units < n
	}
	return units == n
}
