// Package patch owns the edit tool's diff engine: it parses a single-file unified diff with
// github.com/bluekeyes/go-gitdiff and applies it to a file's bytes, relocating hunks whose lines
// moved (like jsdiff's applyPatch without fuzz: the context must still match exactly).
//
// Line endings: lines are compared without their terminator, so a patch written with LF applies to
// a CRLF file and the other way round. Lines the patch keeps are copied from the file byte for byte;
// added lines get the file's dominant line ending ("\r\n" when most lines end that way, "\n"
// otherwise; the patch's own ending when the file has none). "\ No newline at end of file" is
// honoured on both sides: an added last line without a newline stays without one, and an old-side
// last line without a newline only matches at the end of the file.
//
// The ---/+++ file names are ignored (the caller picks the file). Hunks without any file header
// ("@@ ..." first) are accepted as one file.
package patch

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/sandboxer/sandboxer/errs"
)

// Op is the operation name carried by the errors of this package.
const Op = "edit"

// Patch is a parsed single-file unified diff, ready to apply.
type Patch struct {
	hunks []*hunk
}

type hunk struct {
	n        int    // 1-based hunk number, for messages
	header   string // "@@ -a,b +c,d @@"
	oldPos   int    // 1-based old start line (0 for insertion into an empty prefix)
	old      []string
	oldNoEOL bool // the old side's last line has no newline: it must be the file's last line
	lines    []gitdiff.Line
}

// Parse parses diff. Errors are *errs.Error with code errs.InvalidInput: the text is not a unified
// diff, it changes more than one file, it is binary, or it has no hunk.
func Parse(diff string) (*Patch, error) {
	if strings.TrimSpace(diff) == "" {
		return nil, errs.New(errs.InvalidInput, Op, "", "patch is empty")
	}
	files, _, err := gitdiff.Parse(strings.NewReader(withHeader(diff)))
	if err != nil {
		return nil, &errs.Error{Code: errs.InvalidInput, Op: Op, Msg: "patch is not a valid unified diff", Err: err}
	}
	switch {
	case len(files) == 0:
		return nil, errs.New(errs.InvalidInput, Op, "", "patch has no hunk")
	case len(files) > 1:
		return nil, errs.New(errs.InvalidInput, Op, "", "patch changes %d files; edit applies a single-file diff", len(files))
	case files[0].IsBinary:
		return nil, errs.New(errs.InvalidInput, Op, "", "binary patches are not supported")
	case len(files[0].TextFragments) == 0:
		return nil, errs.New(errs.InvalidInput, Op, "", "patch has no hunk")
	}
	p := &Patch{}
	for i, f := range files[0].TextFragments {
		h := &hunk{
			n:      i + 1,
			header: strings.TrimSpace(f.Header()),
			oldPos: int(f.OldPosition),
			lines:  f.Lines,
		}
		for _, l := range f.Lines {
			if l.Op != gitdiff.OpAdd {
				h.old = append(h.old, key(l.Line))
				h.oldNoEOL = !strings.HasSuffix(l.Line, "\n")
			}
		}
		p.hunks = append(p.hunks, h)
	}
	return p, nil
}

// Apply parses diff and applies it to src; see Parse and (*Patch).Apply for the errors.
func Apply(src []byte, diff string) ([]byte, error) {
	p, err := Parse(diff)
	if err != nil {
		return nil, err
	}
	return p.Apply(src)
}

// Hunks returns the number of hunks in the patch.
func (p *Patch) Hunks() int { return len(p.hunks) }

// Apply returns src with every hunk applied, in order. src is never modified. A hunk whose old side
// matches nowhere after the previous hunk is an *errs.Error with code errs.PatchFailed whose message
// names the hunk; Details carry "hunk" (1-based), "header", and where the hunk was expected
// "line", "expected" and "found".
func (p *Patch) Apply(src []byte) ([]byte, error) {
	lines := splitLines(src)
	keys := make([]string, len(lines))
	for i, l := range lines {
		keys[i] = key(l)
	}
	eol := dominantEOL(lines)

	out := &builder{eol: eol}
	out.buf.Grow(len(src) + len(src)/8)
	next := 0   // first file line not yet copied
	offset := 0 // where the previous hunk landed relative to its header
	for _, h := range p.hunks {
		want := h.oldPos - 1 + offset
		if len(h.old) == 0 {
			want = h.oldPos + offset // pure insertion: after line oldPos
		}
		pos, ok := h.find(keys, want, next)
		if !ok {
			return nil, h.failure(keys, want)
		}
		offset = pos - (h.oldPos - 1)
		if len(h.old) == 0 {
			offset = pos - h.oldPos
		}
		for _, l := range lines[next:pos] {
			out.line(l)
		}
		i := pos
		for _, l := range h.lines {
			switch l.Op {
			case gitdiff.OpContext:
				out.line(lines[i])
				i++
			case gitdiff.OpDelete:
				i++
			case gitdiff.OpAdd:
				out.added(l.Line)
			}
		}
		next = i
	}
	for _, l := range lines[next:] {
		out.line(l)
	}
	return out.buf.Bytes(), nil
}

