// Copyright (c) 2017, Daniel Martí <mvdan@mvdan.cc>
// See LICENSE for licensing information

package expand

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sandboxer/sandboxer/third_party/mvdansh/internal"
	"github.com/sandboxer/sandboxer/third_party/mvdansh/pattern"
	"mvdan.cc/sh/v3/syntax"
)

func nodeLit(node syntax.Node) string {
	if word, ok := node.(*syntax.Word); ok {
		return word.Lit()
	}
	return ""
}

// UnsetParameterError is returned when a parameter expansion encounters an
// unset variable and [Config.NoUnset] has been set.
type UnsetParameterError struct {
	Node    *syntax.ParamExp
	Message string
}

func (u UnsetParameterError) Error() string {
	return fmt.Sprintf("%s: %s", u.Node.Param.Value, u.Message)
}

func overridingUnset(pe *syntax.ParamExp) bool {
	if pe.Exp == nil {
		return false
	}
	switch pe.Exp.Op {
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull,
		syntax.DefaultUnset, syntax.DefaultUnsetOrNull,
		syntax.ErrorUnset, syntax.ErrorUnsetOrNull,
		syntax.AssignUnset, syntax.AssignUnsetOrNull:
		return true
	}
	return false
}

// expandsWord reports whether the operator op of ${name op word} uses its word,
// given whether the parameter is set and its value str.
func expandsWord(op syntax.ParExpOperator, set bool, str string) bool {
	switch op {
	case syntax.AlternateUnset:
		return set
	case syntax.AlternateUnsetOrNull:
		return set && str != ""
	case syntax.DefaultUnset, syntax.ErrorUnset, syntax.AssignUnset:
		return !set && str == ""
	case syntax.DefaultUnsetOrNull, syntax.ErrorUnsetOrNull, syntax.AssignUnsetOrNull:
		return str == ""
	}
	return true
}

