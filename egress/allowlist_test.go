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

func TestAllowlistRules(t *testing.T) {
	t.Parallel()
	a, err := egress.ParseAllowlist([]string{"api.example.com GET,POST /v1/", "api.example.com DELETE /v1/jobs", "open.example.com", "*.rules.example.net GET"})
	require.NoError(t, err)
	assert.Equal(t, []string{"api.example.com GET,POST /v1/", "api.example.com DELETE /v1/jobs", "open.example.com", "*.rules.example.net GET"}, a.Patterns())
	assert.True(t, a.HasRules("API.example.com"))
	assert.True(t, a.HasRules("x.rules.example.net"))
	assert.False(t, a.HasRules("open.example.com"))
	assert.False(t, a.HasRules("elsewhere.example.com"))
	for _, c := range []struct {
		host, method, path string
		want               bool
	}{
		{"api.example.com", "GET", "/v1/models", true},
		{"api.example.com", "POST", "/v1", true},
		{"api.example.com", "GET", "/v10/models", false},
		{"api.example.com", "PUT", "/v1/models", false},
		{"api.example.com", "GET", "/v2/models", false},
		{"api.example.com", "GET", "/", false},
		{"api.example.com", "GET", "/v1/../admin", false},
		{"api.example.com", "GET", "/v1//x", false},
		{"api.example.com", "GET", "/v1/./x", false},
		{"api.example.com", "DELETE", "/v1/jobs/7", true},
		{"api.example.com", "DELETE", "/v1/models/7", false},
		{"open.example.com", "DELETE", "/anything/../at/all", true},
		{"a.rules.example.net", "GET", "/x", true},
		{"a.rules.example.net", "POST", "/x", false},
		{"rules.example.net", "GET", "/x", false},
		{"other.example.com", "GET", "/", false},
	} {
		ok, why := a.Check(c.host, c.method, c.path)
		assert.Equal(t, c.want, ok, "%s %s %s", c.method, c.host, c.path)
		if !ok && c.host == "api.example.com" {
			assert.Contains(t, why, `"api.example.com GET,POST /v1/"`, "a refusal names the rules")
		}
	}
	for _, bad := range []string{"api.example.com get", "api.example.com GET,", "api.example.com v1/", "api.example.com /v1/../x", "api.example.com /v1?x=1", "api.example.com //x"} {
		_, err := egress.ParseAllowlist([]string{bad})
		assert.ErrorIs(t, err, errs.InvalidInput, bad)
	}
}
