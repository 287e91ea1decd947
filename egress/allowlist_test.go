package egress_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

func TestParseAllowlistRefusesBadPatterns(t *testing.T) {
	t.Parallel()
	for _, h := range []string{
		"", " ", "*", "*.", "*.com", "a.*.com", "*example.com", "foo*.example.com", "**.example.com",
		"http://example.com", "example.com:443", "example.com/path", "user@example.com",
		"127.0.0.1", "169.254.169.254", "::1", "[::1]", "-bad.example.com", "bad-.example.com",
		"exa mple.com", "ex\u00e4mple.com", "a..b", ".example.com",
		string(make([]byte, 300)),
	} {
		_, err := egress.ParseAllowlist([]string{"ok.example.com", h})
		require.ErrorIs(t, err, errs.InvalidInput, "pattern %q", h)
		assert.Contains(t, err.Error(), "allow-hosts", "pattern %q", h)
	}
}

func TestAllowlistMatches(t *testing.T) {
	t.Parallel()
	a, err := egress.ParseAllowlist([]string{"Modules.Example.com", "*.gitcontent.example.net", "sums.example.com.", "modules.example.com"})
	require.NoError(t, err)
	assert.Equal(t, []string{"modules.example.com", "*.gitcontent.example.net", "sums.example.com"}, a.Patterns())
	for host, want := range map[string]bool{
		"modules.example.com":                 true,
		"MODULES.example.com":                 true,
		"modules.example.com.":                true,
		"sums.example.com":                    true,
		"raw.gitcontent.example.net":          true,
		"a.b.gitcontent.example.net":          true,
		"gitcontent.example.net":              false, // the wildcard does not match the bare domain
		"evilgitcontent.example.net":          false,
		"gitcontent.example.net.evil.example": false,
		"example.com":                         false,
		"x.modules.example.com":               false,
		"modules.example.com.evil.example":    false,
		"":                                    false,
		"127.0.0.1":                           false,
		"::1":                                 false,
		"modules.example.com:443":             false,
		"modules.example.com\x00.evil":        false,
	} {
		assert.Equal(t, want, a.Allows(host), "host %q", host)
	}
	var none *egress.Allowlist
	assert.False(t, none.Allows("modules.example.com"))
}

func TestNewNeedsAnAllowlist(t *testing.T) {
	t.Parallel()
	_, err := egress.New(egress.Config{})
	require.ErrorIs(t, err, errs.InvalidInput)
	_, err = egress.New(egress.Config{AllowHosts: []string{"*"}})
	require.ErrorIs(t, err, errs.InvalidInput)
	_, err = egress.New(egress.Config{AllowHosts: []string{"a.example"}, MaxConns: -1})
	require.ErrorIs(t, err, errs.InvalidInput)
}
