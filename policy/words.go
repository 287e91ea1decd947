package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// kind says how much is known statically about a word.
type kind uint8

const (
	static kind = iota // value known, exactly one word
	single             // value unknown, exactly one word (a quoted expansion)
	multi              // value and number of words unknown (unquoted expansion, glob)
)

// arg is one word of a command as far as it can be known before running.
type arg struct {
	s    string // the value when k == static; with dyn marking unknown parts otherwise
	k    kind
	src  string // source text, for reporting
	base string // basename known even if the value is not (quoted "$HOME/bin/tool" -> "tool")
}

// dyn stands for the unknown parts of a word in its text; it never occurs in shell source
// that the parser accepts as a literal, and it is not a URL or host character.
const dyn = "\x00"

// maxBraceWords bounds brace expansion ({a,b}{c,d}... grows exponentially); a word expanding
// to more is treated as unknown.
const maxBraceWords = 256

// wordText returns the text of w with unknown parts replaced by dyn, and its kind. Globs and
// unquoted expansions make it multi; quoted expansions single.
func wordText(w *syntax.Word) (string, kind) {
	if len(w.Parts) == 1 {
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			v, glob := unescapeLit(p.Value)
			if glob {
				return v, multi
			}
			return v, static
		case *syntax.SglQuoted:
			if !p.Dollar {
				return p.Value, static
			}
		}
	}
	var b strings.Builder
	k := static
	for _, p := range w.Parts {
		pk := partText(&b, p, false)
		k = max(k, pk)
	}
	return b.String(), k
}

func partText(b *strings.Builder, p syntax.WordPart, quoted bool) kind {
	switch p := p.(type) {
	case *syntax.Lit:
		if quoted {
			b.WriteString(unescapeDq(p.Value))
			return static
		}
		v, glob := unescapeLit(p.Value)
		b.WriteString(v)
		if glob {
			return multi
		}
		return static
	case *syntax.SglQuoted:
		if p.Dollar {
			b.WriteString(ansiC(p.Value))
		} else {
			b.WriteString(p.Value)
		}
		return static
	case *syntax.DblQuoted:
		k := static
		for _, q := range p.Parts {
			k = max(k, partText(b, q, true))
		}
		return k
	case *syntax.ParamExp:
		b.WriteString(dyn)
		if !quoted {
			return multi
		}
		// "$@", "${a[@]}" and friends are several words even when quoted.
		if p.Param != nil && (p.Param.Value == "@" || p.Param.Value == "*") {
			return multi
		}
		if p.Index != nil || p.Names != 0 {
			return multi
		}
		return single
	case *syntax.ArithmExp, *syntax.ProcSubst:
		b.WriteString(dyn)
		return single
	default: // CmdSubst, ExtGlob, BraceExp and anything newer
		b.WriteString(dyn)
		if quoted {
			return single
		}
		return multi
	}
}

// unescapeLit removes the backslash quoting of an unquoted literal and reports whether it holds
// an unquoted glob (*, ?, or [...]).
func unescapeLit(s string) (string, bool) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, hasGlob(s)
	}
	var b strings.Builder
	glob := false
	open := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '\\' {
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
			continue
		}
		switch ch {
		case '*', '?':
			glob = true
		case '[':
			open = true
		case ']':
			if open {
				glob = true
			}
		}
		b.WriteByte(ch)
	}
	return b.String(), glob
}

func hasGlob(s string) bool {
	open := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?':
			return true
		case '[':
			open = true
		case ']':
			if open {
				return true
			}
		}
	}
	return false
}

// unescapeDq removes the backslashes that double quotes honour (\$ \` \" \\ and line continuation).
func unescapeDq(s string) string { return unescapeBackslashes(s, true) }

