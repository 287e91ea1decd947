package coreutils

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

func init() {
	register("head", head)
	register("tail", tail)
	register("wc", wc)
	register("sort", sortCmd)
	register("uniq", uniq)
	register("cut", cut)
	register("tr", tr)
	register("tee", tee)
	register("seq", seq)
	register("yes", yes)
	register("sleep", sleep)
	register("env", env)
	register("printenv", printenv)
	register("sha256sum", sha256sum)
	register("base64", base64Cmd)
	register("xargs", xargs)
	register("date", date)
	register("tac", tac)
	register("nproc", func(e *Env, _ []string) int { fmt.Fprintln(e.Stdout, 1); return 0 })
	register("whoami", func(e *Env, _ []string) int { fmt.Fprintln(e.Stdout, "sandbox"); return 0 })
	register("uname", func(e *Env, args []string) int {
		if len(args) > 1 && (args[1] == "-a") {
			fmt.Fprintln(e.Stdout, "Linux sandbox memory sandboxer x86_64 GNU/Linux")
			return 0
		}
		fmt.Fprintln(e.Stdout, "Linux")
		return 0
	})
}

// numArg parses "-5" style shortcuts (head -5) into -n 5.
func numShortcut(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			out = append(out, "-n", a[1:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// parseCount reads a count with an optional size suffix (K, M, G, kB, MB...).
func parseCount(s string) (int64, bool) {
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"kB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"K", 1 << 10}, {"k", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"b", 512}} {
		if strings.HasSuffix(s, suf.s) {
			mult, s = suf.m, strings.TrimSuffix(s, suf.s)
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n * mult, true
}

func eachInput(e *Env, name string, files []string, fn func(label string, r io.Reader) int) int {
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, f := range files {
		r, err := e.open(f)
		if err != nil {
			e.errf(name, "cannot open '%s' for reading: %s", f, ErrText(err))
			status = 1
			continue
		}
		if s := fn(f, ctxReader{e.Ctx, r}); s != 0 {
			status = s
		}
		r.Close()
		if e.Ctx.Err() != nil {
			return 130
		}
	}
	return status
}

func head(e *Env, args []string) int {
	flags, files, err := parseFlags(numShortcut(args[1:]), "qv", "nc")
	if err != nil {
		return e.usage("head", "%v", err)
	}
	lines, bytesMode := int64(10), false
	if v, ok := flags['n']; ok {
		n, ok := parseCount(v)
		if !ok {
			return e.usage("head", "invalid number of lines: '%s'", v)
		}
		lines = n
	}
	if v, ok := flags['c']; ok {
		n, ok := parseCount(v)
		if !ok {
			return e.usage("head", "invalid number of bytes: '%s'", v)
		}
		lines, bytesMode = n, true
	}
	headers := (len(files) > 1 && flags['q'] == "") || flags['v'] != ""
	w := bufio.NewWriterSize(e.Stdout, 32<<10)
	header := fileHeaders(w, headers)
	status := eachInput(e, "head", files, func(label string, r io.Reader) int {
		header(label)
		if bytesMode {
			if lines < 0 {
				data, _ := io.ReadAll(r)
				if int64(len(data)) > -lines {
					w.Write(data[:int64(len(data))+lines])
				}
				return 0
			}
			if _, err := io.CopyN(w, r, lines); err != nil && err != io.EOF {
				return 0
			}
			return 0
		}
		br := bufio.NewReaderSize(r, 32<<10)
		if lines < 0 {
			data, _ := io.ReadAll(br)
			all := splitLinesKeep(data)
			if n := int64(len(all)) + lines; n > 0 {
				for _, l := range all[:n] {
					w.Write(l)
				}
			}
			return 0
		}
		for i := int64(0); i < lines; i++ {
			l, err := br.ReadSlice('\n')
			for err == bufio.ErrBufferFull {
				w.Write(l)
				l, err = br.ReadSlice('\n')
			}
			w.Write(l)
			if err != nil {
				break
			}
		}
		return 0
	})
	if err := w.Flush(); err != nil {
		return e.writeErr("head", err)
	}
	return status
}

// splitLinesKeep splits data into lines that keep their newline.
func splitLinesKeep(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}

// lines splits text into lines without newlines (a final newline does not make an empty line).
func lines(data []byte) []string {
	s := string(data)
	s = strings.TrimSuffix(s, "\n")
	if s == "" && len(data) <= 1 {
		if len(data) == 1 {
			return []string{""}
		}
		return nil
	}
	return strings.Split(s, "\n")
}

func tail(e *Env, args []string) int {
	flags, files, err := parseFlags(numShortcut(args[1:]), "qvfF", "nc")
	if err != nil {
		return e.usage("tail", "%v", err)
	}
	count, fromStart, bytesMode := int64(10), false, false
	spec := ""
	if v, ok := flags['n']; ok {
		spec = v
	}
	if v, ok := flags['c']; ok {
		spec, bytesMode = v, true
	}
	if spec != "" {
		if strings.HasPrefix(spec, "+") {
			fromStart = true
			spec = spec[1:]
		}
		n, ok := parseCount(strings.TrimPrefix(spec, "-"))
		if !ok {
			return e.usage("tail", "invalid number: '%s'", spec)
		}
		count = n
	}
	headers := (len(files) > 1 && flags['q'] == "") || flags['v'] != ""
	w := bufio.NewWriter(e.Stdout)
	header := fileHeaders(w, headers)
	status := eachInput(e, "tail", files, func(label string, r io.Reader) int {
		header(label)
		data, err := io.ReadAll(r)
		if err != nil {
			return 1
		}
		if bytesMode {
			switch {
			case fromStart:
				if c := max(count-1, 0); c < int64(len(data)) {
					w.Write(data[c:])
				}
			case count < int64(len(data)):
				w.Write(data[int64(len(data))-count:])
			default:
				w.Write(data)
			}
			return 0
		}
		all := splitLinesKeep(data)
		var keep [][]byte
		switch {
		case fromStart:
			if c := max(count-1, 0); c < int64(len(all)) {
				keep = all[c:]
			}
		case count < int64(len(all)):
			keep = all[int64(len(all))-count:]
		default:
			keep = all
		}
		for _, l := range keep {
			w.Write(l)
		}
		return 0
	})
	if err := w.Flush(); err != nil {
		return e.writeErr("tail", err)
	}
	return status
}

func wc(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "lwcmL", "")
	if err != nil {
		return e.usage("wc", "%v", err)
	}
	showL, showW, showC, showM := flags['l'] != "", flags['w'] != "", flags['c'] != "", flags['m'] != ""
	if !showL && !showW && !showC && !showM {
		showL, showW, showC = true, true, true
	}
	type counts struct{ l, w, c, m int64 }
	var rows []counts
	var labels []string
	var total counts
	status := eachInput(e, "wc", files, func(label string, r io.Reader) int {
		var c counts
		buf := make([]byte, 64<<10)
		inWord := false
		for {
			n, err := r.Read(buf)
			chunk := buf[:n]
			c.c += int64(n)
			c.l += int64(bytes.Count(chunk, []byte{'\n'}))
			if showW || showM {
				for _, b := range chunk {
					if showM && (b&0xC0 != 0x80) {
						c.m++
					}
					space := b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\v' || b == '\f'
					if !space && !inWord {
						c.w++
					}
					inWord = !space
				}
			}
			if err != nil {
				break
			}
		}
		rows = append(rows, c)
		labels = append(labels, label)
		total.l, total.w, total.c, total.m = total.l+c.l, total.w+c.w, total.c+c.c, total.m+c.m
		return 0
	})
	if len(files) > 1 {
		rows = append(rows, total)
		labels = append(labels, "total")
	}
	single := 0
	for _, b := range []bool{showL, showW, showM, showC} {
		if b {
			single++
		}
	}
	width := 1
	if single > 1 || len(files) > 0 {
		width = len(strconv.FormatInt(max(total.c, 1), 10))
		if len(files) == 0 {
			width = 7
		}
	}
	if single == 1 && len(files) <= 1 {
		width = 1
	}
	w := bufio.NewWriter(e.Stdout)
	for i, c := range rows {
		var parts []string
		for _, f := range []struct {
			on bool
			v  int64
		}{{showL, c.l}, {showW, c.w}, {showM, c.m}, {showC, c.c}} {
			if f.on {
				parts = append(parts, fmt.Sprintf("%*d", width, f.v))
			}
		}
		line := strings.Join(parts, " ")
		if len(files) > 0 {
			line += " " + labels[i]
		}
		fmt.Fprintln(w, line)
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("wc", err)
	}
	return status
}

// readLines reads every input as lines.
func readLines(e *Env, name string, files []string) ([]string, int) {
	var out []string
	status := eachInput(e, name, files, func(label string, r io.Reader) int {
		data, err := io.ReadAll(r)
		if err != nil {
			return 1
		}
		out = append(out, lines(data)...)
		return 0
	})
	return out, status
}

// readRecords is readLines for NUL-terminated records (sort -z).
func readRecords(e *Env, name string, files []string) ([]string, int) {
	var out []string
	status := eachInput(e, name, files, func(label string, r io.Reader) int {
		data, err := io.ReadAll(r)
		if err != nil {
			return 1
		}
		recs := strings.Split(string(data), "\x00")
		if recs[len(recs)-1] == "" {
			recs = recs[:len(recs)-1]
		}
		out = append(out, recs...)
		return 0
	})
	return out, status
}

func sortCmd(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "rnufbhVscz", "ktTo")
	if err != nil {
		return e.usage("sort", "%v", err)
	}
	read, term := readLines, byte('\n')
	if flags['z'] != "" {
		read, term = readRecords, 0
	}
	ls, status := read(e, "sort", files)
	sep := flags['t']
	keyField, keyEnd := 0, 0
	if k, ok := flags['k']; ok {
		startSpec, endSpec, hasEnd := strings.Cut(k, ",")
		field := func(spec string) (int, bool) {
			spec = strings.TrimRight(spec, "nrbfg")
			if i := strings.IndexByte(spec, '.'); i >= 0 {
				spec = spec[:i]
			}
			n, err := strconv.Atoi(spec)
			return n, err == nil && n >= 1
		}
		n, ok := field(startSpec)
		if !ok {
			return e.usage("sort", "invalid key '%s'", k)
		}
		keyField = n
		if hasEnd {
			if keyEnd, ok = field(endSpec); !ok {
				return e.usage("sort", "invalid key '%s'", k)
			}
		}
		if strings.ContainsRune(k, 'n') {
			flags['n'] = "1"
		}
		if strings.ContainsRune(k, 'r') {
			flags['r'] = "1"
		}
	}
	key := func(s string) string {
		if keyField == 0 {
			return s
		}
		var fields []string
		if sep != "" {
			fields = strings.Split(s, sep)
		} else {
			fields = strings.Fields(s)
		}
		if keyField > len(fields) {
			return ""
		}
		end := len(fields)
		if keyEnd > 0 && keyEnd < end {
			end = keyEnd
		}
		if end < keyField {
			return ""
		}
		j := " "
		if sep != "" {
			j = sep
		}
		return strings.Join(fields[keyField-1:end], j)
	}
	numeric, fold, reverse := flags['n'] != "" || flags['h'] != "", flags['f'] != "", flags['r'] != ""
	cmp := func(a, b string) int {
		ka, kb := key(a), key(b)
		if flags['b'] != "" {
			ka, kb = strings.TrimLeft(ka, " \t"), strings.TrimLeft(kb, " \t")
		}
		if numeric {
			na, nb := leadingNumber(ka), leadingNumber(kb)
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
			if flags['u'] != "" {
				return 0
			}
		}
		if fold {
			ka, kb = strings.ToUpper(ka), strings.ToUpper(kb)
		}
		if c := strings.Compare(ka, kb); c != 0 || keyField == 0 || flags['s'] != "" {
			return c
		}
		return strings.Compare(a, b)
	}
	if flags['c'] != "" {
		for i := 1; i < len(ls); i++ {
			if c := cmp(ls[i-1], ls[i]); (c > 0 && !reverse) || (c < 0 && reverse) {
				e.errf("sort", "-:%d: disorder: %s", i+1, ls[i])
				return 1
			}
		}
		return status
	}
	sort.SliceStable(ls, func(i, j int) bool {
		c := cmp(ls[i], ls[j])
		if reverse {
			return c > 0
		}
		return c < 0
	})
	w := bufio.NewWriter(e.Stdout)
	if o, ok := flags['o']; ok {
		var buf bytes.Buffer
		w = bufio.NewWriter(&buf)
		defer func() {
			w.Flush()
			_ = e.FS.WriteFile(e.Abs(o), buf.Bytes(), 0o644)
		}()
	}
	for i, l := range ls {
		if flags['u'] != "" && i > 0 && cmp(ls[i-1], l) == 0 {
			continue
		}
		w.WriteString(l)
		w.WriteByte(term)
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("sort", err)
	}
	return status
}

func leadingNumber(s string) float64 {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] == '-' && end == 0 || s[end] == '.' || s[end] >= '0' && s[end] <= '9') {
		end++
	}
	f, _ := strconv.ParseFloat(s[:end], 64)
	mult := 1.0
	if end < len(s) {
		switch s[end] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		}
	}
	return f * mult
}