func (cfg *Config) paramExp(pe *syntax.ParamExp) (string, error) {
	oldParam := cfg.curParam
	cfg.curParam = pe
	defer func() { cfg.curParam = oldParam }()

	if pe.Param == nil { // e.g. zsh's ${}
		return "", fmt.Errorf("unsupported")
	}
	name := pe.Param.Value
	index := pe.Index
	switch name {
	case "@", "*":
		index = &syntax.Word{Parts: []syntax.WordPart{
			&syntax.Lit{Value: name},
		}}
	}
	// "*" expansions like ${*}, ${arr[*]}, or ${!prefix*} join their
	// elements with the first IFS character; others use a space.
	join := func(elems []string) string {
		if nodeLit(index) == "*" || pe.Names == syntax.NamesPrefix {
			return cfg.ifsJoin(elems)
		}
		return strings.Join(elems, " ")
	}
	var vr Variable
	switch name {
	case "LINENO":
		// This is the only parameter expansion that the environment
		// interface cannot satisfy.
		line := uint64(cfg.curParam.Pos().Line())
		vr = Variable{Set: true, Kind: String, Str: strconv.FormatUint(line, 10)}
	default:
		vr = cfg.Env.Get(name)
	}
	orig := vr
	if n, v := vr.Resolve(cfg.Env); n != "" {
		name, vr = n, v
	}
	if cfg.NoUnset && !vr.IsSet() && !overridingUnset(pe) {
		return "", UnsetParameterError{
			Node:    pe,
			Message: "unbound variable",
		}
	}

	var sliceOffset, sliceLen int
	if pe.Slice != nil {
		var err error
		if pe.Slice.Offset != nil {
			sliceOffset, err = Arithm(cfg, pe.Slice.Offset)
			if err != nil {
				return "", err
			}
		}
		if pe.Slice.Length != nil {
			sliceLen, err = Arithm(cfg, pe.Slice.Length)
			if err != nil {
				return "", err
			}
		}
	}

	var (
		str   string
		elems []string

		indexAllElements bool // true if var has been accessed with * or @ index
		callVarInd       = true
		set              = vr.IsSet()
	)
	if name == "@" || name == "*" {
		set = len(vr.List) > 0 // for operators like ${@-word}
	}

	switch nodeLit(index) {
	case "@", "*":
		switch vr.Kind {
		case Unknown:
			elems = nil
			indexAllElements = true
		case Indexed:
			indexAllElements = true
			callVarInd = false
			elems = cfg.sliceElems(pe, vr.List, vr.Indexes, name == "@" || name == "*")
			str = join(elems)
		case Associative:
			indexAllElements = true
			callVarInd = false
			elems = cfg.sliceElems(pe, slices.Sorted(maps.Values(vr.Map)), nil, false)
			str = join(elems)
		}
	}
	if callVarInd {
		var err error
		str, set, err = cfg.varInd(vr, index)
		if err != nil {
			return "", err
		}
	}
	if !indexAllElements {
		elems = []string{str}
	}

	switch {
	case pe.Length:
		n := len(elems)
		switch nodeLit(index) {
		case "@", "*":
		default:
			n = utf8.RuneCountInString(str)
		}
		str = strconv.Itoa(n)
	case pe.Excl:
		var strs []string
		switch {
		case pe.Names != 0:
			strs = cfg.namesByPrefix(pe.Param.Value)
		case orig.Kind == NameRef:
			strs = append(strs, orig.Str)
		case pe.Index != nil && vr.Kind == Indexed:
			strs = vr.indexedKeys()
		case pe.Index != nil && vr.Kind == Associative:
			strs = slices.Sorted(maps.Keys(vr.Map))
		case !vr.IsSet():
			return "", fmt.Errorf("invalid indirect expansion")
		case str == "" && syntax.ValidName(pe.Param.Value):
			return "", fmt.Errorf(": invalid variable name") // as Bash says
		case str == "":
			return "", nil // ${!@} without parameters
		case (pe.Exp != nil || pe.Repl != nil || pe.Slice != nil) && (syntax.ValidName(str) || isSpecialParam(str)):
			// Like Bash, the operators apply to the variable that ref
			// names: ${!ref:-default}, ${!ref#pattern}, ${!ref:1}.
			pe2 := *pe
			pe2.Excl = false
			pe2.Param = &syntax.Lit{ValuePos: pe.Param.ValuePos, ValueEnd: pe.Param.ValueEnd, Value: str}
			return cfg.paramExp(&pe2)
		default:
			val, err := cfg.indirect(str)
			if err != nil {
				return "", err
			}
			strs = append(strs, val)
		}
		str = join(strs)
	case pe.Width:
		return "", fmt.Errorf("unsupported")
	case pe.IsSet:
		return "", fmt.Errorf("unsupported")
	case pe.Slice != nil:
		if callVarInd {
			// The offset and length are in characters, not bytes.
			rs := []rune(str)
			slicePos := func(n int) int {
				if n < 0 {
					n = len(rs) + n
					if n < 0 {
						n = len(rs)
					}
				} else if n > len(rs) {
					n = len(rs)
				}
				return n
			}
			if pe.Slice.Offset != nil {
				rs = rs[slicePos(sliceOffset):]
			}
			if pe.Slice.Length != nil {
				rs = rs[:slicePos(sliceLen)]
			}
			str = string(rs)
		} // else, elems are already sliced
	case pe.Repl != nil:
		elems, err := cfg.replaceElems(pe.Repl, elems)
		if err != nil {
			return "", err
		}
		str = join(elems)
	case pe.Exp != nil && !expandsWord(pe.Exp.Op, set, str):
		// The word of ${x:-word} and the like is expanded only when it is used,
		// so that its command substitutions and arithmetic run only then.
	case pe.Exp != nil:
		var arg string
		var err error
		switch pe.Exp.Op {
		case syntax.RemSmallPrefix, syntax.RemLargePrefix,
			syntax.RemSmallSuffix, syntax.RemLargeSuffix,
			syntax.UpperFirst, syntax.UpperAll,
			syntax.LowerFirst, syntax.LowerAll:
			// A pattern, in which quoted characters are literal, as in ${v#"?"}.
			arg, err = Pattern(cfg, pe.Exp.Word)
		default:
			arg, err = Literal(cfg, pe.Exp.Word)
		}
		if err != nil {
			return "", err
		}
		switch op := pe.Exp.Op; op {
		case syntax.AlternateUnsetOrNull:
			if str == "" {
				break
			}
			fallthrough
		case syntax.AlternateUnset:
			if set {
				str = arg
			}
		case syntax.DefaultUnset:
			if set {
				break
			}
			fallthrough
		case syntax.DefaultUnsetOrNull:
			if str == "" {
				str = arg
			}
		case syntax.ErrorUnset:
			if set {
				break
			}
			fallthrough
		case syntax.ErrorUnsetOrNull:
			if str == "" {
				if arg == "" && pe.Exp.Word == nil {
					// Like Bash, ${x?} and ${x:?} have a message of their own.
					arg = "parameter not set"
					if op == syntax.ErrorUnsetOrNull {
						arg = "parameter null or not set"
					}
				}
				return "", UnsetParameterError{
					Node:    pe,
					Message: arg,
				}
			}
		case syntax.AssignUnset:
			if set {
				break
			}
			fallthrough
		case syntax.AssignUnsetOrNull:
			if str == "" {
				if !syntax.ValidName(name) {
					return "", fmt.Errorf("$%s: cannot assign in this way", name)
				}
				if err := cfg.assignElem(name, vr, index, arg); err != nil {
					return "", err
				}
				str = arg
			}
		case syntax.RemSmallPrefix, syntax.RemLargePrefix,
			syntax.RemSmallSuffix, syntax.RemLargeSuffix:
			rem, err := cfg.removePatternElems(op, arg, elems)
			if err != nil {
				return "", err
			}
			str = join(rem)
		case syntax.UpperFirst, syntax.UpperAll,
			syntax.LowerFirst, syntax.LowerAll:
			str = join(cfg.caseConvElems(op, arg, elems))
		case syntax.OtherParamOps:
			switch arg {
			case "Q":
				str = QuoteBash(str)
			case "E":
				tail := str
				var rns []rune
				for tail != "" {
					var rn rune
					rn, _, tail, _ = strconv.UnquoteChar(tail, 0)
					rns = append(rns, rn)
				}
				str = string(rns)
			case "a":
				// ${var@a} returns variable attribute flags.
				// We use orig (before nameref resolve) for the attributes.
				str = orig.Flags()
			case "A":
				// ${var@A} returns a declare statement that recreates the variable.
				flags := orig.Flags()
				quoted, err := syntax.Quote(str, syntax.LangBash)
				if err != nil {
					return "", err
				}
				if flags == "" {
					str = fmt.Sprintf("%s=%s", name, quoted)
				} else {
					str = fmt.Sprintf("declare -%s %s=%s", flags, name, quoted)
				}
			case "P":
				// TODO: implement prompt expansion (\u, \h, \w, etc.).
			case "U":
				str = strings.ToUpper(str)
			case "u":
				rs := []rune(str)
				if len(rs) > 0 {
					rs[0] = unicode.ToUpper(rs[0])
					str = string(rs)
				}
			case "L":
				str = strings.ToLower(str)
			case "K", "k":
				// TODO: implement, like @A but listing keys for assoc arrays.
			default:
				return "", fmt.Errorf("${%s@%s}: bad substitution", name, arg)
			}
		}
	}
	return str, nil
}

