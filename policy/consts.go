package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// consts is what the variables of one script are statically known to hold, so that a command
// name held in a variable assigned a constant earlier in the script is resolved (`c=echo; $c hi`
// runs echo, `c=curl; $c x` is denied as curl) rather than denied as unresolvable.
//
// A variable is known to hold a value in a top-level statement of the script when:
//   - an earlier top-level statement is a plain assignment of that constant (c=echo, also
//     export/declare/readonly/typeset c=echo), not in a pipeline, list, subshell, loop,
//     condition or function, so it has run before;
//   - every assignment of the variable anywhere in the script, including in functions and
//     subshells, assigns that same constant; any other way of setting it (an expansion in the
//     value, +=, an array, read, mapfile, getopts, printf -v, unset, for, select, arithmetic,
//     ${c:=x}, local or declare without a value) makes it unknown;
//   - nothing in the script can set variables in ways that cannot be seen: eval, source, ., trap,
//     alias, let, declare -n or a declaration with a computed name, or a command name that is
//     itself a variable holding one of those builtins.
//
// Positional and special parameters, and variables from the environment, are never known.
type consts struct {
	defs    map[string]constDef // first definite assignment of each variable
	vals    map[string]string   // the constant every assignment of the variable sets
	unknown map[string]bool     // set in a way that is not one known constant
	opaque  bool                // variables may change in ways that cannot be seen
	ifs     bool                // IFS is assigned: unquoted expansions cannot be split statically
	cur     int                 // index of the top-level statement being inspected
}

type constDef struct {
	val string
	at  int // index of the top-level statement
}

// assigningBuiltins set the variables named by their arguments.
var assigningBuiltins = set("read", "mapfile", "readarray", "getopts", "printf", "unset", "wait")

// opaqueBuiltins can set any variable.
var opaqueBuiltins = set("eval", "source", ".", "trap", "alias", "let", "declare", "typeset",
	"local", "export", "readonly", "coproc", "enable")

// prefixBuiltins run the builtin named by their first operand.
var prefixBuiltins = set("builtin", "command", "exec")

// collectConsts finds the constants of the script f.
func collectConsts(f *syntax.File) *consts {
	k := &consts{defs: map[string]constDef{}, vals: map[string]string{}, unknown: map[string]bool{}}
	for i, s := range f.Stmts {
		if s.Negated || s.Background || s.Coprocess || s.Disown {
			continue
		}
		switch cmd := s.Cmd.(type) {
		case *syntax.CallExpr:
			if len(cmd.Args) > 0 {
				continue // NAME=VALUE cmd: the assignment is only the command's
			}
			for _, a := range cmd.Assigns {
				k.def(a, i)
			}
		case *syntax.DeclClause:
			switch cmd.Variant.Value {
			case "export", "declare", "readonly", "typeset":
				for _, a := range cmd.Args {
					k.def(a, i)
				}
			}
		}
	}
	syntax.Walk(f, k.visit)
	return k
}

// def records a definite assignment of a constant at top-level statement i.
func (k *consts) def(a *syntax.Assign, i int) {
	if a.Name == nil || a.Value == nil || a.Append || a.Index != nil || a.Array != nil || a.Naked {
		return
	}
	v, ok := constValue(a.Value)
	if !ok {
		return
	}
	if _, seen := k.defs[a.Name.Value]; !seen {
		k.defs[a.Name.Value] = constDef{val: v, at: i}
	}
}

// site records one assignment of name, of value v when known.
func (k *consts) site(name, v string, known bool) {
	if name == "IFS" {
		k.ifs = true
	}
	if !known {
		k.unknown[name] = true
		return
	}
	if prev, seen := k.vals[name]; seen && prev != v {
		k.unknown[name] = true
		return
	}
	k.vals[name] = v
}

func (k *consts) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Assign:
		switch {
		case n.Name == nil:
			k.opaque = true // declare "$x=..."
		case strings.HasPrefix(n.Name.Value, "-") || strings.HasPrefix(n.Name.Value, "+"):
			if strings.Contains(n.Name.Value, "n") {
				k.opaque = true // declare -n: a name reference
			}
		case n.Value == nil || n.Append || n.Index != nil || n.Array != nil || n.Naked:
			k.site(n.Name.Value, "", false)
		default:
			v, ok := constValue(n.Value)
			k.site(n.Name.Value, v, ok)
		}
	case *syntax.ForClause:
		if wi, ok := n.Loop.(*syntax.WordIter); ok && wi.Name != nil {
			k.site(wi.Name.Value, "", false)
		}
	case *syntax.BinaryArithm:
		switch n.Op {
		case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
			syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
			k.arithmTarget(n.X)
		}
	case *syntax.UnaryArithm:
		if n.Op == syntax.Inc || n.Op == syntax.Dec {
			k.arithmTarget(n.X)
		}
	case *syntax.LetClause:
		k.opaque = true
	case *syntax.ParamExp:
		if n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) && n.Param != nil {
			k.site(n.Param.Value, "", false)
		}
	case *syntax.DeclClause:
		if n.Variant.Value == "local" || n.Variant.Value == "nameref" {
			for _, a := range n.Args {
				if a.Name != nil {
					k.site(a.Name.Value, "", false) // a function's own, so not the script's
				}
			}
		}
	case *syntax.CallExpr:
		k.call(n)
	}
	return true
}

