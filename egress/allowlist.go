package egress

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/errs"
)

// Allowlist is a validated list of host patterns: exact names (modules.example.com) and suffix
// wildcards (*.gitcontent.example.net, which matches a.gitcontent.example.net and
// a.b.gitcontent.example.net but not gitcontent.example.net itself). Matching ignores case and a
// trailing dot. The zero value allows nothing.
//
// An entry may narrow what reaches its hosts with rules after the pattern, separated by spaces:
// the methods allowed (upper case, comma-separated) and path prefixes (each starting with "/"),
// as in "api.example.com GET,POST /v1/ /v2/". The proxy then terminates TLS for those hosts and
// checks every request (Check); a request passes when any entry matching its host lets it.
type Allowlist struct {
	exact    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
	patterns []string // normalised, as given
	rules    []rule   // the entries with rules
}

// rule is one entry's narrowing: methods (none: any) and path prefixes (none: any).
type rule struct {
	host    string // the entry's normalised host pattern
	entry   string // the whole entry, normalised, to name it in a refusal
	methods []string
	paths   []string
}

// MaxHostLength bounds one pattern (a DNS name is at most 253 bytes).
const MaxHostLength = 253

// ParseAllowlist validates and normalises hosts. Each pattern is a DNS name (letters, digits,
// '-', '_' and '.', labels of 1..63 bytes, at most MaxHostLength bytes) or "*." and such a name
// with at least two labels (a wildcard over a top-level domain, "*.com", is refused). An IP
// address, a port, a scheme, a path, an empty pattern or a wildcard anywhere else is
// errs.InvalidInput naming the pattern and the setting (allow-hosts); so is a rule that is not a
// list of methods or a path prefix.
func ParseAllowlist(hosts []string) (*Allowlist, error) {
	a := &Allowlist{exact: map[string]bool{}}
	for _, h := range hosts {
		fields := strings.Fields(h)
		if len(fields) == 0 {
			return nil, badPattern(h, "empty")
		}
		p, err := normalisePattern(fields[0])
		if err != nil {
			return nil, err
		}
		if len(fields) > 1 {
			r, err := parseRule(h, p, fields[1:])
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(a.rules, func(x rule) bool { return x.entry == r.entry }) {
				a.rules = append(a.rules, r)
			}
			p = r.entry
		} else if rest, ok := strings.CutPrefix(p, "*."); ok {
			a.suffixes = append(a.suffixes, "."+rest)
		} else {
			a.exact[p] = true
		}
		if !slices.Contains(a.patterns, p) {
			a.patterns = append(a.patterns, p)
		}
	}
	return a, nil
}

// parseRule reads the rules of entry h whose host pattern is host.
func parseRule(h, host string, fields []string) (rule, error) {
	r := rule{host: host}
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f, "/"):
			if strings.ContainsAny(f, "?#") || path.Clean(f) != strings.TrimSuffix(f, "/") && f != "/" {
				return rule{}, badPattern(h, fmt.Sprintf("path prefix %q is not a clean path (no query, no . or .. or //)", f))
			}
			r.paths = append(r.paths, f)
		case isMethods(f):
			r.methods = append(r.methods, strings.Split(f, ",")...)
		default:
			return rule{}, badPattern(h, fmt.Sprintf("rule %q is neither methods (GET,POST) nor a path prefix (/v1/)", f))
		}
	}
	slices.Sort(r.methods)
	r.methods = slices.Compact(r.methods)
	r.entry = strings.Join(append(append([]string{host}, strings.Join(r.methods, ",")), r.paths...), " ")
	r.entry = strings.Join(strings.Fields(r.entry), " ")
	return r, nil
}

// isMethods reports whether f is a comma-separated list of HTTP methods in upper case.
func isMethods(f string) bool {
	for m := range strings.SplitSeq(f, ",") {
		if m == "" || len(m) > 20 || strings.IndexFunc(m, func(c rune) bool { return c < 'A' || c > 'Z' }) >= 0 {
			return false
		}
	}
	return true
}

// ValidateHosts checks hosts as ParseAllowlist does.
func ValidateHosts(hosts []string) error {
	_, err := ParseAllowlist(hosts)
	return err
}

func badPattern(h, why string) error {
	e := errs.New(errs.InvalidInput, "allow-hosts", "", "allow-hosts entry %q: %s (want a host name such as modules.example.com, or *.suffix such as *.gitcontent.example.net)", h, why)
	e.Details = map[string]any{"field": "allow-hosts", "host": h}
	return e
}

