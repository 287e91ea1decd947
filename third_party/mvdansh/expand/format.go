// Copyright (c) 2017, Daniel Martí <mvdan@mvdan.cc>
// See LICENSE for licensing information

package expand

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// escapeMode selects which backslash escapes are recognized, as the shells
// differ between $'...', printf's format string, and echo -e or printf %b.
type escapeMode uint8

const (
	escapeDollar escapeMode = iota // $'...': \cX, \NNN
	escapePrintf                   // printf's format: \NNN
	escapeEcho                     // echo -e and printf %b: \0NNN, \NNN for %b, \c to stop
)

// unescape expands the backslash escape at s[i], which is a backslash.
// It returns the bytes to write, how many bytes of s it used,
// and whether it was \c, which stops the output in escapeEcho mode.
func unescape(s string, i int, mode escapeMode, octalNoZero bool) (out string, n int, stop bool) {
	if i+1 >= len(s) {
		return "\\", 1, false
	}
	digits := func(start, max int, hex bool) string {
		j := start
		for j < len(s) && j-start < max {
			c := s[j]
			if c >= '0' && c <= '7' || hex && (c >= '8' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				j++
				continue
			}
			break
		}
		return s[start:j]
	}
	c := s[i+1]
	switch c {
	case 'a':
		return "\a", 2, false
	case 'b':
		return "\b", 2, false
	case 'e', 'E':
		return "\x1b", 2, false
	case 'f':
		return "\f", 2, false
	case 'n':
		return "\n", 2, false
	case 'r':
		return "\r", 2, false
	case 't':
		return "\t", 2, false
	case 'v':
		return "\v", 2, false
	case '\\':
		return "\\", 2, false
	case '\'', '"', '?':
		if mode == escapeEcho {
			break
		}
		return string(c), 2, false
	case 'c':
		switch mode {
		case escapeEcho:
			return "", 2, true
		case escapeDollar:
			if i+2 < len(s) {
				// A control character, like \cA; \c? is DEL.
				if s[i+2] == '?' {
					return "\x7f", 3, false
				}
				return string(rune(s[i+2] & 0x1f)), 3, false
			}
		}
	case 'x':
		if d := digits(i+2, 2, true); d != "" {
			n, _ := strconv.ParseUint(d, 16, 8)
			return string([]byte{byte(n)}), 2 + len(d), false
		}
	case 'u', 'U':
		max := 4
		if c == 'U' {
			max = 8
		}
		if d := digits(i+2, max, true); d != "" {
			n, _ := strconv.ParseUint(d, 16, 32)
			return string(rune(n)), 2 + len(d), false
		}
	case '0':
		if mode == escapeEcho {
			// \0 followed by up to three octal digits.
			d := digits(i+2, 3, false)
			n, _ := strconv.ParseUint("0"+d, 8, 16)
			return string([]byte{byte(n)}), 2 + len(d), false
		}
		fallthrough
	case '1', '2', '3', '4', '5', '6', '7':
		if mode == escapeEcho && !octalNoZero {
			break
		}
		d := digits(i+1, 3, false)
		n, _ := strconv.ParseUint(d, 8, 16)
		return string([]byte{byte(n)}), 1 + len(d), false
	}
	return s[i : i+2], 2, false
}

// unescapeAll expands every backslash escape of s in the given mode.
func unescapeAll(s string, mode escapeMode, octalNoZero bool) (string, bool) {
	if !strings.Contains(s, "\\") {
		return s, false
	}
	var sb strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			j := strings.IndexByte(s[i:], '\\')
			if j < 0 {
				j = len(s) - i
			}
			sb.WriteString(s[i : i+j])
			i += j
			continue
		}
		out, n, stop := unescape(s, i, mode, octalNoZero)
		if stop {
			return sb.String(), true
		}
		sb.WriteString(out)
		i += n
	}
	return sb.String(), false
}

// EchoEscapes expands the backslash escapes of echo -e, such as \t or
// \0101. It also reports whether a \c stopped the output, in which case
// the output ends before it and nothing else should follow, not even a
// newline.
func EchoEscapes(s string) (string, bool) {
	return unescapeAll(s, escapeEcho, false)
}

// NumberError is an argument of a numeric printf conversion, such as %d,
// which is not a valid number.
type NumberError struct {
	Arg string

	// Range is set for a valid number out of the range of a 64-bit
	// integer: like Bash, it is formatted as the nearest bound and only
	// warned about, without failing printf.
	Range bool
}

func (e *NumberError) Error() string {
	if e.Range {
		return "warning: " + e.Arg + ": Numerical result out of range"
	}
	return e.Arg + ": invalid number"
}

