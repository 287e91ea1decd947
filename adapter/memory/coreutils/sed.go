package coreutils

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

func init() { register("sed", sed) }

type sedAddr struct {
	kind string // "line", "last", "re"
	line int
	re   *regexp.Regexp
}

type sedCmd struct {
	a1, a2  *sedAddr
	negate  bool
	name    byte
	re      *regexp.Regexp
	repl    string
	global  bool
	nth     int
	print   bool
	text    string
	block   []*sedCmd
	from    []rune
	to      []rune
	inRange bool
}

type sedParser struct {
	s   string
	i   int
	ere bool
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sedParser) compile(pat string, flags string) (*regexp.Regexp, error) {
	if p.ere {
		pat = ereFix(pat)
	} else {
		pat = breToERE(pat)
	}
	if strings.ContainsAny(flags, "iI") {
		pat = "(?i)" + pat
	}
	if strings.ContainsAny(flags, "mM") {
		pat = "(?m)" + pat
	}
	return regexp.Compile(pat)
}

// delimited reads text up to an unescaped delim; "\delim" becomes delim, "\n" a newline.
func (p *sedParser) delimited(delim byte, keepEscapes bool) (string, error) {
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		if c == '\\' && p.i+1 < len(p.s) {
			n := p.s[p.i+1]
			switch {
			case n == delim:
				b.WriteByte(delim)
			case n == 'n' && !keepEscapes:
				b.WriteByte('\n')
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			p.i += 2
			continue
		}
		if c == '[' && !keepEscapes {
			j := bracketEnd(p.s, p.i)
			b.WriteString(p.s[p.i:j])
			p.i = j
			continue
		}
		if c == delim {
			p.i++
			return b.String(), nil
		}
		b.WriteByte(c)
		p.i++
	}
	return "", fmt.Errorf("unterminated address regex or `s' command")
}

func (p *sedParser) addr() (*sedAddr, error) {
	if p.eof() {
		return nil, nil
	}
	c := p.s[p.i]
	switch {
	case c >= '0' && c <= '9':
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(p.s[p.i:j])
		p.i = j
		return &sedAddr{kind: "line", line: n}, nil
	case c == '$':
		p.i++
		return &sedAddr{kind: "last"}, nil
	case c == '/' || c == '\\':
		delim := byte('/')
		if c == '\\' {
			p.i++
			if p.eof() {
				return nil, fmt.Errorf("unexpected end")
			}
			delim = p.s[p.i]
		}
		p.i++
		pat, err := p.delimited(delim, false)
		if err != nil {
			return nil, err
		}
		flags := ""
		for !p.eof() && (p.s[p.i] == 'I' || p.s[p.i] == 'M') {
			flags += string(p.s[p.i])
			p.i++
		}
		re, err := p.compile(pat, flags)
		if err != nil {
			return nil, err
		}
		return &sedAddr{kind: "re", re: re}, nil
	}
	return nil, nil
}