func normalisePattern(h string) (string, error) {
	p := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
	switch {
	case p == "":
		return "", badPattern(h, "empty")
	case len(p) > MaxHostLength:
		return "", badPattern(h, "longer than 253 bytes")
	case strings.Contains(p, "://") || strings.ContainsAny(p, "/:@?#[] "):
		return "", badPattern(h, "a host only: no scheme, port, path or user")
	}
	if _, err := netip.ParseAddr(p); err == nil {
		return "", badPattern(h, "an IP address: the allowlist names hosts, and the proxy never dials private addresses")
	}
	name := p
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		name = rest
		if !strings.Contains(name, ".") {
			return "", badPattern(h, "a wildcard needs at least two labels after *.")
		}
	}
	if strings.Contains(name, "*") {
		return "", badPattern(h, "* is only allowed as the whole first label (*.suffix)")
	}
	if !validHostName(name) {
		return "", badPattern(h, "not a valid host name")
	}
	return p, nil
}

// validHostName reports whether name is a DNS name: labels of 1..63 bytes of letters, digits,
// '-' and '_', not starting or ending with '-'.
func validHostName(name string) bool {
	if name == "" || len(name) > MaxHostLength {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Allows reports whether host (a name as a client sent it, without port) is on the list, by an
// entry with or without rules. An IP literal is never on it.
func (a *Allowlist) Allows(host string) bool {
	h, ok := a.name(host)
	if !ok {
		return false
	}
	if a.matchesPlain(h) {
		return true
	}
	return slices.ContainsFunc(a.rules, func(r rule) bool { return patternMatches(r.host, h) })
}

// name is host normalised, when it is a host name the list can match at all.
func (a *Allowlist) name(host string) (string, bool) {
	if a == nil {
		return "", false
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if !validHostName(h) {
		return "", false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return "", false
	}
	return h, true
}

// matchesPlain reports whether an entry without rules matches h (normalised).
func (a *Allowlist) matchesPlain(h string) bool {
	if a.exact[h] {
		return true
	}
	for _, s := range a.suffixes {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// patternMatches reports whether the normalised pattern p matches the normalised host h.
func patternMatches(p, h string) bool {
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		return strings.HasSuffix(h, "."+rest)
	}
	return p == h
}

// HasRules reports whether a request to host is checked request by request: host is reached
// only through entries with rules (an entry without rules lets everything through).
func (a *Allowlist) HasRules(host string) bool {
	h, ok := a.name(host)
	return ok && !a.matchesPlain(h) && a.Allows(h)
}

// Check reports whether a request of method to urlPath on host passes the list; when it does
// not, why says so and names the entries that matched the host. urlPath is the request's
// decoded path: one that is not clean ("/v1/../admin", "//x") is refused where rules apply, as
// the destination might read it otherwise than the rule does.
func (a *Allowlist) Check(host, method, urlPath string) (ok bool, why string) {
	h, valid := a.name(host)
	if !valid {
		return false, "not in the allowlist"
	}
	if a.matchesPlain(h) {
		return true, ""
	}
	var entries []string
	for _, r := range a.rules {
		if !patternMatches(r.host, h) {
			continue
		}
		entries = append(entries, strconv.Quote(r.entry))
		if r.lets(method, urlPath) {
			return true, ""
		}
	}
	if len(entries) == 0 {
		return false, "not in the allowlist"
	}
	return false, fmt.Sprintf("%s %s is outside the rules of allow-hosts %s", method, urlPath, strings.Join(entries, ", "))
}

// lets reports whether the rule lets method and p through.
func (r rule) lets(method, p string) bool {
	if len(r.methods) > 0 && !slices.Contains(r.methods, method) {
		return false
	}
	if len(r.paths) == 0 {
		return true
	}
	if p == "" {
		p = "/"
	}
	if path.Clean(p) != strings.TrimSuffix(p, "/") && p != "/" {
		return false
	}
	for _, prefix := range r.paths {
		dir := strings.TrimSuffix(prefix, "/") // "/v1/" and "/v1" both take /v1 and /v1/..., never /v10
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// hostPatterns returns the host patterns of every entry, rules left out.
func (a *Allowlist) hostPatterns() []string {
	if a == nil {
		return nil
	}
	out := make([]string, 0, len(a.patterns))
	for _, p := range a.patterns {
		out = append(out, strings.Fields(p)[0])
	}
	return out
}

// Patterns returns the normalised patterns, in the order given, without duplicates.
func (a *Allowlist) Patterns() []string {
	if a == nil {
		return nil
	}
	return slices.Clone(a.patterns)
}

// Len is the number of patterns.
func (a *Allowlist) Len() int {
	if a == nil {
		return 0
	}
	return len(a.patterns)
}
