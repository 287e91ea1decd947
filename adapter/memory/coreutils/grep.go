package coreutils

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func init() {
	register("grep", grep)
	register("egrep", func(e *Env, args []string) int { return grep(e, append([]string{"grep", "-E"}, args[1:]...)) })
	register("fgrep", func(e *Env, args []string) int { return grep(e, append([]string{"grep", "-F"}, args[1:]...)) })
	register("rg", rg)
}

// breToERE converts a POSIX basic regular expression to the extended syntax Go understands:
// \( \) \{ \} \| \+ \? become operators and their bare forms become literals.
func breToERE(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			switch n := p[i]; n {
			case '(', ')', '{', '}', '|', '+', '?':
				b.WriteByte(n)
			case '<', '>':
				b.WriteString(`\b`)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '[':
			j := bracketEnd(p, i)
			b.WriteString(p[i:j])
			i = j - 1
		case c == '(' || c == ')' || c == '{' || c == '}' || c == '|' || c == '+' || c == '?':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '*' && (i == 0 || (i == 1 && p[0] == '^')):
			b.WriteString(`\*`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ereFix rewrites the GNU extensions \< and \> of an extended expression.
func ereFix(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			if p[i+1] == '<' || p[i+1] == '>' {
				b.WriteString(`\b`)
			} else {
				b.WriteString(p[i : i+2])
			}
			i++
		case c == '[':
			j := bracketEnd(p, i)
			b.WriteString(p[i:j])
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// bracketEnd returns the index just past the bracket expression starting at p[i] == '['.
func bracketEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) {
		if p[j] == '[' && j+1 < len(p) && (p[j+1] == ':' || p[j+1] == '.' || p[j+1] == '=') {
			if k := strings.Index(p[j+2:], string(p[j+1])+"]"); k >= 0 {
				j += k + 4
				continue
			}
		}
		if p[j] == ']' {
			return j + 1
		}
		j++
	}
	return len(p)
}

type matchOpts struct {
	fixed, extended, ignoreCase, word, line bool
}

// lineMatcher matches single lines, with a multi-line twin that searches a whole buffer at once
// so that sparse matches in big inputs cost one scan, not one regexp run per line.
type lineMatcher struct {
	line    *regexp.Regexp
	multi   *regexp.Regexp
	literal []byte // set when the pattern is a plain literal: bytes.Index replaces the regexp
}

// find returns the offset of the first match candidate in data, or -1. The window is cut at a
// line end so that the regexp's working memory stays small whatever the input size.
func (m lineMatcher) find(data []byte) int {
	if m.literal != nil {
		return bytes.Index(data, m.literal)
	}
	const window = 16 << 10
	off := 0
	for off < len(data) {
		end := len(data)
		if off+window < end {
			if nl := bytes.IndexByte(data[off+window:], '\n'); nl >= 0 {
				end = off + window + nl + 1
			}
		}
		if loc := m.multi.FindIndex(data[off:end]); loc != nil {
			return off + loc[0]
		}
		off = end
	}
	return -1
}

// scan calls fn for every line (0-based number, text without its newline) that matches, or with
// invert every line that does not; fn returns false to stop.
func (m lineMatcher) scan(data []byte, invert bool, fn func(ln int, line []byte) bool) {
	if invert || m.multi == nil {
		ln := 0
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			line := data
			if i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if m.line.Match(line) != invert && !fn(ln, line) {
				return
			}
			ln++
		}
		return
	}
	pos, ln := 0, 0 // pos is the start of line ln
	for pos < len(data) {
		at := m.find(data[pos:])
		if at < 0 {
			return
		}
		start := pos + at
		// Move to the line holding the match start.
		ls := bytes.LastIndexByte(data[pos:start], '\n')
		if ls >= 0 {
			ln += bytes.Count(data[pos:pos+ls+1], []byte{'\n'})
			pos += ls + 1
		}
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		line := data[pos:]
		if end >= 0 {
			line, next = data[pos:pos+end], pos+end+1
		}
		if (m.literal != nil || m.line.Match(line)) && !fn(ln, line) {
			return
		}
		pos, ln = next, ln+1
	}
}

func compileMatcher(pats []string, o matchOpts) (lineMatcher, error) {
	re, err := compilePatterns(pats, o)
	if err != nil {
		return lineMatcher{}, err
	}
	multi, err := regexp.Compile("(?m)" + re.String())
	if err != nil {
		multi = nil
	}
	m := lineMatcher{line: re, multi: multi}
	if prefix, complete := re.LiteralPrefix(); complete && prefix != "" && !strings.Contains(prefix, "\n") {
		m.literal = []byte(prefix)
	}
	return m, nil
}

func compilePatterns(pats []string, o matchOpts) (*regexp.Regexp, error) {
	parts := make([]string, 0, len(pats))
	for _, p := range pats {
		switch {
		case o.fixed:
			p = regexp.QuoteMeta(p)
		case o.extended:
			p = ereFix(p)
		default:
			p = breToERE(p)
		}
		parts = append(parts, "(?:"+p+")")
	}
	expr := strings.Join(parts, "|")
	if o.word {
		expr = `(?:^|\b)(?:` + expr + `)(?:\b|$)`
		if len(pats) > 0 && o.fixed {
			expr = `\b(?:` + strings.Join(parts, "|") + `)\b`
		}
	}
	if o.line {
		expr = `^(?:` + expr + `)$`
	}
	if o.ignoreCase {
		expr = "(?i)" + expr
	}
	return regexp.Compile(expr)
}

func grep(e *Env, args []string) int {
	rest := args[1:]
	var pats []string
	o := matchOpts{}
	var invert, count, list, listNo, quiet, number, recursive, noName, withName, only, silent bool
	after, before := 0, 0
	var operands []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			operands = append(operands, rest[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a[2:], "=")
			switch name {
			case "regexp":
				if !hasVal && i+1 < len(rest) {
					i++
					val = rest[i]
				}
				pats = append(pats, val)
			case "ignore-case":
				o.ignoreCase = true
			case "invert-match":
				invert = true
			case "count":
				count = true
			case "files-with-matches":
				list = true
			case "files-without-match":
				listNo = true
			case "quiet", "silent":
				quiet = true
			case "line-number":
				number = true
			case "recursive":
				recursive = true
			case "word-regexp":
				o.word = true
			case "line-regexp":
				o.line = true
			case "extended-regexp":
				o.extended = true
			case "fixed-strings":
				o.fixed = true
			case "no-filename":
				noName = true
			case "with-filename":
				withName = true
			case "only-matching":
				only = true
			case "color", "colour", "include", "exclude", "exclude-dir", "binary-files", "null-data":
			default:
				return e.usage("grep", "unrecognized option '%s'", a)
			}
			continue
		}
		if len(a) < 2 || a[0] != '-' {
			operands = append(operands, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			takeVal := func() (string, bool) {
				if j+1 < len(a) {
					v := a[j+1:]
					j = len(a)
					return v, true
				}
				if i+1 < len(rest) {
					i++
					j = len(a)
					return rest[i], true
				}
				return "", false
			}
			switch c {
			case 'e', 'A', 'B', 'C', 'm', 'f':
				v, ok := takeVal()
				if !ok {
					return e.usage("grep", "option requires an argument -- '%c'", c)
				}
				switch c {
				case 'e':
					pats = append(pats, v)
				case 'f':
					data, err := e.readAll(v)
					if err != nil {
						return e.usage("grep", "%s: %s", v, ErrText(err))
					}
					pats = append(pats, lines(data)...)
				case 'm':
				default:
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 {
						return e.usage("grep", "%s: invalid context length argument", v)
					}
					if c != 'B' {
						after = n
					}
					if c != 'A' {
						before = n
					}
				}
			case 'i', 'y':
				o.ignoreCase = true
			case 'v':
				invert = true
			case 'c':
				count = true
			case 'l':
				list = true
			case 'L':
				listNo = true
			case 'q':
				quiet = true
			case 'n':
				number = true
			case 'r', 'R':
				recursive = true
			case 'w':
				o.word = true
			case 'x':
				o.line = true
			case 'E':
				o.extended = true
			case 'F':
				o.fixed = true
			case 'G':
				o.extended = false
			case 'h':
				noName = true
			case 'H':
				withName = true
			case 'o':
				only = true
			case 's':
				silent = true
			case 'I', 'a', 'U', 'Z', 'z', 'P':
			default:
				return e.usage("grep", "invalid option -- '%c'", c)
			}
		}
	}
	if pats == nil {
		if len(operands) == 0 {
			return e.usage("grep", "usage: grep [OPTION]... PATTERNS [FILE]...")
		}
		pats = strings.Split(operands[0], "\n")
		operands = operands[1:]
	}
	m, err := compileMatcher(pats, o)
	if err != nil {
		return e.usage("grep", "%v", err)
	}
	re := m.line
	implicitDot := false
	if len(operands) == 0 {
		if recursive {
			operands = []string{"."}
			implicitDot = true
		} else {
			operands = []string{"-"}
		}
	}
	type input struct{ label, abs string }
	var inputs []input
	status := 1
	hadErr := false
	for _, op := range operands {
		if op == "-" {
			inputs = append(inputs, input{"(standard input)", "-"})
			continue
		}
		abs := e.Abs(op)
		info, err := e.FS.Stat(abs, true)
		if err != nil {
			if !silent {
				e.errf("grep", "%s: %s", op, ErrText(err))
			}
			hadErr = true
			continue
		}
		if !info.IsDir() {
			inputs = append(inputs, input{op, abs})
			continue
		}
		if !recursive {
			if !silent {
				e.errf("grep", "%s: Is a directory", op)
			}
			hadErr = true
			continue
		}
		ents, err := e.FS.Walk(abs)
		if err != nil {
			hadErr = true
			continue
		}
		for _, en := range ents {
			if !en.Info.Mode().IsRegular() {
				continue
			}
			rel := strings.TrimPrefix(en.Path, abs+"/")
			if abs == "/" {
				rel = strings.TrimPrefix(en.Path, "/")
			}
			label := path.Join(op, rel)
			if implicitDot {
				label = rel
			} else if op == "." || strings.HasSuffix(op, "/") {
				label = strings.TrimSuffix(op, "/") + "/" + rel
			}
			inputs = append(inputs, input{label, en.Path})
		}
	}
	showName := (len(inputs) > 1 || recursive) && !noName || withName
	w := bufio.NewWriterSize(e.Stdout, 32<<10)
	for _, in := range inputs {
		if e.Ctx.Err() != nil {
			return 130
		}
		var data []byte
		var err error
		if in.abs == "-" {
			data, err = e.readAll("-")
		} else {
			data, err = e.FS.Content(in.abs)
		}
		if err != nil {
			if !silent {
				e.errf("grep", "%s: %s", in.label, ErrText(err))
			}
			hadErr = true
			continue
		}
		binary := bytes.IndexByte(data, 0) >= 0
		matches := 0
		if before == 0 && after == 0 {
			m.scan(data, invert, func(ln int, line []byte) bool {
				matches++
				if quiet || count || list || listNo || binary {
					return !quiet && !binary && !list
				}
				if only && !invert {
					for _, mm := range re.FindAll(line, -1) {
						if len(mm) > 0 {
							writeGrepLine(w, showName, number, in.label, ln+1, ':', mm)
						}
					}
				} else {
					writeGrepLine(w, showName, number, in.label, ln+1, ':', line)
				}
				return true
			})
			if quiet && matches > 0 {
				return 0
			}
			if matches > 0 {
				status = 0
			}
			grepSummary(w, count, list, listNo, binary && !quiet, showName, in.label, matches)
			continue
		}
		lastPrinted := -1
		pending := 0 // lines of after-context still to print
		ls := splitLinesKeep(data)
		for ln, raw := range ls {
			line := bytes.TrimSuffix(raw, []byte{'\n'})
			hit := re.Match(line) != invert
			if !hit {
				if pending > 0 && !count && !list && !listNo && !quiet && !binary {
					writeGrepLine(w, showName, number, in.label, ln+1, '-', line)
					lastPrinted = ln
					pending--
				}
				continue
			}
			matches++
			if quiet {
				return 0
			}
			if count || list || listNo {
				continue
			}
			if binary {
				break
			}
			if before > 0 || after > 0 {
				start := max(ln-before, lastPrinted+1)
				if lastPrinted >= 0 && start > lastPrinted+1 {
					w.WriteString("--\n")
				}
				for k := start; k < ln; k++ {
					writeGrepLine(w, showName, number, in.label, k+1, '-', bytes.TrimSuffix(ls[k], []byte{'\n'}))
				}
				pending = after
			}
			if only && !invert {
				for _, m := range re.FindAll(line, -1) {
					if len(m) > 0 {
						writeGrepLine(w, showName, number, in.label, ln+1, ':', m)
					}
				}
			} else {
				writeGrepLine(w, showName, number, in.label, ln+1, ':', line)
			}
			lastPrinted = ln
		}
		if matches > 0 {
			status = 0
		}
		grepSummary(w, count, list, listNo, binary && !quiet, showName, in.label, matches)
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("grep", err)
	}
	if hadErr && !(quiet && status == 0) {
		return 2
	}
	return status
}

func writeGrepLine(w *bufio.Writer, name, number bool, label string, ln int, sep byte, line []byte) {
	if name {
		w.WriteString(label)
		w.WriteByte(sep)
	}
	if number {
		w.WriteString(strconv.Itoa(ln))
		w.WriteByte(sep)
	}
	w.Write(line)
	w.WriteByte('\n')
}

// rg is ripgrep's search with its output format: "LINE:text" for a single file operand,
// "PATH:LINE:text" when searching directories or several operands (paths as given, joined with
// the operand; no operand means the working directory with bare relative paths). Directory walks
// skip hidden entries and binary files and go in path order; a binary file given by name
// reports "binary file matches". Exit 0 on a match, 1 on none, 2 on an error (bad regex with
// "regex parse error", missing path).
func rg(e *Env, args []string) int {
	rest := args[1:]
	o := matchOpts{extended: true}
	var pats, operands []string
	var number, count, list, hidden, quiet, noName, withName, invert, only bool
	number = false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			operands = append(operands, rest[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			operands = append(operands, a)
			continue
		}
		switch a {
		case "-n", "--line-number":
			number = true
		case "-N", "--no-line-number":
			number = false
		case "-i", "--ignore-case":
			o.ignoreCase = true
		case "-S", "--smart-case":
		case "-s", "--case-sensitive":
			o.ignoreCase = false
		case "-F", "--fixed-strings":
			o.fixed = true
		case "-w", "--word-regexp":
			o.word = true
		case "-x", "--line-regexp":
			o.line = true
		case "-v", "--invert-match":
			invert = true
		case "-c", "--count":
			count = true
		case "-l", "--files-with-matches":
			list = true
		case "-q", "--quiet":
			quiet = true
		case "-o", "--only-matching":
			only = true
		case "--hidden", "-uu", "-uuu", "-u":
			hidden = true
		case "-I", "--no-filename":
			noName = true
		case "-H", "--with-filename":
			withName = true
		case "--no-heading", "--no-ignore", "--color=never", "--no-messages", "--no-config":
		case "-e", "--regexp":
			if i+1 >= len(rest) {
				return e.usage("rg", "error: a value is required for '%s'", a)
			}
			i++
			pats = append(pats, rest[i])
		default:
			if v, ok := strings.CutPrefix(a, "--regexp="); ok {
				pats = append(pats, v)
				continue
			}
			if strings.HasPrefix(a, "--color") || strings.HasPrefix(a, "--colors") {
				continue
			}
			fmt.Fprintf(e.Stderr, "error: Found argument '%s' which wasn't expected, or isn't valid in this context\n", a)
			return 2
		}
	}
	if pats == nil {
		if len(operands) == 0 {
			fmt.Fprintln(e.Stderr, "error: The following required arguments were not provided:\n    <PATTERN>")
			return 2
		}
		pats, operands = operands[:1], operands[1:]
	}
	m, err := compileMatcher(pats, o)
	re := m.line
	if err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "error parsing regexp") {
			msg = msg[len("error parsing regexp: "):]
		}
		fmt.Fprintf(e.Stderr, "regex parse error:\n    %s\nerror: %s\n", strings.Join(pats, "|"), msg)
		return 2
	}
	implicit := len(operands) == 0
	if implicit {
		operands = []string{"."}
	}
	type input struct {
		label, abs string
		named      bool // given by name, not found by a walk
	}
	var inputs []input
	hadErr := false
	anyDir := false
	for _, op := range operands {
		abs := e.Abs(op)
		info, err := e.FS.Stat(abs, true)
		if err != nil {
			fmt.Fprintf(e.Stderr, "%s: No such file or directory (os error 2)\n", op)
			hadErr = true
			continue
		}
		if !info.IsDir() {
			inputs = append(inputs, input{op, abs, true})
			continue
		}
		anyDir = true
		ents, err := e.FS.Walk(abs)
		if err != nil {
			hadErr = true
			continue
		}
		var found []input
		for _, en := range ents {
			rel := strings.TrimPrefix(en.Path, strings.TrimSuffix(abs, "/")+"/")
			if !hidden && hasHiddenPart(rel) {
				continue
			}
			if !en.Info.Mode().IsRegular() {
				continue
			}
			label := rel
			if !implicit {
				label = strings.TrimSuffix(op, "/") + "/" + rel
				if op == "/" {
					label = "/" + rel
				}
			}
			found = append(found, input{label, en.Path, false})
		}
		sort.Slice(found, func(i, j int) bool { return found[i].label < found[j].label })
		inputs = append(inputs, found...)
	}
	showName := (anyDir || len(operands) > 1) && !noName || withName
	w := bufio.NewWriterSize(e.Stdout, 32<<10)
	status := 1
	for _, in := range inputs {
		if e.Ctx.Err() != nil {
			return 130
		}
		data, err := e.FS.Content(in.abs)
		if err != nil {
			fmt.Fprintf(e.Stderr, "%s: %s\n", in.label, ErrText(err))
			hadErr = true
			continue
		}
		nul := bytes.IndexByte(data, 0)
		if nul >= 0 && !in.named {
			continue
		}
		matches := 0
		m.scan(data, invert, func(ln int, line []byte) bool {
			matches++
			if quiet || count || list || nul >= 0 {
				return !quiet && !list && nul < 0
			}
			emit := func(text []byte) {
				if showName {
					w.WriteString(in.label)
					w.WriteByte(':')
				}
				if number {
					w.WriteString(strconv.Itoa(ln + 1))
					w.WriteByte(':')
				}
				w.Write(text)
				w.WriteByte('\n')
			}
			if only && !invert {
				for _, mm := range re.FindAll(line, -1) {
					emit(mm)
				}
			} else {
				emit(line)
			}
			return true
		})
		if quiet && matches > 0 {
			return 0
		}
		if matches == 0 {
			continue
		}
		status = 0
		switch {
		case count:
			if showName {
				fmt.Fprintf(w, "%s:%d\n", in.label, matches)
			} else {
				fmt.Fprintf(w, "%d\n", matches)
			}
		case list:
			fmt.Fprintln(w, in.label)
		case nul >= 0:
			if showName {
				fmt.Fprintf(w, "%s: ", in.label)
			}
			fmt.Fprintf(w, "binary file matches (found \"\\0\" byte around offset %d)\n", nul)
		}
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("rg", err)
	}
	if hadErr {
		return 2
	}
	return status
}

func hasHiddenPart(rel string) bool {
	for _, p := range strings.Split(rel, "/") {
		if strings.HasPrefix(p, ".") && p != "." && p != ".." {
			return true
		}
	}
	return false
}

var _ fs.FileInfo

// grepSummary writes what grep prints per input instead of its lines: the count (-c), the name
// (-l, -L), or the binary-file notice.
func grepSummary(w io.Writer, count, list, listNo, binary, showName bool, label string, matches int) {
	switch {
	case count:
		if showName {
			fmt.Fprintf(w, "%s:%d\n", label, matches)
		} else {
			fmt.Fprintf(w, "%d\n", matches)
		}
	case list:
		if matches > 0 {
			fmt.Fprintln(w, label)
		}
	case listNo:
		if matches == 0 {
			fmt.Fprintln(w, label)
		}
	case binary && matches > 0:
		fmt.Fprintf(w, "Binary file %s matches\n", label)
	}
}