func removePattern(str, pat string, fromEnd, shortest, extended bool) (string, error) {
	var mode pattern.Mode
	if shortest {
		mode |= pattern.Shortest
	}
	if extended {
		mode |= pattern.ExtendedOperators
	}
	expr, err := pattern.Regexp(pat, mode)
	if _, ok := errors.AsType[*pattern.NegExtGlobError](err); ok {
		return removeMatching(str, pat, fromEnd, shortest)
	}
	if err != nil {
		return str, nil
	}
	anchored := "^(?:" + expr + ")"
	if fromEnd {
		anchored = "(?:" + expr + ")$"
	}
	if extended && strings.Contains(expr, "|") && regexp.MustCompile(anchored).MatchString(str) {
		// Of alternatives such as @(foo|fo), a regular expression takes
		// the first that matches, not the shortest or the longest.
		return removeMatching(str, pat, fromEnd, shortest)
	}
	switch {
	case fromEnd && shortest:
		// use .* to get the right-most shortest match
		expr = ".*(" + expr + ")$"
	case fromEnd:
		// simple suffix
		expr = "(" + expr + ")$"
	default:
		// simple prefix
		expr = "^(" + expr + ")"
	}
	// no need to check error as Translate returns one
	rx := regexp.MustCompile(expr)
	if loc := rx.FindStringSubmatchIndex(str); loc != nil {
		// remove the original pattern (the submatch)
		str = str[:loc[2]] + str[loc[3]:]
	}
	return str, nil
}

