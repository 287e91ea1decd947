package coreutils

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

func init() {
	register("od", od)
	register("rev", rev)
	register("nl", nl)
	register("paste", paste)
	register("fold", fold)
	register("expr", exprCmd)
	register("comm", comm)
	register("column", column)
	register("stat", stat)
	register("md5sum", hashSum("md5sum", md5.New))
	register("sha1sum", hashSum("sha1sum", sha1.New))
	register("sha512sum", hashSum("sha512sum", sha512.New))
}

// odType is one output format of od: how many bytes each value takes, how it is printed, and
// the width of a printed value (without the space before it).
type odType struct {
	size  int
	kind  byte // c, o, x, d, u
	width int
}

var odWidths = map[byte]map[int]int{
	'o': {1: 3, 2: 6, 4: 11, 8: 22},
	'x': {1: 2, 2: 4, 4: 8, 8: 16},
	'd': {1: 4, 2: 6, 4: 11, 8: 20},
	'u': {1: 3, 2: 5, 4: 10, 8: 20},
}

func parseOdType(spec string) (odType, bool) {
	if spec == "" {
		return odType{}, false
	}
	kind := spec[0]
	if kind == 'c' || kind == 'a' {
		return odType{size: 1, kind: 'c', width: 3}, len(spec) == 1
	}
	if _, ok := odWidths[kind]; !ok {
		return odType{}, false
	}
	size := 4
	switch rest := spec[1:]; rest {
	case "":
	case "C":
		size = 1
	case "S":
		size = 2
	case "I":
		size = 4
	case "L":
		size = 8
	default:
		n, err := strconv.Atoi(rest)
		if err != nil || odWidths[kind][n] == 0 {
			return odType{}, false
		}
		size = n
	}
	return odType{size: size, kind: kind, width: odWidths[kind][size]}, true
}