func (k *consts) arithmTarget(x syntax.ArithmExpr) {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		k.opaque = true
		return
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		k.site(p.Value, "", false)
	case *syntax.ParamExp:
		if p.Param != nil {
			k.site(p.Param.Value, "", false)
		}
	default:
		k.opaque = true
	}
}

// call marks the variables that a simple command sets.
func (k *consts) call(ce *syntax.CallExpr) {
	if len(ce.Args) == 0 {
		return
	}
	args := ce.Args
	name, ok := constValue(args[0])
	for ok && prefixBuiltins[name] {
		args = args[1:]
		for len(args) > 0 && strings.HasPrefix(args[0].Lit(), "-") {
			args = args[1:] // command -p, exec -a NAME is not a name we care about
		}
		if len(args) == 0 {
			return
		}
		name, ok = constValue(args[0])
	}
	if !ok {
		return // a computed command name: value refuses variables holding such builtins
	}
	switch {
	case opaqueBuiltins[name]:
		k.opaque = true
	case assigningBuiltins[name]:
		for _, w := range args[1:] {
			v, ok := constValue(w)
			if !ok {
				k.opaque = true
				return
			}
			if i := strings.IndexByte(v, '['); i > 0 {
				v = v[:i]
			}
			k.site(v, "", false)
		}
		k.site("REPLY", "", false)
		k.site("MAPFILE", "", false)
		k.site("OPTARG", "", false)
		k.site("OPTIND", "", false)
	}
}

// constValue is the value of a word without any expansion, quote removal done.
func constValue(w *syntax.Word) (string, bool) {
	if !literalWord(w) {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v, glob := unescapeLit(p.Value)
			if glob {
				return "", false
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				b.WriteString(unescapeDq(q.(*syntax.Lit).Value))
			}
		}
	}
	return b.String(), true
}

// value returns the constant a variable is known to hold in the current statement.
func (k *consts) value(name string) (string, bool) {
	if k == nil || k.opaque || k.unknown[name] {
		return "", false
	}
	d, ok := k.defs[name]
	if !ok || d.at >= k.cur || k.vals[name] != d.val {
		return "", false
	}
	// A variable holding a builtin that sets variables hides what it sets.
	if opaqueBuiltins[d.val] || assigningBuiltins[d.val] {
		return "", false
	}
	for _, v := range k.vals {
		if f := strings.Fields(v); len(f) > 0 && (opaqueBuiltins[f[0]] || assigningBuiltins[f[0]]) {
			return "", false
		}
	}
	return d.val, true
}

// resolve expands a word made of literal text and plain references to known variables ($c,
// ${c}, "$c"), as the shell would: unquoted values are split on blanks (when IFS is not
// assigned) and must hold no glob characters. It reports false for anything else.
func (k *consts) resolve(w *syntax.Word, src string) ([]arg, bool) {
	if k == nil || k.opaque {
		return nil, false
	}
	var b strings.Builder
	var fields []string // words completed by splitting
	split := false      // an unquoted expansion was split
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v, glob := unescapeLit(p.Value)
			if glob {
				return nil, false
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(unescapeDq(q.Value))
				case *syntax.ParamExp:
					v, ok := k.param(q)
					if !ok {
						return nil, false
					}
					b.WriteString(v)
				default:
					return nil, false
				}
			}
		case *syntax.ParamExp:
			v, ok := k.param(p)
			if !ok || hasGlob(v) || k.ifs {
				return nil, false
			}
			words := strings.Fields(v)
			if len(words) != 1 || strings.TrimSpace(v) != v {
				// Splitting: only a word that is this one expansion alone is resolved.
				if len(w.Parts) != 1 {
					return nil, false
				}
				fields, split = words, true
				continue
			}
			b.WriteString(v)
		default:
			return nil, false
		}
	}
	if !split {
		fields = []string{b.String()}
	}
	out := make([]arg, len(fields))
	for i, f := range fields {
		out[i] = arg{s: f, src: src, base: basename(f)}
	}
	return out, true
}

// param is the value of a plain $name or ${name} of a known variable.
func (k *consts) param(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || p.Index != nil || p.Exp != nil || p.Repl != nil || p.Slice != nil ||
		p.Length || p.Excl || p.Width || p.IsSet || p.Names != 0 || p.NestedParam != nil ||
		len(p.Modifiers) > 0 || p.Flags != nil || p.Split != 0 || p.GlobSubst != 0 || p.RcExpand != 0 {
		return "", false
	}
	return k.value(p.Param.Value)
}
