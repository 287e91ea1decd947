// Copyright (c) 2017, Daniel Martí <mvdan@mvdan.cc>
// See LICENSE for licensing information

package expand

import (
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// TODO(v4): the arithmetic APIs should return int64 for portability with 32-bit systems,
// even if Bash only supports native int sizes.

// maxArithmDepth bounds how deeply variables holding arithmetic expressions
// may refer to each other, like Bash's "expression recursion level exceeded".
const maxArithmDepth = 1024

// ArithmError is an error evaluating an arithmetic expression, such as a
// division by zero or a constant invalid for its base.
type ArithmError struct {
	Err error
}

func (e ArithmError) Error() string { return e.Err.Error() }
func (e ArithmError) Unwrap() error { return e.Err }

// Arithm evaluates an arithmetic expression. Errors are an [ArithmError],
// an [UnsetParameterError] under NoUnset, or an error from expanding a word.
func Arithm(cfg *Config, expr syntax.ArithmExpr) (int, error) {
	expr, err := cfg.arithmText(expr)
	n := 0
	if err == nil {
		n, err = arithm(cfg, expr)
	}
	if err != nil {
		switch err.(type) {
		case ArithmError, UnsetParameterError:
		default:
			err = ArithmError{err}
		}
	}
	return n, err
}

// ParamArithmError is an arithmetic error in the index of a parameter expansion, such as
// ${a[1/0]}: unlike one in $((...)) or ${v:1/0}, Bash exits a non-interactive shell on it.
type ParamArithmError struct {
	Err error
}

func (e ParamArithmError) Error() string { return e.Err.Error() }
func (e ParamArithmError) Unwrap() error { return e.Err }

// paramArithm is [Arithm] for the index of a parameter expansion.
func paramArithm(cfg *Config, expr syntax.ArithmExpr) (int, error) {
	n, err := Arithm(cfg, expr)
	if _, ok := err.(ArithmError); ok {
		err = ParamArithmError{err}
	}
	return n, err
}

func arithm(cfg *Config, expr syntax.ArithmExpr) (int, error) {
	switch expr := expr.(type) {
	case *syntax.Word:
		str, err := Literal(cfg, expr)
		if err != nil {
			return 0, err
		}
		return cfg.arithmString(str)
	case *syntax.ParenArithm:
		return arithm(cfg, expr.X)
	case *syntax.UnaryArithm:
		switch expr.Op {
		case syntax.Inc, syntax.Dec:
			lv, err := cfg.arithmLvalue(expr.X)
			if err != nil {
				return 0, err
			}
			old, err := lv.get(cfg)
			if err != nil {
				return 0, err
			}
			val := old
			if expr.Op == syntax.Inc {
				val++
			} else {
				val--
			}
			if err := lv.set(cfg, val); err != nil {
				return 0, err
			}
			if expr.Post {
				return old, nil
			}
			return val, nil
		}
		val, err := arithm(cfg, expr.X)
		if err != nil {
			return 0, err
		}
		switch expr.Op {
		case syntax.Not:
			return oneIf(val == 0), nil
		case syntax.BitNegation:
			return ^val, nil
		case syntax.Plus:
			return val, nil
		case syntax.Minus:
			return -val, nil
		default:
			return 0, fmt.Errorf("unsupported unary arithmetic operator: %q", expr.Op)
		}
	case *syntax.BinaryArithm:
		switch expr.Op {
		case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn,
			syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
			syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn,
			syntax.ShlAssgn, syntax.ShrAssgn:
			return cfg.assgnArit(expr)
		case syntax.TernQuest: // TernColon can't happen here
			cond, err := arithm(cfg, expr.X)
			if err != nil {
				return 0, err
			}
			b2 := expr.Y.(*syntax.BinaryArithm) // must have Op==TernColon
			if cond != 0 {
				return arithm(cfg, b2.X)
			}
			return arithm(cfg, b2.Y)
		case syntax.AndArit, syntax.OrArit:
			// Like Bash, short-circuit the right operand.
			left, err := arithm(cfg, expr.X)
			if err != nil {
				return 0, err
			}
			if expr.Op == syntax.AndArit && left == 0 {
				return 0, nil
			}
			if expr.Op == syntax.OrArit && left != 0 {
				return 1, nil
			}
			right, err := arithm(cfg, expr.Y)
			if err != nil {
				return 0, err
			}
			return oneIf(right != 0), nil
		}
		left, err := arithm(cfg, expr.X)
		if err != nil {
			return 0, err
		}
		right, err := arithm(cfg, expr.Y)
		if err != nil {
			return 0, err
		}
		return binArit(expr.Op, left, right)
	case *syntax.FlagsArithm: // e.g. zsh's ${a[(r)b]}
		return 0, fmt.Errorf("unsupported")
	default:
		return 0, fmt.Errorf("unexpected arithmetic expression: %T", expr)
	}
}

// arithmText does the expansions of an arithmetic expression first, as Bash does, and reads the
// expression again from the text they make when one of them is more than a single operand: with
// e=1+2, $(( $e*3 )) is 1+2*3, which is 7, not 9. Each expansion is done once, left to right.
func (cfg *Config) arithmText(expr syntax.ArithmExpr) (syntax.ArithmExpr, error) {
	if !arithmHasExpansion(expr) {
		return expr, nil
	}
	reread := false
	var err error
	var rebuild func(x syntax.ArithmExpr) syntax.ArithmExpr
	rebuild = func(x syntax.ArithmExpr) syntax.ArithmExpr {
		if err != nil {
			return x
		}
		switch x := x.(type) {
		case *syntax.Word:
			if !wordHasExpansion(x) {
				return x
			}
			var str string
			if str, err = Literal(cfg, x); err != nil {
				return x
			}
			if t := strings.TrimLeft(strings.TrimSpace(str), "+-"); t == "" || !isArithmConst(t) {
				reread = true
			}
			return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: str}}}
		case *syntax.BinaryArithm:
			c := *x
			c.X = rebuild(x.X)
			c.Y = rebuild(x.Y)
			return &c
		case *syntax.UnaryArithm:
			c := *x
			c.X = rebuild(x.X)
			return &c
		case *syntax.ParenArithm:
			c := *x
			c.X = rebuild(x.X)
			return &c
		}
		return x
	}
	expr = rebuild(expr)
	if err != nil || !reread {
		return expr, err
	}
	var sb strings.Builder
	if err := syntax.NewPrinter().Print(&sb, &syntax.ArithmExp{X: expr}); err != nil {
		return nil, err
	}
	text := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(sb.String(), "$(("), "))"))
	if text == "" {
		return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: "0"}}}, nil
	}
	expr, err = syntax.NewParser().Arithmetic(strings.NewReader(text))
	if err != nil || expr == nil || int(expr.End().Offset()) < len(text) {
		return nil, fmt.Errorf("%s: syntax error in expression", text)
	}
	return expr, nil
}