func uniq(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "cdui", "")
	if err != nil {
		return e.usage("uniq", "%v", err)
	}
	var in []string
	out := ""
	if len(files) > 1 {
		out = files[1]
		files = files[:1]
	}
	in, status := readLines(e, "uniq", files)
	var buf bytes.Buffer
	eq := func(a, b string) bool {
		if flags['i'] != "" {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	for i := 0; i < len(in); {
		j := i + 1
		for j < len(in) && eq(in[i], in[j]) {
			j++
		}
		n := j - i
		if (flags['d'] == "" || n > 1) && (flags['u'] == "" || n == 1) {
			if flags['c'] != "" {
				fmt.Fprintf(&buf, "%7d %s\n", n, in[i])
			} else {
				buf.WriteString(in[i])
				buf.WriteByte('\n')
			}
		}
		i = j
	}
	if out != "" {
		if err := e.FS.WriteFile(e.Abs(out), buf.Bytes(), 0o644); err != nil {
			return e.fail("uniq", "%s: %s", out, ErrText(err))
		}
		return status
	}
	if _, err := e.Stdout.Write(buf.Bytes()); err != nil {
		return e.writeErr("uniq", err)
	}
	return status
}

// parseRanges reads cut's LIST (1,3-5,7-).
func parseRanges(s string) ([][2]int, bool) {
	var out [][2]int
	for _, part := range strings.Split(s, ",") {
		lo, hi := 1, 1<<30
		a, b, isRange := strings.Cut(part, "-")
		var err error
		if a != "" {
			if lo, err = strconv.Atoi(a); err != nil || lo < 1 {
				return nil, false
			}
		}
		if !isRange {
			hi = lo
		} else if b != "" {
			if hi, err = strconv.Atoi(b); err != nil {
				return nil, false
			}
		}
		out = append(out, [2]int{lo, hi})
	}
	return out, true
}

func inRanges(r [][2]int, i int) bool {
	for _, x := range r {
		if i >= x[0] && i <= x[1] {
			return true
		}
	}
	return false
}

func cut(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "s", "dfcb")
	if err != nil {
		return e.usage("cut", "%v", err)
	}
	delim := "\t"
	if d, ok := flags['d']; ok {
		if len(d) != 1 {
			return e.usage("cut", "the delimiter must be a single character")
		}
		delim = d
	}
	list, mode := flags['f'], 'f'
	if c, ok := flags['c']; ok {
		list, mode = c, 'c'
	} else if b, ok := flags['b']; ok {
		list, mode = b, 'c'
	}
	if list == "" {
		return e.usage("cut", "you must specify a list of bytes, characters, or fields")
	}
	ranges, ok := parseRanges(list)
	if !ok {
		return e.usage("cut", "invalid field list '%s'", list)
	}
	ls, status := readLines(e, "cut", files)
	w := bufio.NewWriter(e.Stdout)
	for _, l := range ls {
		if mode == 'c' {
			var b strings.Builder
			for i, r := range []rune(l) {
				if inRanges(ranges, i+1) {
					b.WriteRune(r)
				}
			}
			w.WriteString(b.String())
			w.WriteByte('\n')
			continue
		}
		if !strings.Contains(l, delim) {
			if flags['s'] == "" {
				w.WriteString(l)
				w.WriteByte('\n')
			}
			continue
		}
		fields := strings.Split(l, delim)
		var keep []string
		for i, f := range fields {
			if inRanges(ranges, i+1) {
				keep = append(keep, f)
			}
		}
		w.WriteString(strings.Join(keep, delim))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("cut", err)
	}
	return status
}

