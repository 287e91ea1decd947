// Copyright (c) 2017, Daniel Martí <mvdan@mvdan.cc>
// See LICENSE for licensing information

package interp

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/sandboxer/sandboxer/third_party/mvdansh/expand"
	"mvdan.cc/sh/v3/syntax"
)

// non-empty string is true, empty string is false
func (r *Runner) bashTest(ctx context.Context, expr syntax.TestExpr, classic bool) string {
	switch x := expr.(type) {
	case *syntax.Word:
		if classic {
			// In the classic "test" mode, we already expanded and
			// split the list of words, so don't redo that work.
			return r.document(x)
		}
		return r.literal(x)
	case *syntax.ParenTest:
		return r.bashTest(ctx, x.X, classic)
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			var a, b int64
			if classic {
				// The test builtin wants integers, in decimal.
				var ok bool
				if a, ok = r.testInt(r.bashTest(ctx, x.X, classic)); !ok {
					return ""
				}
				if b, ok = r.testInt(r.bashTest(ctx, x.Y, classic)); !ok {
					return ""
				}
			} else {
				// [[ ]] evaluates both sides as arithmetic expressions,
				// as in [[ 0x10 -eq 16 ]] or [[ x -gt 3 ]].
				xw, _ := x.X.(*syntax.Word)
				yw, _ := x.Y.(*syntax.Word)
				if xw == nil || yw == nil {
					return ""
				}
				a, b = int64(r.arithm(xw)), int64(r.arithm(yw))
			}
			if intTest(x.Op, a, b) {
				return "1"
			}
			return ""
		case syntax.TsReMatch:
			if classic {
				break
			}
			str := r.literal(x.X.(*syntax.Word))
			re, err := expand.Regexp(r.ecfg, x.Y.(*syntax.Word))
			if err != nil {
				r.expandErr(err)
				return ""
			}
			if r.binTest(ctx, x.Op, str, re) {
				return "1"
			}
			return ""
		case syntax.TsMatchShort, syntax.TsMatch, syntax.TsNoMatch:
			str := r.literal(x.X.(*syntax.Word))
			yw := x.Y.(*syntax.Word)
			if classic { // test, [
				lit := r.literal(yw)
				if (str == lit) == (x.Op != syntax.TsNoMatch) {
					return "1"
				}
			} else { // [[
				pattern := r.pattern(yw)
				if r.match(pattern, str) == (x.Op != syntax.TsNoMatch) {
					return "1"
				}
			}
			return ""
		}
		if r.binTest(ctx, x.Op, r.bashTest(ctx, x.X, classic), r.bashTest(ctx, x.Y, classic)) {
			return "1"
		}
		return ""
	case *syntax.UnaryTest:
		if r.unTest(ctx, x.Op, r.bashTest(ctx, x.X, classic)) {
			return "1"
		}
		return ""
	}
	return ""
}

func (r *Runner) binTest(ctx context.Context, op syntax.BinTestOperator, x, y string) bool {
	switch op {
	case syntax.TsReMatch:
		// Like POSIX extended regular expressions, . matches a newline.
		y = "(?s)" + y
		if r.opts[optNoCaseMatch] {
			y = "(?i)" + y
		}
		re, err := regexp.Compile(y)
		if err != nil {
			r.exit.code = 2
			return false
		}
		m := re.FindStringSubmatch(x)
		if m == nil {
			r.setVar("BASH_REMATCH", expand.Variable{Set: true, Kind: expand.Indexed})
			return false
		}
		vr := expand.Variable{
			Set:  true,
			Kind: expand.Indexed,
			List: m,
		}
		r.setVar("BASH_REMATCH", vr)
		return true
	case syntax.TsNewer, syntax.TsOlder:
		info1, err1 := r.stat(ctx, x)
		info2, err2 := r.stat(ctx, y)
		// -ot is the mirror of -nt, so swap the operands and share the logic.
		if op == syntax.TsOlder {
			info1, info2, err1, err2 = info2, info1, err2, err1
		}
		// True if the first operand exists and the second does not,
		// or if both exist and the first is newer.
		if err1 != nil {
			return false
		}
		if err2 != nil {
			return true
		}
		return info1.ModTime().After(info2.ModTime())
	case syntax.TsDevIno:
		info1, err1 := r.stat(ctx, x)
		info2, err2 := r.stat(ctx, y)
		if err1 != nil || err2 != nil {
			return false
		}
		return sameFile(info1, info2)
	case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
		return intTest(op, atoi(x), atoi(y))
	case syntax.AndTest:
		return x != "" && y != ""
	case syntax.OrTest:
		return x != "" || y != ""
	case syntax.TsBefore:
		return x < y
	case syntax.TsAfter:
		return x > y
	default:
		// Should only happen if we forgot a case above.
		panic(fmt.Sprintf("unexpected binary test operator: %q", op))
	}
}

func intTest(op syntax.BinTestOperator, x, y int64) bool {
	switch op {
	case syntax.TsEql:
		return x == y
	case syntax.TsNeq:
		return x != y
	case syntax.TsLeq:
		return x <= y
	case syntax.TsGeq:
		return x >= y
	case syntax.TsLss:
		return x < y
	default: // TsGtr
		return x > y
	}
}