// removeMatching removes the shortest or longest prefix or suffix matching
// an extended pattern, which a regular expression cannot always express: a
// !(...) group has no regular expression, and of alternatives like @(foo|fo)
// a regular expression takes the first that matches. It tries each prefix or
// suffix in turn, up to the longest that can match.
func removeMatching(str, pat string, fromEnd, shortest bool) (string, error) {
	match, err := internal.ExtendedPatternMatcher(pat, pattern.EntireString|pattern.ExtendedOperators)
	if err != nil {
		return "", fmt.Errorf("%s: %w", pat, err)
	}
	for n := range len(str) + 1 {
		if !shortest {
			n = len(str) - n
		}
		if fromEnd && match(str[len(str)-n:]) {
			return str[:len(str)-n], nil
		}
		if !fromEnd && match(str[:n]) {
			return str[n:], nil
		}
	}
	return str, nil
}

// The helpers below never modify elems in place, as it may alias a
// variable's list of elements.

// perElemOps applies pattern removal, replacement, or case conversion to
// each element, leaving them unchanged for any whole-expansion operator.
func (cfg *Config) perElemOps(pe *syntax.ParamExp, elems []string) ([]string, error) {
	switch {
	case pe.Repl != nil:
		return cfg.replaceElems(pe.Repl, elems)
	case pe.Exp != nil:
		arg, err := Pattern(cfg, pe.Exp.Word)
		if err != nil {
			return nil, err
		}
		switch op := pe.Exp.Op; op {
		case syntax.RemSmallPrefix, syntax.RemLargePrefix,
			syntax.RemSmallSuffix, syntax.RemLargeSuffix:
			return cfg.removePatternElems(op, arg, elems)
		case syntax.UpperFirst, syntax.UpperAll,
			syntax.LowerFirst, syntax.LowerAll:
			return cfg.caseConvElems(op, arg, elems), nil
		}
	}
	return elems, nil
}

// replaceElems applies a ${var/pattern/repl} replacement to each element.
// Like Bash, a pattern starting with # or % must match at the start or the
// end of the element, and an unquoted & in the replacement stands for the
// matched text, as with Bash 5.2's patsub_replacement option.
func (cfg *Config) replaceElems(repl *syntax.Replace, elems []string) ([]string, error) {
	origWord := repl.Orig
	anchor := byte(0)
	if origWord != nil && len(origWord.Parts) > 0 && !repl.All {
		if lit, ok := origWord.Parts[0].(*syntax.Lit); ok && lit.Value != "" && (lit.Value[0] == '#' || lit.Value[0] == '%') {
			anchor = lit.Value[0]
			parts := slices.Clone(origWord.Parts)
			parts[0] = &syntax.Lit{Value: lit.Value[1:]}
			origWord = &syntax.Word{Parts: parts}
		}
	}
	orig, err := Pattern(cfg, origWord)
	if err != nil {
		return nil, err
	}
	if orig == "" && anchor == 0 {
		return elems, nil // nothing to replace
	}
	var with []fieldPart
	if repl.With != nil {
		with, err = cfg.wordField(repl.With.Parts, quoteNone)
		if err != nil {
			return nil, err
		}
	}
	var mode pattern.Mode
	if cfg.ExtGlob {
		mode = pattern.ExtendedOperators
	}
	n := 1
	if repl.All {
		n = -1
	}
	var findAll func(s string, n int) [][]int
	expr, err := pattern.Regexp(orig, mode)
	if _, ok := errors.AsType[*pattern.NegExtGlobError](err); ok {
		match, err := internal.ExtendedPatternMatcher(orig, pattern.EntireString|pattern.ExtendedOperators)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", orig, err)
		}
		findAll = func(s string, n int) [][]int { return findAllMatching(match, anchor, s, n) }
	} else if err != nil {
		return elems, nil
	} else {
		switch anchor {
		case '#':
			expr = "^(?:" + expr + ")"
		case '%':
			expr = "(?:" + expr + ")$"
		}
		rx, err := regexp.Compile(expr)
		if err != nil {
			return elems, nil
		}
		findAll = rx.FindAllStringIndex
	}
	out := make([]string, len(elems))
	for i, elem := range elems {
		locs := findAll(elem, n)
		var sb strings.Builder
		last := 0
		for _, loc := range locs {
			sb.WriteString(elem[last:loc[0]])
			for _, part := range with {
				if part.quote == quoteNone {
					sb.WriteString(strings.ReplaceAll(part.val, "&", elem[loc[0]:loc[1]]))
				} else {
					sb.WriteString(part.val)
				}
			}
			last = loc[1]
		}
		sb.WriteString(elem[last:])
		out[i] = sb.String()
	}
	return out, nil
}