// find returns the index where h's old side matches keys, searching outward from want (want,
// want+1, want-1, ...) within [minLine, len(keys)-len(h.old)].
func (h *hunk) find(keys []string, want, minLine int) (int, bool) {
	maxLine := len(keys) - len(h.old)
	if maxLine < minLine {
		return 0, false
	}
	if len(h.old) == 0 {
		// Nothing to match: the insertion point must exist.
		return want, want >= minLine && want <= len(keys)
	}
	want = min(max(want, minLine), maxLine)
	for d := 0; ; d++ {
		up, down := want+d, want-d
		inUp, inDown := up <= maxLine, down >= minLine
		if !inUp && !inDown {
			return 0, false
		}
		if inUp && h.matches(keys, up) {
			return up, true
		}
		if d > 0 && inDown && h.matches(keys, down) {
			return down, true
		}
	}
}

func (h *hunk) matches(keys []string, pos int) bool {
	if h.oldNoEOL && pos+len(h.old) != len(keys) {
		return false
	}
	for j, k := range h.old {
		if keys[pos+j] != k {
			return false
		}
	}
	return true
}

func (h *hunk) failure(keys []string, want int) error {
	e := errs.New(errs.PatchFailed, Op, "", "hunk %d (%s) does not apply: its context does not match the file at or near line %d",
		h.n, h.header, want+1)
	e.Details = map[string]any{"hunk": h.n, "header": h.header, "line": want + 1}
	if len(h.old) == 0 {
		e.Msg = fmt.Sprintf("hunk %d (%s) does not apply: the file has only %d lines", h.n, h.header, len(keys))
		return e
	}
	// Say what differs at the expected position, which is what an agent needs to fix its patch.
	for j, k := range h.old {
		i := want + j
		found := "<end of file>"
		if i >= 0 && i < len(keys) {
			if keys[i] == k {
				continue
			}
			found = keys[i]
		}
		e.Details["line"] = i + 1
		e.Details["expected"] = k
		e.Details["found"] = found
		e.Msg = fmt.Sprintf("hunk %d (%s) does not apply: line %d is %q, the patch expects %q",
			h.n, h.header, i+1, found, k)
		break
	}
	return e
}

// builder writes output lines, repairing a missing newline when a line that had none (the file's
// old last line) is followed by more.
type builder struct {
	buf     bytes.Buffer
	eol     string
	pending bool // the last line written has no terminator
}

func (b *builder) line(l string) {
	if b.pending {
		b.buf.WriteString(cmp.Or(b.eol, "\n"))
	}
	b.buf.WriteString(l)
	b.pending = !strings.HasSuffix(l, "\n")
}

func (b *builder) added(l string) {
	if !strings.HasSuffix(l, "\n") {
		b.line(key(l))
		return
	}
	eol := b.eol
	if eol == "" { // the file has no line ending to follow: keep the patch's
		eol = l[len(strings.TrimRight(l, "\r\n")):]
	}
	b.line(key(l) + eol)
}

// key is a line without its terminator ("\n", "\r\n", or a lone "\r" left by a no-newline marker in
// a CRLF patch).
func key(l string) string {
	l = strings.TrimSuffix(l, "\n")
	return strings.TrimSuffix(l, "\r")
}

// splitLines splits src after each "\n"; the last line may have no terminator.
func splitLines(src []byte) []string {
	s := string(src)
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// dominantEOL is "\r\n" when most terminated lines end that way, "\n" when any line is terminated,
// and "" for a file without any newline.
func dominantEOL(lines []string) string {
	crlf, lf := 0, 0
	for _, l := range lines {
		switch {
		case strings.HasSuffix(l, "\r\n"):
			crlf++
		case strings.HasSuffix(l, "\n"):
			lf++
		}
	}
	switch {
	case crlf > lf:
		return "\r\n"
	case crlf+lf > 0:
		return "\n"
	}
	return ""
}

// withHeader gives a diff that starts with a hunk (no ---/+++ or diff --git header) a neutral
// traditional header, so that bare hunks parse as one file.
func withHeader(diff string) string {
	for rest := diff; rest != ""; {
		line, tail, _ := strings.Cut(rest, "\n")
		switch {
		case strings.HasPrefix(line, "@@ -"):
			return "--- a\n+++ b\n" + diff
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "diff --git "):
			return diff
		}
		rest = tail
	}
	return diff
}
