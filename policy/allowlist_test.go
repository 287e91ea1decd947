package policy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/policy"
)

// allowGo is a small allowlist: exact names and a suffix wildcard (the egress package's matching
// is tested there; here any func(host) bool will do).
func allowGo(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "modules.example.com" || h == "git.example.com" || strings.HasSuffix(h, ".gitcontent.example.net")
}

func TestCheckAllowlist(t *testing.T) {
	t.Parallel()
	allowed := [][]string{
		{"go", "mod", "download"},
		{"curl", "-fsSL", "https://modules.example.com/example.com/x/y/@v/list"},
		{"sh", "-c", "curl https://raw.gitcontent.example.net/a/b/main/x | sh"},
		{"wget", "http://MODULES.example.com./x"},
		{"git", "clone", "https://git.example.com/sandboxer/sandboxer"},
		{"git", "fetch", "origin", "main:main"},
		{"git", "push"},
		{"npm", "install"},
		{"pip", "install", "requests"},
		{"sh", "-c", "$CMD https://modules.example.com"}, // unresolvable: left to the proxy
		{"curl", "http://localhost:8080/"},
		{"echo", "http://127.0.0.1/"},
		{"sh", "-c", "echo hi > /dev/tcp/127.0.0.1/80"},
		{"ssh", "git.example.com"}, // no URL to see: the proxy (and the empty network) decide
	}
	for _, argv := range allowed {
		d := policy.CheckAllowlist(argv, allowGo)
		assert.True(t, d.Allowed, "%q: %+v", argv, d)
		assert.NoError(t, d.Err("bash"))
	}
	denied := []struct {
		argv []string
		host string
	}{
		{[]string{"curl", "https://evil.example.com/x"}, "evil.example.com"},
		{[]string{"sh", "-c", "go mod download && curl https://evil.example.com/x"}, "evil.example.com"},
		{[]string{"sh", "-c", "curl https://modules.example.com; wget http://gitcontent.example.net/"}, "gitcontent.example.net"},
		{[]string{"curl", "http://169.254.169.254/latest/meta-data/"}, "169.254.169.254"},
		{[]string{"curl", "https://modules.example.com.evil.example/"}, "modules.example.com.evil.example"},
		{[]string{"curl", "https://modules.example.com@evil.example/"}, "evil.example"},
		{[]string{"git", "clone", "https://gitlab.com/a/b"}, "gitlab.com"},
		{[]string{"git", "clone", "git@git.example.com:a/b.git"}, "git.example.com"},
		{[]string{"git", "-C", "x", "remote", "add", "o", "git@evil.example:a/b"}, "evil.example"},
		{[]string{"bash", "-c", "exec 3<>/dev/tcp/modules.example.com/443"}, "modules.example.com"},
		{[]string{"python3", "-c", "import urllib.request as u; u.urlopen('https://evil.example/')"}, "evil.example"},
	}
	for _, c := range denied {
		d := policy.CheckAllowlist(c.argv, allowGo)
		require.False(t, d.Allowed, "%q", c.argv)
		assert.Equal(t, errs.NetworkDisabled, d.Code, "%q", c.argv)
		assert.Equal(t, c.host, d.Host, "%q", c.argv)
		assert.Contains(t, d.Reason, c.host)
		err := d.Err("bash")
		require.ErrorIs(t, err, errs.NetworkDisabled)
		assert.Equal(t, c.host, errs.As(err).Details["host"])
		// Never stricter than with the network off.
		assert.False(t, policy.Check(c.argv).Allowed, "%q", c.argv)
	}
	// nil allows no host.
	assert.False(t, policy.CheckAllowlist([]string{"curl", "https://modules.example.com"}, nil).Allowed)
	assert.True(t, policy.CheckAllowlist([]string{"curl", "http://localhost/"}, nil).Allowed)
}

func TestCheckAllowlistScriptText(t *testing.T) {
	t.Parallel()
	for _, argv := range [][]string{
		{"python3", "-c", "import urllib.request as u; u.urlopen('https://modules.example.com')"},
		{"node", "-e", `fetch("https://modules.example.com")`},
		{"sh", "-c", "curl https://modules.example.com;true"},
		// made at run time: the proxy decides
		{"sh", "-c", `curl "https://modules.example.com:$PORT/x"`},
		{"sh", "-c", `git clone "https://x:$TOKEN@git.example.com:${PORT}/r.git"`},
	} {
		assert.True(t, policy.CheckAllowlist(argv, allowGo).Allowed, "%q", argv)
	}
	for _, argv := range [][]string{
		{"python3", "-c", `u.urlopen('https://modules.example.com\x40evil.example')`},
		{"python3", "-c", `u.urlopen('https://evil.example')`},
		{"sh", "-c", `curl "https://$HOST/x"`},
		{"sh", "-c", `curl "https://modules.example.com:$X@evil.example/x"`},
		{"sh", "-c", `curl "https://evil.example:$PORT/x"`},
	} {
		assert.False(t, policy.CheckAllowlist(argv, allowGo).Allowed, "%q", argv)
	}
}
