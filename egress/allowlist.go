package egress

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/errs"
)

// Allowlist is a validated list of host patterns: exact names (modules.example.com) and suffix
// wildcards (*.gitcontent.example.net, which matches a.gitcontent.example.net and
// a.b.gitcontent.example.net but not gitcontent.example.net itself). Matching ignores case and a
// trailing dot. The zero value allows nothing.
type Allowlist struct {
	exact    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
	patterns []string // normalised, as given
}

// MaxHostLength bounds one pattern (a DNS name is at most 253 bytes).
const MaxHostLength = 253

// ParseAllowlist validates and normalises hosts. Each pattern is a DNS name (letters, digits,
// '-', '_' and '.', labels of 1..63 bytes, at most MaxHostLength bytes) or "*." and such a name
// with at least two labels (a wildcard over a top-level domain, "*.com", is refused). An IP
// address, a port, a scheme, a path, an empty pattern or a wildcard anywhere else is
// errs.InvalidInput naming the pattern and the setting (allow-hosts).
func ParseAllowlist(hosts []string) (*Allowlist, error) {
	a := &Allowlist{exact: map[string]bool{}}
	for _, h := range hosts {
		p, err := normalisePattern(h)
		if err != nil {
			return nil, err
		}
		if slices.Contains(a.patterns, p) {
			continue
		}
		a.patterns = append(a.patterns, p)
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			a.suffixes = append(a.suffixes, "."+rest)
		} else {
			a.exact[p] = true
		}
	}
	return a, nil
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

// Allows reports whether host (a name as a client sent it, without port) is on the list. An IP
// literal is never on it.
func (a *Allowlist) Allows(host string) bool {
	if a == nil {
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if !validHostName(h) {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return false
	}
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