// trSet expands a tr SET: ranges (a-z), classes ([:lower:]) and escapes (\n, \t, \\).
func trSet(s string) []rune {
	classes := map[string]func(rune) bool{
		"lower": unicode.IsLower, "upper": unicode.IsUpper, "digit": unicode.IsDigit,
		"alpha": unicode.IsLetter, "alnum": func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
		"space": unicode.IsSpace, "punct": unicode.IsPunct, "blank": func(r rune) bool { return r == ' ' || r == '\t' },
		"xdigit": func(r rune) bool { return strings.ContainsRune("0123456789abcdefABCDEF", r) },
		"cntrl":  unicode.IsControl, "print": unicode.IsPrint, "graph": func(r rune) bool { return unicode.IsPrint(r) && r != ' ' },
	}
	var in []rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		if rs[i] == '[' && i+1 < len(rs) && rs[i+1] == ':' {
			if end := strings.Index(string(rs[i:]), ":]"); end > 0 {
				name := string(rs[i+2 : i+end])
				if f, ok := classes[name]; ok {
					for r := rune(0); r < 128; r++ {
						if f(r) {
							in = append(in, r)
						}
					}
					i += end + 1
					continue
				}
			}
		}
		r := rs[i]
		if r == '\\' && i+1 < len(rs) {
			i++
			switch rs[i] {
			case 'n':
				r = '\n'
			case 't':
				r = '\t'
			case 'r':
				r = '\r'
			case '\\':
				r = '\\'
			case '0':
				r = 0
			default:
				r = rs[i]
			}
		}
		if i+2 < len(rs) && rs[i+1] == '-' {
			hi := rs[i+2]
			for c := r; c <= hi; c++ {
				in = append(in, c)
			}
			i += 2
			continue
		}
		in = append(in, r)
	}
	return in
}