// Printf formats arguments like the printf builtin, once through the format:
// the caller repeats while arguments are left and some were used. It returns
// the output, the number of arguments used, and whether a \c in a %b
// argument ended the output. Like Bash, invalid numeric arguments are
// formatted as far as they are valid and reported as a *[NumberError] in
// numErr; err reports a format it cannot follow, with the output so far.
func Printf(format string, args []string) (out string, used int, stop bool, numErr, err error) {
	var sb strings.Builder
	used, stop, numErr, err = printfInto(&sb, format, args)
	return sb.String(), used, stop, numErr, err
}

func printfInto(sb *strings.Builder, format string, args []string) (used int, stop bool, numErr, err error) {
	next := func() (string, bool) {
		if used < len(args) {
			used++
			return args[used-1], true
		}
		return "", false
	}
	for i := 0; i < len(format); {
		c := format[i]
		if c == '\\' {
			out, n, _ := unescape(format, i, escapePrintf, true)
			sb.WriteString(out)
			i += n
			continue
		}
		if c != '%' {
			sb.WriteByte(c)
			i++
			continue
		}
		// A conversion: %[flags][width][.precision]verb
		start := i
		i++
		if i < len(format) && format[i] == '%' {
			sb.WriteByte('%')
			i++
			continue
		}
		var flags []byte
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			flags = append(flags, format[i])
			i++
		}
		width, prec := -1, -1
		readNum := func() int {
			if i < len(format) && format[i] == '*' {
				i++
				arg, _ := next()
				n, err := parseInt(arg)
				if err != nil && numErr == nil {
					numErr = err
				}
				return int(n)
			}
			j := i
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			n, _ := strconv.Atoi(format[j:i])
			return n
		}
		if i < len(format) && (format[i] == '*' || format[i] >= '1' && format[i] <= '9') {
			width = readNum()
			if width < 0 {
				flags = append(flags, '-')
				width = -width
			}
		}
		if i < len(format) && format[i] == '.' {
			i++
			prec = readNum()
		}
		if i < len(format) && format[i] == '(' {
			// %(strftime)T: a date and time, from seconds since the epoch.
			end := strings.Index(format[i:], ")T")
			if end < 0 {
				return used, false, numErr, fmt.Errorf("%s: missing format character", format[start:])
			}
			layout := format[i+1 : i+end]
			i += end + 2
			arg, _ := next()
			t := time.Now()
			if n, err := parseInt(arg); arg != "" && n >= 0 {
				if err != nil && numErr == nil {
					numErr = err
				}
				t = time.Unix(n, 0)
			}
			padBytes(sb, strftime(layout, t.UTC()), flags, width, prec)
			continue
		}
		if i >= len(format) {
			return used, false, numErr, fmt.Errorf("%s: missing format character", format[start:])
		}
		verb := format[i]
		i++
		spec := "%" + string(flags)
		if width >= 0 {
			spec += strconv.Itoa(width)
		}
		if prec >= 0 {
			spec += "." + strconv.Itoa(prec)
		}
		switch verb {
		case 'd', 'i':
			arg, _ := next()
			n, err := parseInt(arg)
			if err != nil && numErr == nil {
				numErr = err
			}
			fmt.Fprintf(sb, spec+"d", n)
		case 'o', 'u', 'x', 'X':
			arg, _ := next()
			n, err := parseInt(arg)
			if err != nil && numErr == nil {
				numErr = err
			}
			if verb == 'u' {
				verb = 'd'
			}
			fmt.Fprintf(sb, spec+string(verb), uint64(n))
		case 'e', 'E', 'f', 'F', 'g', 'G', 'a', 'A':
			arg, _ := next()
			f, err := parseFloat(arg)
			if err != nil && numErr == nil {
				numErr = err
			}
			switch verb {
			case 'g', 'G':
				if prec < 0 {
					// C's default precision, which Go's %g lacks.
					spec += ".6"
				} else if prec == 0 {
					spec = strings.TrimSuffix(spec, ".0") + ".1"
				}
			case 'a':
				verb = 'x'
			case 'A':
				verb = 'X'
			}
			fmt.Fprintf(sb, spec+string(verb), f)
		case 'c':
			arg, _ := next()
			if arg == "" {
				arg = "\x00" // like C's %c of the empty string's terminator
			}
			padBytes(sb, arg[:1], flags, width, -1)
		case 's':
			arg, _ := next()
			padBytes(sb, arg, flags, width, prec)
		case 'b':
			arg, _ := next()
			s, stop := unescapeAll(arg, escapeEcho, true)
			padBytes(sb, s, flags, width, prec)
			if stop {
				return used, true, numErr, nil
			}
		case 'q':
			arg, _ := next()
			padBytes(sb, QuoteBackslash(arg), flags, width, prec)
		default:
			return used, false, numErr, fmt.Errorf("`%c': invalid format character", verb)
		}
	}
	return used, false, numErr, nil
}

