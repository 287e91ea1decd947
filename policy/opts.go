package policy

import "strings"

// opts describes the options of a command the way getopt reads them, enough to find where its
// operands (usually the command it runs) begin. Options are only read up to the first operand.
type opts struct {
	arg     string          // short options that take an argument (-n 5, -n5)
	optArg  string          // short options whose optional argument is attached only (-i{})
	longArg map[string]bool // long options taking an argument as the next word (--user x)
	plus    bool            // +o style options too (shells)
}

// parse reads options in a from index i. fn, when not nil, sees each option's name (a letter or
// the long name) and value; it returns true to stop option parsing right after that option.
// parse returns the index of the first operand, or bad >= 0: the index of a word whose value or
// word count cannot be known where that matters (an unquoted expansion as an option argument).
func (o *opts) parse(a []arg, i int, fn func(name string, val arg) bool) (next, bad int) {
	for i < len(a) {
		w := a[i]
		if w.k != static {
			return i, -1 // an operand, or something the caller must treat as unknown
		}
		s := w.s
		if s == "--" {
			return i + 1, -1
		}
		if len(s) < 2 || (s[0] != '-' && !(o.plus && s[0] == '+')) {
			return i, -1
		}
		i++
		if strings.HasPrefix(s, "--") {
			name, val, hasVal := strings.Cut(s[2:], "=")
			v := lit(val)
			if !hasVal && o.longArg[name] {
				if i < len(a) {
					if a[i].k == multi {
						return 0, i
					}
					v = a[i]
					i++
				}
			}
			if fn != nil && fn(name, v) {
				return i, -1
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			letter := s[j : j+1]
			switch {
			case strings.Contains(o.arg, letter):
				v := lit(s[j+1:])
				if j+1 == len(s) && i < len(a) {
					if a[i].k == multi {
						return 0, i
					}
					v = a[i]
					i++
				}
				if fn != nil && fn(letter, v) {
					return i, -1
				}
				j = len(s)
			case strings.Contains(o.optArg, letter):
				if fn != nil && fn(letter, lit(s[j+1:])) {
					return i, -1
				}
				j = len(s)
			default:
				if fn != nil && fn(letter, arg{}) {
					return i, -1
				}
			}
		}
	}
	return i, -1
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