func (p *sedParser) parse(untilBrace bool) ([]*sedCmd, error) {
	var cmds []*sedCmd
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.s[p.i]) >= 0 {
			p.i++
		}
		if p.eof() {
			if untilBrace {
				return nil, fmt.Errorf("unmatched `{'")
			}
			return cmds, nil
		}
		if p.s[p.i] == '}' {
			if !untilBrace {
				return nil, fmt.Errorf("unexpected `}'")
			}
			p.i++
			return cmds, nil
		}
		if p.s[p.i] == '#' {
			for !p.eof() && p.s[p.i] != '\n' {
				p.i++
			}
			continue
		}
		cmd := &sedCmd{}
		var err error
		if cmd.a1, err = p.addr(); err != nil {
			return nil, err
		}
		if cmd.a1 != nil && !p.eof() && p.s[p.i] == ',' {
			p.i++
			if cmd.a2, err = p.addr(); err != nil {
				return nil, err
			}
			if cmd.a2 == nil {
				return nil, fmt.Errorf("unexpected `,'")
			}
		}
		p.skipSpace()
		if !p.eof() && p.s[p.i] == '!' {
			cmd.negate = true
			p.i++
			p.skipSpace()
		}
		if p.eof() {
			return nil, fmt.Errorf("missing command")
		}
		cmd.name = p.s[p.i]
		p.i++
		switch cmd.name {
		case '{':
			if cmd.block, err = p.parse(true); err != nil {
				return nil, err
			}
		case 's':
			if p.eof() {
				return nil, fmt.Errorf("unterminated `s' command")
			}
			delim := p.s[p.i]
			p.i++
			pat, err := p.delimited(delim, false)
			if err != nil {
				return nil, err
			}
			repl, err := p.delimited(delim, true)
			if err != nil {
				return nil, err
			}
			cmd.repl = repl
			flags := ""
			for !p.eof() && strings.IndexByte("gpiIm0123456789", p.s[p.i]) >= 0 {
				c := p.s[p.i]
				switch {
				case c == 'g':
					cmd.global = true
				case c == 'p':
					cmd.print = true
				case c >= '0' && c <= '9':
					cmd.nth = cmd.nth*10 + int(c-'0')
				default:
					flags += string(c)
				}
				p.i++
			}
			if cmd.re, err = p.compile(pat, flags); err != nil {
				return nil, err
			}
		case 'y':
			if p.eof() {
				return nil, fmt.Errorf("unterminated `y' command")
			}
			delim := p.s[p.i]
			p.i++
			from, err := p.delimited(delim, false)
			if err != nil {
				return nil, err
			}
			to, err := p.delimited(delim, false)
			if err != nil {
				return nil, err
			}
			cmd.from, cmd.to = []rune(from), []rune(to)
			if len(cmd.from) != len(cmd.to) {
				return nil, fmt.Errorf("strings for `y' command are different lengths")
			}
		case 'a', 'i', 'c':
			if !p.eof() && p.s[p.i] == '\\' {
				p.i++
				if !p.eof() && p.s[p.i] == '\n' {
					p.i++
				}
			}
			p.skipSpace()
			j := strings.IndexByte(p.s[p.i:], '\n')
			if j < 0 {
				j = len(p.s) - p.i
			}
			cmd.text = strings.ReplaceAll(p.s[p.i:p.i+j], `\n`, "\n")
			p.i += j
		case 'p', 'd', 'D', 'n', 'N', 'P', 'h', 'H', 'g', 'G', 'x', '=', 'z', 'l', 'F':
		case 'q', 'Q':
			p.skipSpace()
			j := p.i
			for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
				j++
			}
			cmd.nth, _ = strconv.Atoi(p.s[p.i:j])
			p.i = j
		default:
			return nil, fmt.Errorf("unknown command: `%c'", cmd.name)
		}
		cmds = append(cmds, cmd)
	}
}

// sedRun is the state of one sed pass over a stream of lines.
type sedRun struct {
	quiet   bool
	out     *bufio.Writer
	lines   []string
	idx     int // index of the next line to read
	lineNo  int
	hold    string
	quit    bool
	code    int
	appends []string
}

func (r *sedRun) last() bool { return r.idx >= len(r.lines) }

func (r *sedRun) matchAddr(a *sedAddr, pattern string) bool {
	switch a.kind {
	case "line":
		return r.lineNo == a.line
	case "last":
		return r.last()
	}
	return a.re.MatchString(pattern)
}

func (r *sedRun) selected(c *sedCmd, pattern string) bool {
	if c.a1 == nil {
		return !c.negate
	}
	var hit bool
	if c.a2 == nil {
		hit = r.matchAddr(c.a1, pattern)
	} else if c.inRange {
		hit = true
		if (c.a2.kind == "line" && r.lineNo >= c.a2.line) || (c.a2.kind != "line" && r.matchAddr(c.a2, pattern)) {
			c.inRange = false
		}
	} else if r.matchAddr(c.a1, pattern) {
		hit = true
		if !(c.a2.kind == "line" && r.lineNo >= c.a2.line) {
			c.inRange = true
		}
	}
	return hit != c.negate
}