// findAllMatching is [regexp.Regexp.FindAllStringIndex] for a pattern that
// only a matcher of whole strings can express, such as one with a !(...)
// group: at each position from the left, the longest match; anchor '#' or
// '%' requires the match to start or end the string.
func findAllMatching(match func(string) bool, anchor byte, s string, n int) [][]int {
	var locs [][]int
	for start := 0; start <= len(s) && (n < 0 || len(locs) < n); start++ {
		if anchor == '#' && start > 0 || start == len(s) && start > 0 && anchor != '%' {
			break // like Bash, no empty match at the end of a string
		}
		if start < len(s) && !utf8.RuneStart(s[start]) {
			continue
		}
		for end := len(s); end >= start; end-- {
			if anchor == '%' && end < len(s) {
				break
			}
			if end < len(s) && !utf8.RuneStart(s[end]) {
				continue
			}
			if match(s[start:end]) {
				locs = append(locs, []int{start, end})
				if end > start {
					start = end - 1
				}
				break
			}
		}
	}
	return locs
}

// indirect is the value of ${!ref}: ref names a variable, or an array
// element like arr[1].
func (cfg *Config) indirect(ref string) (string, error) {
	name, sub, ok := strings.Cut(ref, "[")
	if !ok || !strings.HasSuffix(sub, "]") || !syntax.ValidName(name) {
		if !syntax.ValidName(ref) && !isSpecialParam(ref) {
			return "", fmt.Errorf("%s: invalid variable name", ref)
		}
		return cfg.Env.Get(ref).String(), nil
	}
	sub = sub[:len(sub)-1]
	vr := cfg.Env.Get(name)
	var idx syntax.ArithmExpr
	switch {
	case sub == "@" || sub == "*":
		idx = &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: sub}}}
	case vr.Kind == Associative:
		idx = &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: sub}}}
	default:
		i, err := cfg.arithmString(sub)
		if err != nil {
			return "", err
		}
		idx = &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: strconv.Itoa(i)}}}
	}
	str, _, err := cfg.varInd(vr, idx)
	return str, err
}

func isSpecialParam(s string) bool {
	switch s {
	case "@", "*", "#", "?", "-", "$", "!", "0", "_":
		return true
	}
	_, err := strconv.Atoi(s)
	return err == nil
}

// QuoteBash quotes a string like Bash's ${var@Q}: in single quotes, or in
// $'...' when it holds control characters.
func QuoteBash(s string) string {
	special := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			special = true
			break
		}
	}
	if !special {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var sb strings.Builder
	sb.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case '\a':
			sb.WriteString(`\a`)
		case '\b':
			sb.WriteString(`\b`)
		case '\t':
			sb.WriteString(`\t`)
		case '\n':
			sb.WriteString(`\n`)
		case '\v':
			sb.WriteString(`\v`)
		case '\f':
			sb.WriteString(`\f`)
		case '\r':
			sb.WriteString(`\r`)
		case 0x1b:
			sb.WriteString(`\E`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&sb, `\%03o`, c)
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('\'')
	return sb.String()
}