// arithmHasExpansion reports whether an arithmetic expression holds an expansion such as $x,
// ${x}, $(cmd) or $((...)), as opposed to names and constants only.
func arithmHasExpansion(expr syntax.ArithmExpr) bool {
	switch x := expr.(type) {
	case *syntax.Word:
		return wordHasExpansion(x)
	case *syntax.BinaryArithm:
		return arithmHasExpansion(x.X) || arithmHasExpansion(x.Y)
	case *syntax.UnaryArithm:
		return arithmHasExpansion(x.X)
	case *syntax.ParenArithm:
		return arithmHasExpansion(x.X)
	}
	return false
}

func wordHasExpansion(w *syntax.Word) bool {
	for _, part := range w.Parts {
		switch part := part.(type) {
		case *syntax.Lit:
		case *syntax.ParamExp:
			if part.Dollar.IsValid() {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// arithmString evaluates the string value of an operand like Bash does:
// an integer constant, the name of a variable, or an expression,
// as when a variable holds "1+2" and is used as in $((x * 2)).
func (cfg *Config) arithmString(str string) (int, error) {
	str = strings.TrimSpace(str)
	switch {
	case str == "":
		return 0, nil
	case str[0] >= '0' && str[0] <= '9' && isArithmConst(str):
		n, err := parseArithmConst(str)
		return int(n), err
	}
	cfg.arithmDepth++
	defer func() { cfg.arithmDepth-- }()
	if cfg.arithmDepth > maxArithmDepth {
		return 0, fmt.Errorf("%s: expression recursion level exceeded", str)
	}
	if syntax.ValidName(str) {
		vr := cfg.Env.Get(str)
		if !vr.IsSet() && cfg.NoUnset {
			return 0, UnsetParameterError{Node: &syntax.ParamExp{Param: &syntax.Lit{Value: str}}, Message: "unbound variable"}
		}
		return cfg.arithmString(vr.String())
	}
	expr, err := syntax.NewParser().Arithmetic(strings.NewReader(str))
	if w, ok := expr.(*syntax.Word); err != nil || expr == nil || ok && w.Lit() == str || int(expr.End().Offset()) < len(str) {
		// Not an expression, like "@", "a b" or "#0".
		return 0, fmt.Errorf("%s: syntax error in expression", str)
	}
	return arithm(cfg, expr)
}

// isArithmConst reports whether s looks like an integer constant, such as
// 42, 0x1f, 017 or 2#101, as opposed to an expression like 3+4.
func isArithmConst(s string) bool {
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z',
			c == '#', c == '@', c == '_':
		default:
			return false
		}
	}
	return true
}

// parseArithmConst is like [atoi] for an integer constant, but it reports
// digits which are invalid for the base, such as in 08 or 0xg.
func parseArithmConst(s string) (int64, error) {
	digits, base := s, int64(10)
	switch {
	case s == "0x" || s == "0X":
		return 0, nil // like Bash
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		digits, base = s[2:], 16
	case strings.HasPrefix(s, "0") && len(s) > 1:
		digits, base = s[1:], 8
	default:
		if b, rest, ok := strings.Cut(s, "#"); ok {
			n, err := strconv.ParseInt(b, 10, 8)
			if err != nil || n < 2 || n > 64 {
				return 0, fmt.Errorf("%s: invalid arithmetic base", s)
			}
			digits, base = rest, n
		}
	}
	if digits == "" {
		return 0, fmt.Errorf("%s: invalid integer constant", s)
	}
	var n int64
	for i := range len(digits) {
		var d int64
		switch c := digits[i]; {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'z':
			d = int64(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int64(c-'A') + 10
			if base > 36 {
				d += 26
			}
		case c == '@':
			d = 62
		case c == '_':
			d = 63
		default:
			d = 64
		}
		if d >= base {
			return 0, fmt.Errorf("%s: value too great for base", s)
		}
		n = n*base + d
	}
	return n, nil
}

// arithmLvalue is a variable or an array element which an arithmetic
// expression assigns to, as in "x++", "a[i] += 2", or "m[$k]++".
type arithmLvalue struct {
	name string
	// idx is the element's index or key, already evaluated once,
	// so that side effects like in "a[i++]++" happen only once.
	idx syntax.ArithmExpr
}

func (cfg *Config) arithmLvalue(x syntax.ArithmExpr) (arithmLvalue, error) {
	if w, ok := x.(*syntax.Word); ok && len(w.Parts) == 1 {
		switch wp := w.Parts[0].(type) {
		case *syntax.Lit:
			if syntax.ValidName(wp.Value) {
				return arithmLvalue{name: wp.Value}, nil
			}
		case *syntax.ParamExp:
			if wp.Short && wp.Index != nil && wp.Param != nil && syntax.ValidName(wp.Param.Value) {
				lv := arithmLvalue{name: wp.Param.Value}
				vr := cfg.Env.Get(lv.name)
				if vr.Kind == Associative {
					w, ok := wp.Index.(*syntax.Word)
					if !ok {
						break
					}
					key, err := Literal(cfg, w)
					if err != nil {
						return lv, err
					}
					lv.idx = &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: key}}}
					return lv, nil
				}
				i, err := arithm(cfg, wp.Index)
				if err != nil {
					return lv, err
				}
				lv.idx = &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: strconv.Itoa(i)}}}
				return lv, nil
			}
		}
	}
	return arithmLvalue{}, fmt.Errorf("attempted assignment to non-variable")
}