// substitute applies s///; it reports whether a replacement happened.
func substitute(c *sedCmd, s string) (string, bool) {
	matches := c.re.FindAllStringSubmatchIndex(s, -1)
	if len(matches) == 0 {
		return s, false
	}
	var b strings.Builder
	last, n, done := 0, 0, false
	for _, m := range matches {
		n++
		if c.nth > 0 && n < c.nth || done {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(expandRepl(c.repl, s, m))
		last = m[1]
		if !c.global {
			done = true
		}
	}
	if last == 0 && n < c.nth {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

func expandRepl(repl, s string, m []int) string {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '&':
			b.WriteString(s[m[0]:m[1]])
		case c == '\\' && i+1 < len(repl):
			i++
			n := repl[i]
			switch {
			case n >= '0' && n <= '9':
				g := int(n - '0')
				if 2*g+1 < len(m) && m[2*g] >= 0 {
					b.WriteString(s[m[2*g]:m[2*g+1]])
				}
			case n == 'n':
				b.WriteByte('\n')
			case n == 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(n)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// exec runs cmds on the pattern space; it returns the new pattern space and whether the cycle
// ended early (d) and whether to skip autoprint.
func (r *sedRun) exec(cmds []*sedCmd, ps string) (string, bool) {
	for _, c := range cmds {
		if r.quit {
			return ps, false
		}
		if !r.selected(c, ps) {
			continue
		}
		switch c.name {
		case '{':
			var deleted bool
			ps, deleted = r.exec(c.block, ps)
			if deleted {
				return ps, true
			}
		case 's':
			if out, ok := substitute(c, ps); ok {
				ps = out
				if c.print {
					r.out.WriteString(ps + "\n")
				}
			}
		case 'y':
			rs := []rune(ps)
			for i, ch := range rs {
				for k, f := range c.from {
					if ch == f {
						rs[i] = c.to[k]
						break
					}
				}
			}
			ps = string(rs)
		case 'p':
			r.out.WriteString(ps + "\n")
		case 'P':
			first, _, _ := strings.Cut(ps, "\n")
			r.out.WriteString(first + "\n")
		case 'd':
			return ps, true
		case 'D':
			if i := strings.IndexByte(ps, '\n'); i >= 0 {
				return ps[i+1:], true
			}
			return ps, true
		case '=':
			fmt.Fprintf(r.out, "%d\n", r.lineNo)
		case 'a':
			r.appends = append(r.appends, c.text)
		case 'i':
			r.out.WriteString(c.text + "\n")
		case 'c':
			if c.a2 == nil || !c.inRange {
				r.out.WriteString(c.text + "\n")
			}
			return ps, true
		case 'h':
			r.hold = ps
		case 'H':
			r.hold += "\n" + ps
		case 'g':
			ps = r.hold
		case 'G':
			ps += "\n" + r.hold
		case 'x':
			ps, r.hold = r.hold, ps
		case 'z':
			ps = ""
		case 'n':
			if !r.quiet {
				r.out.WriteString(ps + "\n")
			}
			r.flushAppends()
			if r.last() {
				r.quit = true
				return ps, true
			}
			ps = r.lines[r.idx]
			r.idx++
			r.lineNo++
		case 'N':
			if r.last() {
				r.quit = true
				return ps, false
			}
			ps += "\n" + r.lines[r.idx]
			r.idx++
			r.lineNo++
		case 'q':
			r.quit, r.code = true, c.nth
			return ps, false
		case 'Q':
			r.quit, r.code = true, c.nth
			return ps, true
		}
	}
	return ps, false
}

func (r *sedRun) flushAppends() {
	for _, a := range r.appends {
		r.out.WriteString(a + "\n")
	}
	r.appends = r.appends[:0]
}

// run processes text and writes the result.
func (r *sedRun) run(cmds []*sedCmd, text []byte, w io.Writer) int {
	r.out = bufio.NewWriter(w)
	r.lines = lines(text)
	missingNL := len(text) > 0 && text[len(text)-1] != '\n'
	r.idx, r.lineNo = 0, 0
	for !r.quit && !r.last() {
		ps := r.lines[r.idx]
		r.idx++
		r.lineNo++
		out, deleted := r.exec(cmds, ps)
		if !deleted && !r.quiet {
			r.out.WriteString(out)
			if !(missingNL && r.last()) {
				r.out.WriteByte('\n')
			}
		}
		r.flushAppends()
	}
	r.out.Flush()
	return r.code
}

func sed(e *Env, args []string) int {
	rest := args[1:]
	var scripts []string
	quiet, inPlace, ere := false, false, false
	var files []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			files = append(files, rest[i+1:]...)
			i = len(rest)
		case a == "-n" || a == "--quiet" || a == "--silent":
			quiet = true
		case a == "-E" || a == "-r" || a == "--regexp-extended":
			ere = true
		case a == "-i" || strings.HasPrefix(a, "-i") && !strings.HasPrefix(a, "-in") || strings.HasPrefix(a, "--in-place"):
			inPlace = true
		case a == "-e" || a == "--expression":
			if i+1 >= len(rest) {
				return e.usage("sed", "option requires an argument -- 'e'")
			}
			i++
			scripts = append(scripts, rest[i])
		case strings.HasPrefix(a, "-e"):
			scripts = append(scripts, a[2:])
		case a == "-f":
			if i+1 >= len(rest) {
				return e.usage("sed", "option requires an argument -- 'f'")
			}
			i++
			data, err := e.readAll(rest[i])
			if err != nil {
				return e.fail("sed", "couldn't open file %s: %s", rest[i], ErrText(err))
			}
			scripts = append(scripts, string(data))
		case a == "-s" || a == "-u" || a == "-z" || a == "--posix":
		case strings.HasPrefix(a, "-") && len(a) > 1 && !strings.HasPrefix(a, "--"):
			// bundles such as -ne or -nE
			ok := true
			for _, c := range a[1:] {
				switch c {
				case 'n':
					quiet = true
				case 'E', 'r':
					ere = true
				case 'i':
					inPlace = true
				case 's', 'u':
				default:
					ok = false
				}
			}
			if !ok {
				return e.usage("sed", "invalid option -- '%s'", a[1:])
			}
		default:
			files = append(files, a)
		}
	}
	if scripts == nil {
		if len(files) == 0 {
			return e.usage("sed", "no script specified")
		}
		scripts, files = files[:1], files[1:]
	}
	p := &sedParser{s: strings.Join(scripts, "\n"), ere: ere}
	cmds, err := p.parse(false)
	if err != nil {
		return e.fail("sed", "-e expression #1, char %d: %v", p.i, err)
	}
	if inPlace {
		if len(files) == 0 {
			return e.fail("sed", "no input files")
		}
		status := 0
		for _, f := range files {
			data, err := e.readAll(f)
			if err != nil {
				e.errf("sed", "can't read %s: %s", f, ErrText(err))
				status = 2
				continue
			}
			var buf bytes.Buffer
			r := &sedRun{quiet: quiet}
			code := r.run(cmds, data, &buf)
			if err := e.FS.WriteFile(e.Abs(f), buf.Bytes(), 0o644); err != nil {
				e.errf("sed", "couldn't write %s: %s", f, ErrText(err))
				status = 4
			}
			if code != 0 {
				status = code
			}
		}
		return status
	}
	var input []byte
	status := 0
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, f := range files {
		data, err := e.readAll(f)
		if err != nil {
			e.errf("sed", "can't read %s: %s", f, ErrText(err))
			status = 2
			continue
		}
		input = append(input, data...)
		if len(input) > 0 && input[len(input)-1] != '\n' && f != files[len(files)-1] {
			input = append(input, '\n')
		}
	}
	r := &sedRun{quiet: quiet}
	if code := r.run(cmds, input, e.Stdout); code != 0 {
		return code
	}
	return status
}
