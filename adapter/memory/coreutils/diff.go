package coreutils

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"
)

func init() { register("diff", diff) }

// editOp is one line of an edit script: ' ' keep, '-' delete, '+' insert.
type editOp struct {
	kind byte
	a, b int // line indexes in a and b (the one that applies)
}

// myers returns the shortest edit script turning a into b (Myers' O(ND) algorithm).
func myers(a, b []string) []editOp {
	n, m := len(a), len(b)
	maxD := n + m
	off := maxD
	v := make([]int, 2*maxD+2)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		if (d+1)*len(v) > 8<<20 {
			// Too far apart to trace within bounded memory: replace everything.
			var ops []editOp
			for i := range a {
				ops = append(ops, editOp{'-', i, 0})
			}
			for j := range b {
				ops = append(ops, editOp{'+', n, j})
			}
			return ops
		}
		vc := append([]int(nil), v...)
		trace = append(trace, vc)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, off)
			}
		}
	}
	return nil
}

// backtrack walks the trace (trace[d] is the state before round d) back from (len a, len b).
func backtrack(trace [][]int, a, b []string, off int) []editOp {
	x, y := len(a), len(b)
	var ops []editOp
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		k := x - y
		var pk int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[off+pk]
		py := px - pk
		if d == 0 {
			px, py = 0, 0
		}
		for x > px && y > py {
			x--
			y--
			ops = append(ops, editOp{' ', x, y})
		}
		if d > 0 {
			if x == px {
				ops = append(ops, editOp{'+', px, py})
			} else {
				ops = append(ops, editOp{'-', px, py})
			}
		}
		x, y = px, py
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}

func diff(e *Env, args []string) int {
	rest := args[1:]
	unified, brief, ctxLines := false, false, 3
	var labels []string
	var files []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-u" || a == "--unified":
			unified = true
		case strings.HasPrefix(a, "-U") && len(a) > 2:
			unified = true
			fmt.Sscanf(a[2:], "%d", &ctxLines)
		case a == "-U" && i+1 < len(rest):
			unified = true
			i++
			fmt.Sscanf(rest[i], "%d", &ctxLines)
		case strings.HasPrefix(a, "--unified="):
			unified = true
			fmt.Sscanf(a[len("--unified="):], "%d", &ctxLines)
		case a == "-q" || a == "--brief":
			brief = true
		case a == "--label" && i+1 < len(rest):
			i++
			labels = append(labels, rest[i])
		case strings.HasPrefix(a, "--label="):
			labels = append(labels, a[len("--label="):])
		case a == "-N" || a == "-a" || a == "--text" || a == "-p":
		case a == "--":
			files = append(files, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(a, "-") && a != "-":
			return e.usage("diff", "invalid option -- '%s'", a[1:])
		default:
			files = append(files, a)
		}
	}
	if len(files) != 2 {
		return e.usage("diff", "missing operand after '%s'", strings.Join(files, " "))
	}
	var data [2][]byte
	var mtimes [2]time.Time
	for i, f := range files {
		d, err := e.readAll(f)
		if err != nil {
			e.errf("diff", "%s: %s", f, ErrText(err))
			return 2
		}
		data[i] = d
		mtimes[i] = time.Now()
		if f != "-" {
			if info, err := e.FS.Stat(e.Abs(f), true); err == nil {
				mtimes[i] = info.ModTime()
			}
		}
	}
	if bytes.Equal(data[0], data[1]) {
		return 0
	}
	if brief {
		fmt.Fprintf(e.Stdout, "Files %s and %s differ\n", files[0], files[1])
		return 1
	}
	a, b := lines(data[0]), lines(data[1])
	noNL := [2]bool{len(data[0]) > 0 && data[0][len(data[0])-1] != '\n', len(data[1]) > 0 && data[1][len(data[1])-1] != '\n'}
	ops := myers(a, b)
	w := bufio.NewWriter(e.Stdout)
	if unified {
		for i := range 2 {
			name := files[i]
			if i < len(labels) {
				fmt.Fprintf(w, "%s %s\n", [2]string{"---", "+++"}[i], labels[i])
				continue
			}
			fmt.Fprintf(w, "%s %s\t%s\n", [2]string{"---", "+++"}[i], name, mtimes[i].Format("2006-01-02 15:04:05.000000000 -0700"))
		}
		writeUnified(w, ops, a, b, ctxLines, noNL)
	} else {
		writeNormal(w, ops, a, b, noNL)
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("diff", err)
	}
	return 1
}

func writeUnified(w *bufio.Writer, ops []editOp, a, b []string, ctx int, noNL [2]bool) {
	for i := 0; i < len(ops); {
		// find the next change
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i >= len(ops) {
			return
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run >= len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		hunk := ops[start:end]
		aStart, bStart, aLen, bLen := -1, -1, 0, 0
		for _, op := range hunk {
			if op.kind != '+' {
				if aStart < 0 {
					aStart = op.a
				}
				aLen++
			}
			if op.kind != '-' {
				if bStart < 0 {
					bStart = op.b
				}
				bLen++
			}
		}
		if aStart < 0 {
			aStart = hunk[0].a
		}
		if bStart < 0 {
			bStart = hunk[0].b
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", rangeStr(aStart, aLen), rangeStr(bStart, bLen))
		for _, op := range hunk {
			switch op.kind {
			case ' ':
				w.WriteString(" " + a[op.a] + "\n")
				if op.a == len(a)-1 && noNL[0] && op.b == len(b)-1 && noNL[1] {
					w.WriteString("\\ No newline at end of file\n")
				}
			case '-':
				w.WriteString("-" + a[op.a] + "\n")
				if op.a == len(a)-1 && noNL[0] {
					w.WriteString("\\ No newline at end of file\n")
				}
			case '+':
				w.WriteString("+" + b[op.b] + "\n")
				if op.b == len(b)-1 && noNL[1] {
					w.WriteString("\\ No newline at end of file\n")
				}
			}
		}
		i = end
	}
}

func rangeStr(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeNormal(w *bufio.Writer, ops []editOp, a, b []string, noNL [2]bool) {
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		j := i
		var dels, ins []editOp
		for j < len(ops) && ops[j].kind != ' ' {
			if ops[j].kind == '-' {
				dels = append(dels, ops[j])
			} else {
				ins = append(ins, ops[j])
			}
			j++
		}
		aFrom, bFrom := ops[i].a, ops[i].b
		ar := func(from, n int) string {
			if n <= 1 {
				return fmt.Sprintf("%d", from+1)
			}
			return fmt.Sprintf("%d,%d", from+1, from+n)
		}
		switch {
		case len(dels) > 0 && len(ins) > 0:
			fmt.Fprintf(w, "%sc%s\n", ar(dels[0].a, len(dels)), ar(ins[0].b, len(ins)))
		case len(dels) > 0:
			fmt.Fprintf(w, "%sd%d\n", ar(dels[0].a, len(dels)), bFrom)
		default:
			fmt.Fprintf(w, "%da%s\n", aFrom, ar(ins[0].b, len(ins)))
		}
		for _, d := range dels {
			w.WriteString("< " + a[d.a] + "\n")
			if d.a == len(a)-1 && noNL[0] {
				w.WriteString("\\ No newline at end of file\n")
			}
		}
		if len(dels) > 0 && len(ins) > 0 {
			w.WriteString("---\n")
		}
		for _, in := range ins {
			w.WriteString("> " + b[in.b] + "\n")
			if in.b == len(b)-1 && noNL[1] {
				w.WriteString("\\ No newline at end of file\n")
			}
		}
		i = j
	}
}