func tr(e *Env, args []string) int {
	flags, sets, err := parseFlags(args[1:], "dscC", "")
	if err != nil {
		return e.usage("tr", "%v", err)
	}
	del, squeeze, complement := flags['d'] != "", flags['s'] != "", flags['c'] != "" || flags['C'] != ""
	if len(sets) == 0 || (!del && !squeeze && len(sets) < 2) {
		return e.usage("tr", "missing operand")
	}
	set1 := trSet(sets[0])
	in1 := map[rune]bool{}
	for _, r := range set1 {
		in1[r] = true
	}
	member := func(r rune) bool { return in1[r] != complement }
	var set2 []rune
	if len(sets) > 1 {
		set2 = trSet(sets[1])
	}
	mapping := map[rune]rune{}
	if !del && len(set2) > 0 && !complement {
		for i, r := range set1 {
			mapping[r] = set2[min(i, len(set2)-1)]
		}
	}
	squeezeSet := map[rune]bool{}
	if squeeze {
		src := set1
		if len(set2) > 0 && !del || del && len(set2) > 0 {
			src = set2
		}
		for _, r := range src {
			squeezeSet[r] = true
		}
	}
	data, err := io.ReadAll(ctxReader{e.Ctx, e.stdin()})
	if err != nil {
		return 1
	}
	var b strings.Builder
	var last rune = -1
	for _, r := range string(data) {
		if del && member(r) {
			continue
		}
		if !del {
			if m, ok := mapping[r]; ok {
				r = m
			} else if complement && len(set2) > 0 && member(r) {
				r = set2[len(set2)-1]
			}
		}
		if squeeze && r == last && (squeezeSet[r] || complement && !del && len(set2) == 0 && member(r)) {
			continue
		}
		b.WriteRune(r)
		last = r
	}
	if _, err := io.WriteString(e.Stdout, b.String()); err != nil {
		return e.writeErr("tr", err)
	}
	return 0
}