// testInt parses an integer operand of the test builtin like Bash:
// decimal, with an optional sign and blanks around it.
func (r *Runner) testInt(s string) (int64, bool) {
	t := strings.Trim(s, " \t\n")
	digits := strings.TrimLeft(t, "+-")
	if len(t)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		r.errf("%s: integer expression expected\n", s)
		r.testErr = true
		return 0, false
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		r.errf("%s: integer expression expected\n", s)
		r.testErr = true
		return 0, false
	}
	return n, true
}

// sameFile is like [os.SameFile], but it also compares files from a
// [StatHandlerFunc] which identifies files by a comparable [fs.FileInfo.Sys]
// value, such as an inode number.
func sameFile(a, b fs.FileInfo) bool {
	if os.SameFile(a, b) {
		return true
	}
	sa, sb := a.Sys(), b.Sys()
	if sa == nil || sb == nil {
		return false
	}
	t := reflect.TypeOf(sa)
	return t == reflect.TypeOf(sb) && t.Comparable() && t.Kind() != reflect.Pointer && sa == sb
}

// varIsSet is [[ -v name ]], where name may be an array element like a[1].
func (r *Runner) varIsSet(name string) bool {
	base, sub, ok := strings.Cut(name, "[")
	if !ok || !strings.HasSuffix(sub, "]") {
		return r.lookupVar(name).IsSet()
	}
	sub = sub[:len(sub)-1]
	vr := r.lookupVar(base)
	switch vr.Kind {
	case expand.Associative:
		_, ok := vr.Map[sub]
		return ok
	case expand.Indexed:
		if sub == "@" || sub == "*" {
			return len(vr.List) > 0
		}
		expr, err := syntax.NewParser().Arithmetic(strings.NewReader(sub))
		if err != nil {
			return false
		}
		i := r.arithm(expr)
		if vr.Indexes == nil {
			if i < 0 {
				i += len(vr.List)
			}
			return i >= 0 && i < len(vr.List)
		}
		return slices.Contains(vr.Indexes, i)
	case expand.String:
		return sub == "0" || sub == "@" || sub == "*"
	}
	return false
}

func (r *Runner) statMode(ctx context.Context, name string, mode os.FileMode) bool {
	info, err := r.stat(ctx, name)
	return err == nil && info.Mode()&mode != 0
}

func (r *Runner) unTest(ctx context.Context, op syntax.UnTestOperator, x string) bool {
	switch op {
	case syntax.TsExists:
		_, err := r.stat(ctx, x)
		return err == nil
	case syntax.TsRegFile:
		info, err := r.stat(ctx, x)
		return err == nil && info.Mode().IsRegular()
	case syntax.TsDirect:
		return r.statMode(ctx, x, os.ModeDir)
	case syntax.TsCharSp:
		return r.statMode(ctx, x, os.ModeCharDevice)
	case syntax.TsBlckSp:
		info, err := r.stat(ctx, x)
		return err == nil && info.Mode()&os.ModeDevice != 0 &&
			info.Mode()&os.ModeCharDevice == 0
	case syntax.TsNmPipe:
		return r.statMode(ctx, x, os.ModeNamedPipe)
	case syntax.TsSocket:
		return r.statMode(ctx, x, os.ModeSocket)
	case syntax.TsSmbLink:
		info, err := r.lstat(ctx, x)
		return err == nil && info.Mode()&os.ModeSymlink != 0
	case syntax.TsSticky:
		return r.statMode(ctx, x, os.ModeSticky)
	case syntax.TsUIDSet:
		return r.statMode(ctx, x, os.ModeSetuid)
	case syntax.TsGIDSet:
		return r.statMode(ctx, x, os.ModeSetgid)
	case syntax.TsModif:
		info, err := r.stat(ctx, x)
		if err != nil {
			return false
		}
		return info.ModTime().After(getAtime(info))
	case syntax.TsRead:
		return r.access(ctx, x, AccessRead) == nil
	case syntax.TsWrite:
		return r.access(ctx, x, AccessWrite) == nil
	case syntax.TsExec:
		return r.access(ctx, x, AccessExec) == nil
	case syntax.TsNoEmpty:
		info, err := r.stat(ctx, x)
		return err == nil && info.Size() > 0
	case syntax.TsFdTerm:
		fd := atoi(x)
		var f any
		switch fd {
		case 0:
			f = r.stdin
		case 1:
			f = r.stdout
		case 2:
			f = r.stderr
		}
		if f, ok := f.(interface{ Fd() uintptr }); ok {
			// Support [os.File.Fd] methods such as the one on [*os.File].
			return term.IsTerminal(int(f.Fd()))
		}
		// TODO: allow term.IsTerminal here too if running in the
		// "single process" mode.
		return false
	case syntax.TsEmpStr:
		return x == ""
	case syntax.TsNempStr:
		return x != ""
	case syntax.TsOptSet:
		if opt := r.posixOptByName(x); opt != nil {
			return *opt
		}
		return false
	case syntax.TsVarSet:
		return r.varIsSet(x)
	case syntax.TsRefVar:
		return r.lookupVar(x).Kind == expand.NameRef
	case syntax.TsNot:
		return x == ""
	case syntax.TsUsrOwn, syntax.TsGrpOwn:
		return r.unTestOwnOrGrp(ctx, op, x)
	default:
		// Should only happen if we forgot a case above.
		panic(fmt.Sprintf("unexpected unary test op: %v", op))
	}
}