var odChars = map[byte]string{0: `\0`, '\a': `\a`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`}

// format prints the values of one line of input for this type.
func (t odType) format(line []byte, fieldWidth int) string {
	var sb strings.Builder
	for i := 0; i < len(line); i += t.size {
		chunk := make([]byte, t.size)
		copy(chunk, line[i:])
		sb.WriteString(strings.Repeat(" ", fieldWidth-t.width))
		if t.kind == 'c' {
			c := chunk[0]
			switch s, ok := odChars[c]; {
			case ok:
				fmt.Fprintf(&sb, "%3s", s)
			case c >= 0x20 && c < 0x7f:
				fmt.Fprintf(&sb, "%3c", c)
			default:
				fmt.Fprintf(&sb, "%03o", c)
			}
			continue
		}
		var v uint64
		for j := t.size - 1; j >= 0; j-- { // little-endian, as on the usual hosts
			v = v<<8 | uint64(chunk[j])
		}
		switch t.kind {
		case 'o':
			fmt.Fprintf(&sb, "%0*o", t.width, v)
		case 'x':
			fmt.Fprintf(&sb, "%0*x", t.width, v)
		case 'u':
			fmt.Fprintf(&sb, "%*d", t.width, v)
		case 'd':
			shift := 64 - 8*t.size
			fmt.Fprintf(&sb, "%*d", t.width, int64(v<<shift)>>shift)
		}
	}
	return sb.String()
}

// od dumps its input: -A d|o|x|n for the offsets, -t TYPE (c, oN, xN, dN, uN, with N in bytes or
// C S I L), -c -b -o -x -d as their -t forms, -N count, -j skip, -w width, -v; repeated lines are
// shown once as "*" unless -v.
func od(e *Env, args []string) int {
	radix := byte('o')
	var types []odType
	limit, skip, width := -1, 0, 16
	all := false
	var files []string
	addType := func(spec string) bool {
		t, ok := parseOdType(spec)
		if ok {
			types = append(types, t)
		}
		return ok
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			files = append(files, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			if strings.IndexByte("AtNjw", c) >= 0 {
				v := a[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return e.usage("od", "option requires an argument -- '%c'", c)
					}
					i++
					v = args[i]
				}
				j = len(a)
				switch c {
				case 'A':
					if len(v) != 1 || strings.IndexByte("doxn", v[0]) < 0 {
						return e.usage("od", "invalid output address radix '%s'", v)
					}
					radix = v[0]
				case 't':
					if !addType(v) {
						return e.usage("od", "invalid type string '%s'", v)
					}
				case 'N', 'j', 'w':
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 {
						return e.usage("od", "invalid number '%s'", v)
					}
					switch c {
					case 'N':
						limit = n
					case 'j':
						skip = n
					case 'w':
						width = n
					}
				}
				continue
			}
			switch c {
			case 'c':
				addType("c")
			case 'b':
				addType("o1")
			case 'o':
				addType("o2")
			case 'x':
				addType("x2")
			case 'd':
				addType("u2")
			case 'v':
				all = true
			default:
				return e.usage("od", "invalid option -- '%c'", c)
			}
		}
	}
	if len(types) == 0 {
		types = []odType{{size: 2, kind: 'o', width: 6}}
	}
	if width <= 0 {
		width = 16
	}
	var data []byte
	status := eachInput(e, "od", files, func(_ string, r io.Reader) int {
		b, err := io.ReadAll(ctxReader{e.Ctx, r})
		if err != nil {
			return 1
		}
		data = append(data, b...)
		return 0
	})
	if skip > len(data) {
		skip = len(data)
	}
	data = data[skip:]
	if limit >= 0 && limit < len(data) {
		data = data[:limit]
	}

	offset := func(n int) string {
		switch radix {
		case 'd':
			return fmt.Sprintf("%07d", n)
		case 'x':
			return fmt.Sprintf("%06x", n)
		case 'n':
			return ""
		}
		return fmt.Sprintf("%07o", n)
	}
	w := bufio.NewWriter(e.Stdout)
	var prev []byte
	starred := false
	for off := 0; off < len(data); off += width {
		line := data[off:min(off+width, len(data))]
		if !all && prev != nil && len(line) == width && bytes.Equal(line, prev) {
			if !starred {
				w.WriteString("*\n")
				starred = true
			}
			continue
		}
		prev, starred = line, false
		for i, t := range types {
			if i == 0 {
				w.WriteString(offset(skip + off))
			} else if radix != 'n' {
				w.WriteString(strings.Repeat(" ", len(offset(0))))
			}
			w.WriteString(t.format(line, t.width+1))
			w.WriteByte('\n')
		}
	}
	if radix != 'n' {
		w.WriteString(offset(skip + len(data)))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("od", err)
	}
	return status
}

// rev reverses the characters of each line.
func rev(e *Env, args []string) int {
	ls, status := readLines(e, "rev", args[1:])
	w := bufio.NewWriter(e.Stdout)
	for _, l := range ls {
		rs := []rune(l)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		w.WriteString(string(rs))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("rev", err)
	}
	return status
}

// nl numbers lines: -b a|t|n (all, non-empty (default), none), -w width, -s separator, -v start,
// -i increment, -n ln|rn|rz.
func nl(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "", "bwsvin")
	if err != nil {
		return e.usage("nl", "%v", err)
	}
	style, sep, format := "t", "\t", "rn"
	width, num, incr := 6, 1, 1
	if v, ok := flags['b']; ok {
		style = v
	}
	if v, ok := flags['s']; ok {
		sep = v
	}
	if v, ok := flags['n']; ok {
		format = v
	}
	for c, p := range map[byte]*int{'w': &width, 'v': &num, 'i': &incr} {
		if v, ok := flags[c]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return e.usage("nl", "invalid number: '%s'", v)
			}
			*p = n
		}
	}
	ls, status := readLines(e, "nl", files)
	w := bufio.NewWriter(e.Stdout)
	for _, l := range ls {
		if style == "n" || style == "t" && l == "" {
			w.WriteString(strings.Repeat(" ", width+len(sep)))
			w.WriteString(l)
			w.WriteByte('\n')
			continue
		}
		switch format {
		case "ln":
			fmt.Fprintf(w, "%-*d", width, num)
		case "rz":
			fmt.Fprintf(w, "%0*d", width, num)
		default:
			fmt.Fprintf(w, "%*d", width, num)
		}
		w.WriteString(sep)
		w.WriteString(l)
		w.WriteByte('\n')
		num += incr
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("nl", err)
	}
	return status
}

// paste joins corresponding lines of files with tabs (-d list of delimiters, cycled), or each
// file's lines into one line (-s).
func paste(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "sz", "d")
	if err != nil {
		return e.usage("paste", "%v", err)
	}
	delims := []string{"\t"}
	if d, ok := flags['d']; ok {
		delims = nil
		for i := 0; i < len(d); i++ {
			switch {
			case d[i] == '\\' && i+1 < len(d):
				i++
				delims = append(delims, map[byte]string{'n': "\n", 't': "\t", '0': "", '\\': "\\"}[d[i]])
			default:
				delims = append(delims, d[i:i+1])
			}
		}
		if len(delims) == 0 {
			delims = []string{""}
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	inputs := make([][]string, len(files))
	var dashes []int // the operands that are standard input take its lines in turn
	for i, f := range files {
		if f == "-" {
			dashes = append(dashes, i)
			continue
		}
		ls, st := readLines(e, "paste", []string{f})
		status = max(status, st)
		inputs[i] = ls
	}
	if len(dashes) > 0 {
		ls, st := readLines(e, "paste", []string{"-"})
		status = max(status, st)
		for j, l := range ls {
			i := dashes[j%len(dashes)]
			inputs[i] = append(inputs[i], l)
		}
	}
	w := bufio.NewWriter(e.Stdout)
	if flags['s'] != "" {
		for _, ls := range inputs {
			for j, l := range ls {
				if j > 0 {
					w.WriteString(delims[(j-1)%len(delims)])
				}
				w.WriteString(l)
			}
			w.WriteByte('\n')
		}
	} else {
		rows := 0
		for _, ls := range inputs {
			rows = max(rows, len(ls))
		}
		for r := 0; r < rows; r++ {
			for i, ls := range inputs {
				if i > 0 {
					w.WriteString(delims[(i-1)%len(delims)])
				}
				if r < len(ls) {
					w.WriteString(ls[r])
				}
			}
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("paste", err)
	}
	return status
}

// fold wraps lines at -w columns (80), at the last blank before the limit with -s; -b counts
// bytes rather than characters.
func fold(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "sb", "w")
	if err != nil {
		return e.usage("fold", "%v", err)
	}
	width := 80
	if v, ok := flags['w']; ok {
		if width, err = strconv.Atoi(v); err != nil || width < 1 {
			return e.usage("fold", "invalid number of columns: '%s'", v)
		}
	}
	ls, status := readLines(e, "fold", files)
	w := bufio.NewWriter(e.Stdout)
	for _, l := range ls {
		units := []string{}
		if flags['b'] != "" {
			for i := 0; i < len(l); i++ {
				units = append(units, l[i:i+1])
			}
		} else {
			for _, r := range l {
				units = append(units, string(r))
			}
		}
		for len(units) > width {
			cut := width
			if flags['s'] != "" {
				for i := width - 1; i > 0; i-- {
					if units[i] == " " || units[i] == "\t" {
						cut = i + 1
						break
					}
				}
			}
			w.WriteString(strings.Join(units[:cut], ""))
			w.WriteByte('\n')
			units = units[cut:]
		}
		w.WriteString(strings.Join(units, ""))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("fold", err)
	}
	return status
}

// comm compares two sorted files: lines only in the first, only in the second, and in both, in
// three tab-indented columns; -1, -2, -3 hide a column.
func comm(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "123", "")
	if err != nil {
		return e.usage("comm", "%v", err)
	}
	if len(files) != 2 {
		return e.usage("comm", "missing operand")
	}
	a, st1 := readLines(e, "comm", files[:1])
	b, st2 := readLines(e, "comm", files[1:])
	if st1 != 0 || st2 != 0 {
		return 1
	}
	show := [3]bool{flags['1'] == "", flags['2'] == "", flags['3'] == ""}
	indent := func(col int) string {
		n := 0
		for i := 0; i < col; i++ {
			if show[i] {
				n++
			}
		}
		return strings.Repeat("\t", n)
	}
	w := bufio.NewWriter(e.Stdout)
	out := func(col int, l string) {
		if show[col] {
			w.WriteString(indent(col))
			w.WriteString(l)
			w.WriteByte('\n')
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			out(0, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			out(1, b[j])
			j++
		default:
			out(2, a[i])
			i, j = i+1, j+1
		}
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("comm", err)
	}
	return 0
}

// column -t aligns whitespace-separated (or -s SEP separated) fields in columns two spaces apart;
// without -t the input is copied.
func column(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "tx", "soc")
	if err != nil {
		return e.usage("column", "%v", err)
	}
	ls, status := readLines(e, "column", files)
	w := bufio.NewWriter(e.Stdout)
	if flags['t'] == "" {
		for _, l := range ls {
			if l != "" {
				w.WriteString(l)
				w.WriteByte('\n')
			}
		}
	} else {
		outSep := "  "
		if v, ok := flags['o']; ok {
			outSep = v
		}
		var rows [][]string
		var widths []int
		for _, l := range ls {
			var cells []string
			if sep, ok := flags['s']; ok {
				cells = strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(sep, r) })
			} else {
				cells = strings.Fields(l)
			}
			if len(cells) == 0 {
				continue
			}
			for i, c := range cells {
				if i >= len(widths) {
					widths = append(widths, 0)
				}
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
			rows = append(rows, cells)
		}
		for _, cells := range rows {
			for i, c := range cells {
				w.WriteString(c)
				if i < len(cells)-1 {
					w.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
					w.WriteString(outSep)
				}
			}
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("column", err)
	}
	return status
}

// stat prints file information: -c/--format FORMAT and --printf FORMAT with %n %s %a %A %F %U
// %G %u %g %i %h %Y %y %X %x %Z %z %b %B %%; -L follows links; without a format, GNU's layout.
func stat(e *Env, args []string) int {
	format, printf := "", false
	follow := false
	var files []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "--format" || a == "--printf":
			if i+1 >= len(args) {
				return e.usage("stat", "option requires an argument -- '%s'", a)
			}
			format, printf = args[i+1], a == "--printf"
			i++
		case strings.HasPrefix(a, "--format="):
			format = strings.TrimPrefix(a, "--format=")
		case strings.HasPrefix(a, "--printf="):
			format, printf = strings.TrimPrefix(a, "--printf="), true
		case a == "-L" || a == "--dereference":
			follow = true
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			format = a[2:]
		case len(a) > 1 && a[0] == '-':
			return e.usage("stat", "invalid option -- '%s'", a[1:])
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		return e.usage("stat", "missing operand")
	}
	status := 0
	for _, f := range files {
		info, err := e.FS.Stat(e.Abs(f), follow)
		if err != nil {
			e.errf("stat", "cannot stat '%s': %s", f, ErrText(err))
			status = 1
			continue
		}
		if format == "" {
			fmt.Fprintf(e.Stdout, "  File: %s\n  Size: %-10d\tBlocks: %-10d IO Block: 4096   %s\n", f, info.Size(), (info.Size()+511)/512, fileType(info))
			fmt.Fprintf(e.Stdout, "Access: (%04o/%s)  Uid: ( 1000/ sandbox)   Gid: ( 1000/ sandbox)\n", info.Mode().Perm(), info.Mode())
			t := info.ModTime().UTC().Format("2006-01-02 15:04:05.000000000 -0700")
			fmt.Fprintf(e.Stdout, "Access: %s\nModify: %s\nChange: %s\n Birth: -\n", t, t, t)
			continue
		}
		out := statFormat(format, f, info, !printf)
		if !printf {
			out += "\n"
		}
		if _, err := io.WriteString(e.Stdout, out); err != nil {
			return e.writeErr("stat", err)
		}
	}
	return status
}

func fileType(info fs.FileInfo) string {
	m := info.Mode()
	switch {
	case m.IsRegular() && info.Size() == 0:
		return "regular empty file"
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeCharDevice != 0:
		return "character special file"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	}
	return "unknown"
}

func statFormat(format, name string, info fs.FileInfo, plain bool) string {
	var sb strings.Builder
	mt := info.ModTime()
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '\\' && !plain && i+1 < len(format) {
			i++
			sb.WriteString(map[byte]string{'n': "\n", 't': "\t", '\\': "\\"}[format[i]])
			continue
		}
		if c != '%' || i+1 >= len(format) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'n':
			sb.WriteString(name)
		case 's':
			sb.WriteString(strconv.FormatInt(info.Size(), 10))
		case 'a':
			sb.WriteString(strconv.FormatUint(uint64(info.Mode().Perm()), 8))
		case 'A':
			sb.WriteString(info.Mode().String())
		case 'F':
			sb.WriteString(fileType(info))
		case 'U', 'G':
			sb.WriteString("sandbox")
		case 'u', 'g':
			sb.WriteString("1000")
		case 'i':
			fmt.Fprint(&sb, info.Sys())
		case 'h':
			sb.WriteString("1")
		case 'b':
			sb.WriteString(strconv.FormatInt((info.Size()+511)/512, 10))
		case 'B':
			sb.WriteString("512")
		case 'Y', 'X', 'Z', 'W':
			sb.WriteString(strconv.FormatInt(mt.Unix(), 10))
		case 'y', 'x', 'z', 'w':
			sb.WriteString(mt.UTC().Format("2006-01-02 15:04:05.000000000 -0700"))
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(format[i])
		}
	}
	return sb.String()
}

// hashSum is md5sum, sha1sum and sha512sum: the digest of each file or standard input.
func hashSum(name string, newHash func() hash.Hash) Func {
	return func(e *Env, args []string) int {
		_, files, err := parseFlags(args[1:], "bt", "")
		if err != nil {
			return e.usage(name, "%v", err)
		}
		if len(files) == 0 {
			files = []string{"-"}
		}
		status := 0
		for _, f := range files {
			r, err := e.open(f)
			if err != nil {
				e.errf(name, "%s: %s", f, ErrText(err))
				status = 1
				continue
			}
			h := newHash()
			_, err = io.Copy(h, ctxReader{e.Ctx, r})
			r.Close()
			if err != nil {
				if e.Ctx.Err() != nil {
					return 130
				}
				e.errf(name, "%s: %s", f, ErrText(err))
				status = 1
				continue
			}
			fmt.Fprintf(e.Stdout, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), f)
		}
		return status
	}
}

// exprCmd evaluates an expression of its arguments like expr(1): integers and strings with
// | & = != < <= > >= + - * / % : (a regexp match), length, substr, index, match and
// parentheses. It prints the result; the status is 1 for a null or zero result, 2 for an error.
func exprCmd(e *Env, args []string) int {
	p := &exprParser{toks: args[1:]}
	if len(p.toks) == 0 {
		return e.usage("expr", "missing operand")
	}
	v, err := p.or()
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("syntax error: unexpected argument '%s'", p.toks[p.pos])
	}
	if err != nil {
		e.errf("expr", "%v", err)
		return 2
	}
	fmt.Fprintln(e.Stdout, v)
	if v == "" || v == "0" {
		return 1
	}
	return 0
}

type exprParser struct {
	toks []string
	pos  int
}

func (p *exprParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *exprParser) next() (string, error) {
	if p.pos >= len(p.toks) {
		return "", fmt.Errorf("syntax error: missing argument after '%s'", p.toks[len(p.toks)-1])
	}
	p.pos++
	return p.toks[p.pos-1], nil
}

func exprInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func (p *exprParser) binary(ops []string, operand func() (string, error), apply func(op, a, b string) (string, error)) (string, error) {
	a, err := operand()
	if err != nil {
		return "", err
	}
	for {
		op := p.peek()
		found := false
		for _, o := range ops {
			found = found || o == op
		}
		if !found {
			return a, nil
		}
		p.pos++
		b, err := operand()
		if err != nil {
			return "", err
		}
		if a, err = apply(op, a, b); err != nil {
			return "", err
		}
	}
}

func (p *exprParser) or() (string, error) {
	return p.binary([]string{"|"}, p.and, func(_, a, b string) (string, error) {
		if a != "" && a != "0" {
			return a, nil
		}
		if b != "" && b != "0" {
			return b, nil
		}
		return "0", nil
	})
}

func (p *exprParser) and() (string, error) {
	return p.binary([]string{"&"}, p.compare, func(_, a, b string) (string, error) {
		if a == "" || a == "0" || b == "" || b == "0" {
			return "0", nil
		}
		return a, nil
	})
}

func (p *exprParser) compare() (string, error) {
	return p.binary([]string{"=", "==", "!=", "<", "<=", ">", ">="}, p.sum, func(op, a, b string) (string, error) {
		c := strings.Compare(a, b)
		if x, ok := exprInt(a); ok {
			if y, ok := exprInt(b); ok {
				c = 0
				if x < y {
					c = -1
				} else if x > y {
					c = 1
				}
			}
		}
		res := map[string]bool{"=": c == 0, "==": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]
		if res {
			return "1", nil
		}
		return "0", nil
	})
}

func (p *exprParser) arith(ops []string, operand func() (string, error)) (string, error) {
	return p.binary(ops, operand, func(op, a, b string) (string, error) {
		x, ok1 := exprInt(a)
		y, ok2 := exprInt(b)
		if !ok1 || !ok2 {
			return "", fmt.Errorf("non-integer argument")
		}
		switch op {
		case "+":
			return strconv.FormatInt(x+y, 10), nil
		case "-":
			return strconv.FormatInt(x-y, 10), nil
		case "*":
			return strconv.FormatInt(x*y, 10), nil
		}
		if y == 0 {
			return "", fmt.Errorf("division by zero")
		}
		if op == "/" {
			return strconv.FormatInt(x/y, 10), nil
		}
		return strconv.FormatInt(x%y, 10), nil
	})
}

func (p *exprParser) sum() (string, error) { return p.arith([]string{"+", "-"}, p.product) }

func (p *exprParser) product() (string, error) { return p.arith([]string{"*", "/", "%"}, p.match) }

func (p *exprParser) match() (string, error) {
	return p.binary([]string{":"}, p.primary, func(_, a, b string) (string, error) { return exprMatch(a, b) })
}

// exprMatch anchors a basic regular expression at the start of s: the result is the first
// group's text, or the length of the match.
func exprMatch(s, re string) (string, error) {
	rx, err := regexp.Compile("^(?:" + breToERE(re) + ")")
	if err != nil {
		return "", fmt.Errorf("invalid regular expression")
	}
	m := rx.FindStringSubmatch(s)
	if rx.NumSubexp() > 0 {
		if m == nil {
			return "", nil
		}
		return m[1], nil
	}
	if m == nil {
		return "0", nil
	}
	return strconv.Itoa(utf8.RuneCountInString(m[0])), nil
}

func (p *exprParser) primary() (string, error) {
	t, err := p.next()
	if err != nil {
		return "", err
	}
	arg := func() (string, error) { return p.next() }
	switch t {
	case "(":
		v, err := p.or()
		if err != nil {
			return "", err
		}
		if c, err := p.next(); err != nil || c != ")" {
			return "", fmt.Errorf("syntax error: expecting ')'")
		}
		return v, nil
	case "length":
		s, err := arg()
		return strconv.Itoa(utf8.RuneCountInString(s)), err
	case "substr":
		s, err1 := arg()
		pos, err2 := arg()
		n, err3 := arg()
		if err := firstErr(err1, err2, err3); err != nil {
			return "", err
		}
		rs := []rune(s)
		i, ok1 := exprInt(pos)
		l, ok2 := exprInt(n)
		if !ok1 || !ok2 || i < 1 || l < 1 || int(i) > len(rs) {
			return "", nil
		}
		end := min(int(i-1+l), len(rs))
		return string(rs[i-1 : end]), nil
	case "index":
		s, err1 := arg()
		chars, err2 := arg()
		if err := firstErr(err1, err2); err != nil {
			return "", err
		}
		for i, r := range []rune(s) {
			if strings.ContainsRune(chars, r) {
				return strconv.Itoa(i + 1), nil
			}
		}
		return "0", nil
	case "match":
		s, err1 := arg()
		re, err2 := arg()
		if err := firstErr(err1, err2); err != nil {
			return "", err
		}
		return exprMatch(s, re)
	case "+":
		return arg()
	}
	return t, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