func tee(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "ai", "")
	if err != nil {
		return e.usage("tee", "%v", err)
	}
	mode := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if flags['a'] != "" {
		mode = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	writers := []io.Writer{e.Stdout}
	status := 0
	for _, f := range files {
		fh, err := e.FS.OpenFile(e.Abs(f), mode, 0o644)
		if err != nil {
			e.errf("tee", "%s: %s", f, ErrText(err))
			status = 1
			continue
		}
		defer fh.Close()
		writers = append(writers, fh)
	}
	buf := make([]byte, 32<<10)
	in := ctxReader{e.Ctx, e.stdin()}
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			for _, w := range writers {
				if _, err := w.Write(buf[:n]); err != nil {
					return e.writeErr("tee", err)
				}
			}
		}
		if rerr != nil {
			break
		}
	}
	return status
}

func seq(e *Env, args []string) int {
	rest := args[1:]
	sep, width := "\n", false
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && len(rest[0]) > 1 && !(rest[0][1] >= '0' && rest[0][1] <= '9') {
		switch {
		case rest[0] == "-s" && len(rest) > 1:
			sep, rest = rest[1], rest[2:]
		case strings.HasPrefix(rest[0], "-s"):
			sep, rest = rest[0][2:], rest[1:]
		case rest[0] == "-w":
			width, rest = true, rest[1:]
		default:
			return e.usage("seq", "invalid option '%s'", rest[0])
		}
	}
	nums := make([]float64, len(rest))
	isInt := true
	for i, a := range rest {
		f, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return e.usage("seq", "invalid floating point argument: '%s'", a)
		}
		nums[i] = f
		if strings.ContainsAny(a, ".eE") {
			isInt = false
		}
	}
	first, step, last := 1.0, 1.0, 0.0
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, step, last = nums[0], nums[1], nums[2]
	default:
		return e.usage("seq", "missing operand")
	}
	if step == 0 {
		return e.usage("seq", "invalid Zero increment value: '0'")
	}
	w := bufio.NewWriter(e.Stdout)
	digits := len(strconv.FormatFloat(last, 'f', 0, 64))
	n := 0
	for x := first; (step > 0 && x <= last) || (step < 0 && x >= last); x = first + float64(n)*step {
		if n%4096 == 0 && e.Ctx.Err() != nil {
			return 130
		}
		if n > 0 {
			w.WriteString(sep)
		}
		if isInt {
			if width {
				fmt.Fprintf(w, "%0*d", digits, int64(x))
			} else {
				w.WriteString(strconv.FormatInt(int64(x), 10))
			}
		} else {
			w.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		}
		n++
	}
	if n > 0 {
		w.WriteString("\n")
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("seq", err)
	}
	return 0
}