func (lv arithmLvalue) get(cfg *Config) (int, error) {
	vr := cfg.Env.Get(lv.name)
	str, set, err := cfg.varInd(vr, lv.idx)
	if err != nil {
		return 0, err
	}
	if !set && cfg.NoUnset {
		return 0, UnsetParameterError{Node: &syntax.ParamExp{Param: &syntax.Lit{Value: lv.name}}, Message: "unbound variable"}
	}
	return cfg.arithmString(str)
}

func (lv arithmLvalue) set(cfg *Config, val int) error {
	return cfg.assignElem(lv.name, cfg.Env.Get(lv.name), lv.idx, strconv.Itoa(val))
}

func oneIf(b bool) int {
	if b {
		return 1
	}
	return 0
}

// atoi is like [strconv.ParseInt](s, BASE, 64), but it handles integer
// base prefixes according to bash-shell's rules, ignores errors, and
// trims whitespace.
//
// For more information about bash's integer base handling syntax,
// refer to the bash manual:
// https://www.man7.org/linux/man-pages/man1/bash.1.html
func atoi(s string) int64 {
	s = strings.TrimSpace(s)
	neg := false
	switch {
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	case strings.HasPrefix(s, "-"):
		neg = true
		s = s[1:]
	}
	base := int64(10)
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		base = 16
		s = s[2:]
	case strings.HasPrefix(s, "0"):
		base = 8
		s = s[1:]
	default:
		baseStr, intStr, hasSep := strings.Cut(s, "#")
		if hasSep {
			var err error
			base, err = strconv.ParseInt(baseStr, 10, 8)
			if err != nil || base < 2 || base > 64 {
				return 0
			}
			s = intStr
		}
	}
	var n int64
	if base > 36 {
		n = atoiLargeBase(s, base)
	} else {
		n, _ = strconv.ParseInt(s, int(base), 64)
	}
	if neg {
		n = -n
	}
	return n
}