// strftime formats t like C's strftime with the common conversions.
func strftime(layout string, t time.Time) string {
	var sb strings.Builder
	for i := 0; i < len(layout); i++ {
		c := layout[i]
		if c != '%' || i+1 >= len(layout) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch layout[i] {
		case 'Y':
			fmt.Fprintf(&sb, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&sb, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&sb, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&sb, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&sb, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&sb, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&sb, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&sb, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&sb, "%03d", t.YearDay())
		case 'a':
			sb.WriteString(t.Format("Mon"))
		case 'A':
			sb.WriteString(t.Format("Monday"))
		case 'b', 'h':
			sb.WriteString(t.Format("Jan"))
		case 'B':
			sb.WriteString(t.Format("January"))
		case 'p':
			sb.WriteString(t.Format("PM"))
		case 'Z':
			sb.WriteString(t.Format("MST"))
		case 'z':
			sb.WriteString(t.Format("-0700"))
		case 's':
			fmt.Fprintf(&sb, "%d", t.Unix())
		case 'u':
			fmt.Fprintf(&sb, "%d", (int(t.Weekday())+6)%7+1)
		case 'w':
			fmt.Fprintf(&sb, "%d", int(t.Weekday()))
		case 'F':
			sb.WriteString(t.Format("2006-01-02"))
		case 'T':
			sb.WriteString(t.Format("15:04:05"))
		case 'D':
			sb.WriteString(t.Format("01/02/06"))
		case 'R':
			sb.WriteString(t.Format("15:04"))
		case 'c':
			sb.WriteString(t.Format("Mon Jan  2 15:04:05 2006"))
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(layout[i])
		}
	}
	return sb.String()
}

// padBytes writes s cut to prec bytes and padded to width bytes, like C's
// printf, which counts bytes rather than characters.
func padBytes(sb *strings.Builder, s string, flags []byte, width, prec int) {
	if prec >= 0 && prec < len(s) {
		s = s[:prec]
	}
	pad := ""
	if width > len(s) {
		pad = strings.Repeat(" ", width-len(s))
	}
	if strings.IndexByte(string(flags), '-') >= 0 {
		sb.WriteString(s)
		sb.WriteString(pad)
		return
	}
	sb.WriteString(pad)
	sb.WriteString(s)
}

// parseInt parses a numeric printf argument like Bash: decimal, 0x hex or 0
// octal with an optional sign and leading blanks, or 'c for the code of the
// character c. It returns the value of the valid prefix along with an error
// for an invalid argument.
func parseInt(s string) (int64, error) {
	t := strings.TrimLeft(s, " \t\n")
	if t == "" {
		return 0, nil
	}
	if t[0] == '\'' || t[0] == '"' {
		if len(t) == 1 {
			return 0, nil
		}
		r, _ := utf8.DecodeRuneInString(t[1:])
		return int64(r), nil
	}
	neg := false
	body := t
	switch body[0] {
	case '+', '-':
		neg = body[0] == '-'
		body = body[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X"):
		base, body = 16, body[2:]
	case strings.HasPrefix(body, "0") && len(body) > 1:
		base, body = 8, body[1:]
	}
	end := 0
	for end < len(body) && digitVal(body[end]) < base {
		end++
	}
	n, perr := strconv.ParseUint(body[:end], base, 64)
	if end == 0 {
		n = 0
	}
	if end == len(body) && end > 0 && (perr != nil || n > math.MaxInt64 && !(neg && n == 1<<63)) {
		// Like Bash's strtoimax, the nearest bound.
		if neg {
			return math.MinInt64, &NumberError{Arg: s, Range: true}
		}
		return math.MaxInt64, &NumberError{Arg: s, Range: true}
	}
	if neg {
		n = -n
	}
	if end < len(body) || end == 0 && base == 10 || perr != nil && end > 0 {
		return int64(n), &NumberError{Arg: s}
	}
	return int64(n), nil
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

// parseFloat parses a floating-point printf argument, also accepting 'c.
func parseFloat(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	if t[0] == '\'' || t[0] == '"' {
		n, err := parseInt(t)
		return float64(n), err
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if n, ierr := parseInt(t); ierr == nil {
			return float64(n), nil
		}
		return 0, &NumberError{Arg: s}
	}
	return f, nil
}

// QuoteBackslash quotes a string for the shell like Bash's printf %q: with
// backslashes before special characters, a pair of single quotes when empty,
// and $'...' when it holds control characters.
func QuoteBackslash(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return QuoteBash(s)
		}
	}
	var sb strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(" !\"$&'()*,;<>?[\\]^`{|}", r),
			i == 0 && (r == '#' || r == '~'):
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}