// yes writes its line until the reader goes away (a closed pipe ends it quietly with 141, as
// SIGPIPE would) or the command is cancelled (timeout): output into the capture buffer is
// capped by the adapter, so an endless yes costs time, never memory.
func yes(e *Env, args []string) int {
	line := "y"
	if len(args) > 1 {
		line = strings.Join(args[1:], " ")
	}
	line += "\n"
	chunk := []byte(strings.Repeat(line, max(1, (16<<10)/len(line))))
	for {
		if e.Ctx.Err() != nil {
			return 130
		}
		if _, err := e.Stdout.Write(chunk); err != nil {
			return e.writeErr("yes", err)
		}
	}
}

// sleep waits for the sum of its durations (s, m, h, d suffixes, fractions allowed) or until the
// command is cancelled.
func sleep(e *Env, args []string) int {
	if len(args) < 2 {
		return e.usage("sleep", "missing operand")
	}
	var total time.Duration
	for _, a := range args[1:] {
		mult := time.Second
		switch {
		case strings.HasSuffix(a, "s"):
			a = strings.TrimSuffix(a, "s")
		case strings.HasSuffix(a, "m"):
			a, mult = strings.TrimSuffix(a, "m"), time.Minute
		case strings.HasSuffix(a, "h"):
			a, mult = strings.TrimSuffix(a, "h"), time.Hour
		case strings.HasSuffix(a, "d"):
			a, mult = strings.TrimSuffix(a, "d"), 24*time.Hour
		}
		f, err := strconv.ParseFloat(a, 64)
		if err != nil || f < 0 {
			return e.usage("sleep", "invalid time interval '%s'", a)
		}
		total += time.Duration(f * float64(mult))
	}
	t := time.NewTimer(total)
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-e.Ctx.Done():
		return 130
	}
}

func env(e *Env, args []string) int {
	rest := args[1:]
	clearEnv := false
	var unset []string
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		switch {
		case rest[0] == "-i" || rest[0] == "-":
			clearEnv = true
			rest = rest[1:]
		case rest[0] == "-u" && len(rest) > 1:
			unset = append(unset, rest[1])
			rest = rest[2:]
		case rest[0] == "--":
			rest = rest[1:]
			goto assignments
		default:
			return e.usage("env", "invalid option '%s'", rest[0])
		}
	}
assignments:
	vars := map[string]string{}
	var order []string
	if !clearEnv {
		for _, kv := range e.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
			order = append(order, k)
		}
	}
	for _, u := range unset {
		delete(vars, u)
	}
	for len(rest) > 0 && strings.Contains(rest[0], "=") && !strings.HasPrefix(rest[0], "=") {
		k, v, _ := strings.Cut(rest[0], "=")
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
		rest = rest[1:]
	}
	var list []string
	for _, k := range order {
		if v, ok := vars[k]; ok {
			list = append(list, k+"="+v)
			delete(vars, k)
		}
	}
	if len(rest) == 0 {
		w := bufio.NewWriter(e.Stdout)
		for _, kv := range list {
			w.WriteString(kv)
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			return e.writeErr("env", err)
		}
		return 0
	}
	if e.Exec == nil {
		return e.fail("env", "cannot run commands here")
	}
	child := *e
	child.Vars = expandList(list)
	return e.Exec(&child, rest)
}