// atoiLargeBase parses bases 37 to 64, which [strconv.ParseInt] does not
// support, using bash's digit set: 0-9, a-z, A-Z, "@", and "_".
func atoiLargeBase(s string, base int64) int64 {
	var n int64
	for i := range len(s) {
		var d int64
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'z':
			d = int64(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int64(c-'A') + 36
		case c == '@':
			d = 62
		case c == '_':
			d = 63
		default:
			return 0
		}
		if d >= base {
			return 0
		}
		n = n*base + d
	}
	return n
}

func (cfg *Config) assgnArit(b *syntax.BinaryArithm) (int, error) {
	lv, err := cfg.arithmLvalue(b.X)
	if err != nil {
		return 0, err
	}
	arg_, err := arithm(cfg, b.Y)
	if err != nil {
		return 0, err
	}
	arg := int64(arg_)
	var val int64
	if b.Op != syntax.Assgn {
		old, err := lv.get(cfg)
		if err != nil {
			return 0, err
		}
		val = int64(old)
	}
	switch b.Op {
	case syntax.Assgn:
		val = arg
	case syntax.AddAssgn:
		val += arg
	case syntax.SubAssgn:
		val -= arg
	case syntax.MulAssgn:
		val *= arg
	case syntax.QuoAssgn:
		if arg == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		val /= arg
	case syntax.RemAssgn:
		if arg == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		val %= arg
	case syntax.AndAssgn:
		val &= arg
	case syntax.OrAssgn:
		val |= arg
	case syntax.XorAssgn:
		val ^= arg
	case syntax.ShlAssgn:
		val <<= uint(arg) & 63
	case syntax.ShrAssgn:
		val >>= uint(arg) & 63
	}
	if err := lv.set(cfg, int(val)); err != nil {
		return 0, err
	}
	return int(val), nil
}

func intPow(a, b int) int {
	p := 1
	for b > 0 {
		if b&1 != 0 {
			p *= a
		}
		b >>= 1
		a *= a
	}
	return p
}

func binArit(op syntax.BinAritOperator, x, y int) (int, error) {
	switch op {
	case syntax.Add:
		return x + y, nil
	case syntax.Sub:
		return x - y, nil
	case syntax.Mul:
		return x * y, nil
	case syntax.Quo:
		if y == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		return x / y, nil
	case syntax.Rem:
		if y == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		return x % y, nil
	case syntax.Pow:
		if y < 0 {
			return 0, fmt.Errorf("exponent less than 0")
		}
		return intPow(x, y), nil
	case syntax.Eql:
		return oneIf(x == y), nil
	case syntax.Gtr:
		return oneIf(x > y), nil
	case syntax.Lss:
		return oneIf(x < y), nil
	case syntax.Neq:
		return oneIf(x != y), nil
	case syntax.Leq:
		return oneIf(x <= y), nil
	case syntax.Geq:
		return oneIf(x >= y), nil
	case syntax.And:
		return x & y, nil
	case syntax.Or:
		return x | y, nil
	case syntax.Xor:
		return x ^ y, nil
	case syntax.Shr:
		return x >> (uint(y) & 63), nil
	case syntax.Shl:
		return x << (uint(y) & 63), nil
	case syntax.Comma:
		// x is executed but its result discarded
		return y, nil
	default:
		return 0, fmt.Errorf("unsupported binary arithmetic operator: %q", op)
	}
}