// unescapeBackslashes drops the backslash before $ ` \ (and " when quote is set) and removes
// backslash-newline line continuations; every other backslash stays.
func unescapeBackslashes(s string, quote bool) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch c := s[i+1]; {
			case c == '$', c == '`', c == '\\', c == '"' && quote:
				b.WriteByte(c)
				i++
				continue
			case c == '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// heredocText is the text of a here-document body: verbatim when the delimiter was quoted,
// otherwise with \$ \` \\ and line continuations removed and expansions unknown.
func heredocText(delim, body *syntax.Word) (string, kind) {
	if body == nil {
		return "", static // an empty body
	}
	quotedDelim := false
	if delim != nil {
		for _, p := range delim.Parts {
			switch p := p.(type) {
			case *syntax.SglQuoted, *syntax.DblQuoted:
				quotedDelim = true
			case *syntax.Lit:
				if strings.IndexByte(p.Value, '\\') >= 0 {
					quotedDelim = true
				}
			}
		}
	}
	var b strings.Builder
	k := static
	for _, p := range body.Parts {
		if lit, ok := p.(*syntax.Lit); ok {
			if quotedDelim {
				b.WriteString(lit.Value)
			} else {
				b.WriteString(unescapeHeredoc(lit.Value))
			}
			continue
		}
		k = max(k, partText(&b, p, true))
	}
	return b.String(), k
}

// unescapeHeredoc removes the backslashes an unquoted here-document honours: those of double
// quotes except \" (which stays as it is).
func unescapeHeredoc(s string) string { return unescapeBackslashes(s, false) }

// ansiC decodes the body of a $'...' string.
func ansiC(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			for j < len(s) && j-i-1 < n && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				b.WriteByte(byte(v))
			} else if utf8.ValidRune(rune(v)) {
				b.WriteRune(rune(v))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(v))
			i = j - 1
		default: // \\ \' \" \? and unknown escapes keep the character
			if c != '\\' && c != '\'' && c != '"' && c != '?' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// knownBase sets a.base for a single word whose last path element is literal text after a
// literal slash, so `"$HOME/bin/tool"` is still known to run a program named tool.
func knownBase(a *arg) {
	switch a.k {
	case static:
		a.base = basename(a.s)
	case single:
		slash := strings.LastIndexByte(a.s, '/')
		if slash > strings.LastIndex(a.s, dyn) && slash < len(a.s)-1 {
			a.base = a.s[slash+1:]
		}
	}
}

// lit is a word known statically.
func lit(s string) arg { return arg{s: s, src: s, base: basename(s)} }

// basename is the command name a path runs: the text after the last slash.
func basename(s string) string {
	s = strings.TrimRight(s, "/")
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// appendBraces appends the words w expands to with bash brace expansion, or one unknown word
// when the expansion would be large.
func (c *checker) appendBraces(out []arg, w *syntax.Word, src string) []arg {
	wsrc := srcOf(src, w)
	if !syntax.SplitBraces(w) {
		return append(out, c.resolveWord(w, wsrc))
	}
	if braceCount(w) > maxBraceWords {
		return append(out, arg{s: dyn, k: multi, src: wsrc})
	}
	for _, e := range expand.Braces(w) {
		out = append(out, c.resolveWord(e, wsrc))
	}
	return out
}

// resolveWords turns the words of a simple command into args, expanding braces.
func (c *checker) resolveWords(words []*syntax.Word, src string) []arg {
	out := make([]arg, 0, len(words))
	for _, w := range words {
		if hasBraceCandidate(w) {
			out = c.appendBraces(out, w, src)
			continue
		}
		out = append(out, c.resolveWord(w, srcOf(src, w)))
	}
	return out
}

func (c *checker) resolveWord(w *syntax.Word, src string) arg {
	s, k := wordText(w)
	a := arg{s: s, k: k, src: src}
	knownBase(&a)
	return a
}

// srcOf returns the source text of node n inside src, or "" when the offsets do not fit.
func srcOf(src string, n syntax.Node) string {
	if w, ok := n.(*syntax.Word); ok && (w == nil || len(w.Parts) == 0) {
		return ""
	}
	p, e := n.Pos(), n.End()
	if !p.IsValid() || !e.IsValid() {
		return ""
	}
	i, j := int(p.Offset()), int(e.Offset())
	if i < 0 || j > len(src) || i > j {
		return ""
	}
	return src[i:j]
}

func hasBraceCandidate(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.IndexByte(lit.Value, '{') >= 0 {
			return true
		}
	}
	return false
}

// braceCount is the number of words w expands to, saturating above maxBraceWords.
func braceCount(w *syntax.Word) int {
	n := 1
	for _, p := range w.Parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		m := 0
		if be.Sequence {
			m = seqCount(be)
		} else {
			for _, e := range be.Elems {
				m += braceCount(e)
				if m > maxBraceWords {
					return maxBraceWords + 1
				}
			}
		}
		n *= max(m, 1)
		if n > maxBraceWords {
			return maxBraceWords + 1
		}
	}
	return n
}

func seqCount(be *syntax.BraceExp) int {
	if len(be.Elems) < 2 {
		return 1
	}
	from, to := be.Elems[0].Lit(), be.Elems[1].Lit()
	step := int64(1)
	if len(be.Elems) > 2 {
		if v, err := strconv.ParseInt(be.Elems[2].Lit(), 10, 64); err == nil && v != 0 {
			step = max(v, -v)
		}
	}
	span := int64(0)
	if len(from) > 12 || len(to) > 12 {
		return maxBraceWords + 1 // no overflow games with huge bounds
	}
	if a, err1 := strconv.ParseInt(from, 10, 64); err1 == nil {
		b, err2 := strconv.ParseInt(to, 10, 64)
		if err2 != nil {
			return maxBraceWords + 1
		}
		span = max(a-b, b-a)
	} else if len(from) == 1 && len(to) == 1 {
		span = max(int64(from[0])-int64(to[0]), int64(to[0])-int64(from[0]))
	}
	if span < 0 || span/step >= maxBraceWords {
		return maxBraceWords + 1
	}
	return int(span/step) + 1
}