func printenv(e *Env, args []string) int {
	if len(args) == 1 {
		for _, kv := range e.Environ() {
			fmt.Fprintln(e.Stdout, kv)
		}
		return 0
	}
	status := 0
	for _, k := range args[1:] {
		v := e.Vars.Get(k)
		if !v.Exported || !v.IsSet() {
			status = 1
			continue
		}
		fmt.Fprintln(e.Stdout, v.String())
	}
	return status
}

func sha256sum(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "bcqtz", "")
	if err != nil {
		return e.usage("sha256sum", "%v", err)
	}
	if flags['c'] != "" {
		return sha256check(e, files)
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, f := range files {
		r, err := e.open(f)
		if err != nil {
			e.errf("sha256sum", "%s: %s", f, ErrText(err))
			status = 1
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, ctxReader{e.Ctx, r})
		r.Close()
		if err != nil {
			if e.Ctx.Err() != nil {
				return 130
			}
			e.errf("sha256sum", "%s: %s", f, ErrText(err))
			status = 1
			continue
		}
		fmt.Fprintf(e.Stdout, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), f)
	}
	return status
}

func sha256check(e *Env, files []string) int {
	ls, status := readLines(e, "sha256sum", files)
	bad := 0
	for _, l := range ls {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok {
			continue
		}
		data, err := e.readAll(name)
		if err != nil {
			fmt.Fprintf(e.Stdout, "%s: FAILED open or read\n", name)
			bad++
			continue
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) == sum {
			fmt.Fprintf(e.Stdout, "%s: OK\n", name)
		} else {
			fmt.Fprintf(e.Stdout, "%s: FAILED\n", name)
			bad++
		}
	}
	if bad > 0 {
		e.errf("sha256sum", "WARNING: %d computed checksum did NOT match", bad)
		return 1
	}
	return status
}

func base64Cmd(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "di", "w")
	if err != nil {
		return e.usage("base64", "%v", err)
	}
	name := "-"
	if len(files) > 0 {
		name = files[0]
	}
	data, err := e.readAll(name)
	if err != nil {
		return e.fail("base64", "%s: %s", name, ErrText(err))
	}
	if flags['d'] != "" {
		clean := strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, string(data))
		out, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			out, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(clean, "="))
		}
		if err != nil {
			e.Stdout.Write(out)
			return e.fail("base64", "invalid input")
		}
		if _, err := e.Stdout.Write(out); err != nil {
			return e.writeErr("base64", err)
		}
		return 0
	}
	wrap := 76
	if v, ok := flags['w']; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return e.usage("base64", "invalid wrap size: '%s'", v)
		}
		wrap = n
	}
	enc := base64.StdEncoding.EncodeToString(data)
	w := bufio.NewWriter(e.Stdout)
	if wrap == 0 {
		w.WriteString(enc)
		if len(enc) > 0 {
			w.WriteByte('\n')
		}
	} else {
		for len(enc) > 0 {
			n := min(wrap, len(enc))
			w.WriteString(enc[:n])
			w.WriteByte('\n')
			enc = enc[n:]
		}
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("base64", err)
	}
	return 0
}

func xargs(e *Env, args []string) int {
	rest := args[1:]
	maxArgs, replace, nul, delim := 0, "", false, ""
	noRunEmpty := false
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "-" {
		a := rest[0]
		switch {
		case a == "--":
			rest = rest[1:]
			goto run
		case a == "-0" || a == "--null":
			nul = true
		case a == "-r" || a == "--no-run-if-empty":
			noRunEmpty = true
		case a == "-t" || a == "-p":
		case a == "-n" || a == "-L" || a == "-P" || a == "-I" || a == "-d" || a == "-s":
			if len(rest) < 2 {
				return e.usage("xargs", "option requires an argument -- '%s'", a[1:])
			}
			v := rest[1]
			rest = rest[1:]
			switch a {
			case "-n", "-L":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return e.usage("xargs", "invalid number '%s'", v)
				}
				maxArgs = n
			case "-I":
				replace = v
			case "-d":
				delim = v
			}
		case strings.HasPrefix(a, "-n") || strings.HasPrefix(a, "-L"):
			n, err := strconv.Atoi(a[2:])
			if err != nil || n < 1 {
				return e.usage("xargs", "invalid number '%s'", a[2:])
			}
			maxArgs = n
		case strings.HasPrefix(a, "-I"):
			replace = a[2:]
		case strings.HasPrefix(a, "-P"):
		default:
			return e.usage("xargs", "invalid option '%s'", a)
		}
		rest = rest[1:]
	}
