package policy_test

import (
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/policy"
)

// FuzzCheck: Check never panics, always returns a well-formed decision, and a script denied on
// its own stays denied when something harmless runs before or after it; CheckAllowlist and
// CheckEnforced are never stricter than Check.
func FuzzCheck(f *testing.F) {
	for _, tc := range append(append(append([]checkCase(nil), issueCases...), moreCases...), constCases...) {
		if len(tc.argv) == 3 && tc.argv[1] == "-c" {
			f.Add(tc.argv[2])
		} else {
			f.Add(strings.Join(tc.argv, " "))
		}
	}
	f.Add("sh <<EOF\ncurl x\nEOF")
	f.Add("cat <<'E'\n$(curl x)\nE")
	f.Add("x=$'\\x63url'; $x")
	f.Add("echo http://[::1]:80 http://localhost@a")
	f.Add("a\x00b\x00curl")
	f.Fuzz(func(t *testing.T, script string) {
		d := policy.Check([]string{"sh", "-c", script})
		wellFormed(t, d)
		wellFormed(t, policy.Check(strings.Split(script, "\x00")))
		wellFormed(t, policy.Check(strings.Fields(script)))
		// With an allowlist inspection is never stricter than with the network off.
		a := policy.CheckAllowlist([]string{"sh", "-c", script}, func(h string) bool { return h == "modules.example.com" })
		wellFormed(t, a)
		if !a.Allowed && d.Allowed {
			t.Fatalf("sh -c %q is allowed with the network off but denied with an allowlist (%s)", script, a.Reason)
		}
		// Where the network is enforced off, inspection is never stricter either.
		e := policy.CheckEnforced([]string{"sh", "-c", script})
		wellFormed(t, e)
		if !e.Allowed && d.Allowed {
			t.Fatalf("sh -c %q is allowed by Check but denied by CheckEnforced (%s)", script, e.Reason)
		}
		// execve takes C strings: an argument holding NUL can never run, and the parser drops
		// NUL bytes, so composition is only asserted for scripts without them.
		if d.Allowed || strings.IndexByte(script, 0) >= 0 {
			return
		}
		wrapped := []string{"true && " + script}
		// A script ending in a backslash is not a complete statement: `nc\` followed by
		// "; true" is the command `nc;`, which is rightly not nc. Only complete scripts compose.
		if !strings.HasSuffix(script, `\`) {
			wrapped = append(wrapped, script+"; true")
		}
		for _, wrapped := range wrapped {
			if w := policy.Check([]string{"sh", "-c", wrapped}); w.Allowed {
				t.Fatalf("sh -c %q is denied (%s: %s) but sh -c %q is allowed", script, d.Code, d.Reason, wrapped)
			}
		}
	})
}

func wellFormed(t *testing.T, d policy.Decision) {
	t.Helper()
	if d.Allowed {
		if d.Code != "" || d.Reason != "" || d.Command != "" {
			t.Fatalf("allowed decision carries a denial: %+v", d)
		}
		if d.Err("bash") != nil {
			t.Fatalf("allowed decision has an error")
		}
		return
	}
	if d.Code != errs.NetworkDisabled && d.Code != errs.GitRemoteDisabled {
		t.Fatalf("denied with code %q", d.Code)
	}
	if d.Reason == "" {
		t.Fatalf("denied without a reason: %+v", d)
	}
	if errs.CodeOf(d.Err("bash")) != d.Code {
		t.Fatalf("Err does not carry the code: %+v", d)
	}
}