// removePatternElems applies a pattern removal operator to each element.
func (cfg *Config) removePatternElems(op syntax.ParExpOperator, arg string, elems []string) ([]string, error) {
	suffix := op == syntax.RemSmallSuffix || op == syntax.RemLargeSuffix
	small := op == syntax.RemSmallPrefix || op == syntax.RemSmallSuffix
	out := make([]string, len(elems))
	for i, elem := range elems {
		var err error
		if out[i], err = removePattern(elem, arg, suffix, small, cfg.ExtGlob); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// caseConvElems applies a case conversion operator to each element.
func (cfg *Config) caseConvElems(op syntax.ParExpOperator, arg string, elems []string) []string {
	caseFunc := unicode.ToLower
	if op == syntax.UpperFirst || op == syntax.UpperAll {
		caseFunc = unicode.ToUpper
	}
	all := op == syntax.UpperAll || op == syntax.LowerAll

	// empty string means '?'; nothing to do there
	expr, err := pattern.Regexp(arg, 0)
	if err != nil {
		return elems
	}
	rx := regexp.MustCompile(expr)

	out := make([]string, len(elems))
	for i, elem := range elems {
		rs := []rune(elem)
		for ri, r := range rs {
			if rx.MatchString(string(r)) {
				rs[ri] = caseFunc(r)
			}
			if !all {
				break // only the first character is considered
			}
		}
		out[i] = string(rs)
	}
	return out
}

// varInd expands an indexed variable expansion like ${a[i]}, also reporting
// whether the resulting element is set, which may be false for missing array
// elements such as the holes in a sparse array.
func (cfg *Config) varInd(vr Variable, idx syntax.ArithmExpr) (string, bool, error) {
	if idx == nil {
		switch vr.Kind {
		case Indexed:
			// A bare $a is the element at index zero, which may be unset.
			str, ok := vr.indexedVal(0)
			return str, ok, nil
		case Associative:
			str, ok := vr.Map["0"]
			return str, ok, nil
		}
		return vr.String(), vr.IsSet(), nil
	}
	switch vr.Kind {
	case String:
		switch nodeLit(idx) {
		case "*", "@":
			return vr.Str, vr.IsSet(), nil
		}
		n, err := paramArithm(cfg, idx)
		if err != nil {
			return "", false, err
		}
		if n == 0 {
			return vr.Str, vr.IsSet(), nil
		}
	case Indexed:
		switch nodeLit(idx) {
		case "*", "@":
			return strings.Join(vr.List, " "), vr.IsSet(), nil
		}
		i, err := paramArithm(cfg, idx)
		if err != nil {
			return "", false, err
		}
		if i < 0 {
			// Negative indices count from one past the maximum index.
			if i += internal.IndexedMax(vr.List, vr.Indexes) + 1; i < 0 {
				return "", false, fmt.Errorf("negative array index")
			}
		}
		if str, ok := vr.indexedVal(i); ok {
			return str, true, nil
		}
	case Associative:
		switch lit := nodeLit(idx); lit {
		case "@", "*":
			strs := slices.Sorted(maps.Values(vr.Map))
			if lit == "*" {
				return cfg.ifsJoin(strs), vr.IsSet(), nil
			}
			return strings.Join(strs, " "), vr.IsSet(), nil
		}
		val, err := Literal(cfg, idx.(*syntax.Word))
		if err != nil {
			return "", false, err
		}
		str, ok := vr.Map[val]
		return str, ok, nil
	}
	return "", false, nil
}

// assignElem assigns a variable via an expansion like ${a=val} or
// ${a[i]=val}, setting a single element when the variable is an array or is
// indexed, like Bash. ${a[i]=val} on a whole scalar converts it to an array.
func (cfg *Config) assignElem(name string, vr Variable, idx syntax.ArithmExpr, val string) error {
	wenv, ok := cfg.Env.(WriteEnviron)
	if !ok {
		return fmt.Errorf("environment is read-only")
	}
	arrayWise := false
	switch nodeLit(idx) {
	case "@", "*":
		// ${a[@]=val} assigns the element at index zero.
		arrayWise = true
		idx = nil
	}
	if idx == nil && !arrayWise && vr.Kind != Indexed && vr.Kind != Associative {
		// A plain scalar assignment like ${x=val}, keeping attributes like export.
		vr.Set, vr.Kind, vr.Str = true, String, val
		vr.List, vr.Map, vr.Indexes = nil, nil, nil
		return wenv.Set(name, vr)
	}
	switch vr.Kind {
	case Associative:
		key := "0"
		if idx != nil {
			var err error
			if key, err = Literal(cfg, idx.(*syntax.Word)); err != nil {
				return err
			}
		}
		vr.Map = maps.Clone(vr.Map)
		if vr.Map == nil {
			vr.Map = make(map[string]string, 1)
		}
		vr.Map[key] = val
	default: // assign a single indexed element
		i := 0
		if idx != nil {
			var err error
			if i, err = Arithm(cfg, idx); err != nil {
				return err
			}
			if i < 0 {
				// Negative indices count from one past the maximum index.
				if i += internal.IndexedMax(vr.List, vr.Indexes) + 1; i < 0 {
					return fmt.Errorf("negative array index")
				}
			}
		}
		list, indexes := slices.Clone(vr.List), slices.Clone(vr.Indexes)
		if vr.Kind == String {
			list, indexes = []string{vr.Str}, nil
		}
		list, indexes = internal.SetIndexedElem(list, indexes, i, val)
		vr.Kind, vr.Str, vr.List, vr.Indexes = Indexed, "", list, indexes
	}
	vr.Set = true
	return wenv.Set(name, vr)
}

func (cfg *Config) namesByPrefix(prefix string) []string {
	var names []string
	for name := range cfg.Env.Each {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