run:
	cmd := rest
	if len(cmd) == 0 {
		cmd = []string{"echo"}
	}
	data, err := io.ReadAll(ctxReader{e.Ctx, e.stdin()})
	if err != nil {
		return 1
	}
	var items []string
	switch {
	case nul:
		items = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	case delim != "":
		d := delim
		if d == `\n` {
			d = "\n"
		}
		items = strings.Split(strings.TrimSuffix(string(data), d), d)
	case replace != "":
		items = lines(data)
	default:
		items = splitXargs(string(data))
	}
	if len(items) == 1 && items[0] == "" {
		items = nil
	}
	if e.Exec == nil {
		return e.fail("xargs", "cannot run commands here")
	}
	child := *e
	child.Stdin = strings.NewReader("")
	status := 0
	runOne := func(argv []string) bool {
		code := e.Exec(&child, argv)
		switch {
		case code == 255:
			e.errf("xargs", "%s: exited with status 255; aborting", argv[0])
			status = 124
			return false
		case code == 127:
			status = 127
			return false
		case code != 0:
			status = 123
		}
		return e.Ctx.Err() == nil
	}
	if replace != "" {
		for _, it := range items {
			argv := make([]string, len(cmd))
			for i, c := range cmd {
				argv[i] = strings.ReplaceAll(c, replace, it)
			}
			if !runOne(argv) {
				break
			}
		}
		return status
	}
	if len(items) == 0 {
		if !noRunEmpty {
			runOne(append([]string(nil), cmd...))
		}
		return status
	}
	n := maxArgs
	if n == 0 {
		n = len(items)
	}
	for i := 0; i < len(items); i += n {
		argv := append(append([]string(nil), cmd...), items[i:min(i+n, len(items))]...)
		if !runOne(argv) {
			break
		}
	}
	return status
}

// splitXargs splits xargs input on blanks, honouring quotes and backslashes.
func splitXargs(s string) []string {
	var out []string
	var cur strings.Builder
	inTok := false
	var quote rune
	for i := 0; i < len(s); i++ {
		c := rune(s[i])
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, inTok = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inTok = true
		case c == ' ' || c == '\t' || c == '\n':
			if inTok {
				out = append(out, cur.String())
				cur.Reset()
				inTok = false
			}
		default:
			cur.WriteRune(c)
			inTok = true
		}
	}
	if inTok {
		out = append(out, cur.String())
	}
	return out
}

func date(e *Env, args []string) int {
	now := time.Now().UTC()
	format := "%a %b %e %H:%M:%S UTC %Y"
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "+"):
			format = a[1:]
		case a == "-u" || a == "--utc":
		case a == "-d" && i+1 < len(args):
			t, err := parseDate(args[i+1])
			if err != nil {
				return e.fail("date", "invalid date '%s'", args[i+1])
			}
			now = t.UTC()
			i++
		case a == "-I":
			format = "%Y-%m-%d"
		default:
			return e.usage("date", "invalid option '%s'", a)
		}
	}
	fmt.Fprintln(e.Stdout, strftime(format, now))
	return 0
}

func strftime(f string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 's':
			fmt.Fprintf(&b, "%d", t.Unix())
		case 'N':
			fmt.Fprintf(&b, "%09d", t.Nanosecond())
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'Z':
			b.WriteString("UTC")
		case 'z':
			b.WriteString("+0000")
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

func tac(e *Env, args []string) int {
	ls, status := readLines(e, "tac", args[1:])
	w := bufio.NewWriter(e.Stdout)
	for i := len(ls) - 1; i >= 0; i-- {
		w.WriteString(ls[i])
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("tac", err)
	}
	return status
}

// fileHeaders returns what head and tail call before each input: with on, a "==> NAME <=="
// line, separated from the previous input by an empty line; otherwise nothing.
func fileHeaders(w *bufio.Writer, on bool) func(label string) {
	first := true
	return func(label string) {
		if !on {
			return
		}
		if !first {
			w.WriteString("\n")
		}
		first = false
		fmt.Fprintf(w, "==> %s <==\n", label)
	}
}
