package egress_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// TestSecretRefs: a secret is named with where its value is read, never with the value; the
// value is read from the environment or a file, and no error holds it.
func TestSecretRefs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte(secretValue+"\n"), 0o600))
	env := func(k string) (string, bool) {
		if k == "TOKEN_VAR" {
			return secretValue, true
		}
		return "", false
	}

	r, err := egress.ParseSecretRef("API_KEY=env:TOKEN_VAR")
	require.NoError(t, err)
	assert.Equal(t, egress.SecretRef{Name: "API_KEY", Source: "env:TOKEN_VAR"}, r)
	s, err := r.Resolve(env)
	require.NoError(t, err)
	assert.Equal(t, egress.Secret{Name: "API_KEY", Value: secretValue}, s)

	r, err = egress.ParseSecretRef("API_KEY=file:" + file)
	require.NoError(t, err)
	s, err = r.Resolve(env)
	require.NoError(t, err)
	assert.Equal(t, secretValue, s.Value, "one trailing line break is dropped")

	for _, bad := range []string{"API_KEY", "api_key=env:X", "API_KEY=" + secretValue, "API_KEY=file:relative/path",
		"API_KEY=env:", "API_KEY=vault:x"} {
		_, err := egress.ParseSecretRef(bad)
		require.ErrorIs(t, err, errs.InvalidInput, bad)
		assert.NotContains(t, err.Error(), secretValue)
	}

	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat(secretValue, egress.MaxSecretFileBytes/len(secretValue)+1)), 0o600))
	withLF := filepath.Join(dir, "lf")
	require.NoError(t, os.WriteFile(withLF, []byte(secretValue+"\nmore\n"), 0o600))
	for _, c := range []struct{ source, why string }{
		{"env:UNSET_VAR", "UNSET_VAR is not set"},
		{"file:" + filepath.Join(dir, "none"), "no file"},
		{"file:" + dir, "not a regular file"},
		{"file:" + big, "larger than 64 KiB"},
	} {
		_, err := egress.SecretRef{Name: "API_KEY", Source: c.source}.Resolve(env)
		require.ErrorIs(t, err, errs.InvalidInput, c.source)
		assert.Contains(t, err.Error(), c.why)
		assert.NotContains(t, err.Error(), secretValue)
	}
	s, err = egress.SecretRef{Name: "API_KEY", Source: "file:" + withLF}.Resolve(env)
	require.NoError(t, err, "the value is read; the policy refuses it")
	err = egress.CheckPolicy([]string{"example.com"}, []egress.Secret{s}, []egress.Injection{{Host: "example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"}})
	require.ErrorIs(t, err, errs.InvalidInput)
	assert.Contains(t, err.Error(), "line break")
	assert.NotContains(t, err.Error(), secretValue)
}

func TestCheckPolicy(t *testing.T) {
	t.Parallel()
	sec := []egress.Secret{{Name: "API_KEY", Value: secretValue}}
	in, err := egress.ParseInjections([]string{"api.example.com:Authorization=Bearer {{API_KEY}}"})
	require.NoError(t, err)
	require.NoError(t, egress.CheckPolicy(nil, nil, nil), "no policy at all")
	require.NoError(t, egress.CheckPolicy([]string{"api.example.com GET /v1/"}, sec, in))
	err = egress.CheckPolicy(nil, sec, in)
	require.ErrorIs(t, err, errs.InvalidInput, "secrets need hosts")
	err = egress.CheckPolicy([]string{"other.example.com"}, sec, in)
	require.ErrorIs(t, err, errs.InvalidInput, "an injection's host must be allowed")
	err = egress.CheckPolicy([]string{"api.example.com"}, sec, nil)
	require.ErrorIs(t, err, errs.InvalidInput, "a secret bound to no host")
	_, err = egress.ParseInjections([]string{"api.example.com Bearer"})
	require.ErrorIs(t, err, errs.InvalidInput)
}

// TestABindingSetsNoHeader: "HOST:{{NAME}}" binds a secret to a host without a header: the
// placeholder the client put in a Basic credential is replaced, and no header is added.
func TestABindingSetsNoHeader(t *testing.T) {
	t.Parallel()
	in, err := egress.ParseInjection("example.com:{{GIT_TOKEN}}")
	require.NoError(t, err)
	assert.Equal(t, egress.Injection{Host: "example.com", Template: "{{GIT_TOKEN}}"}, in)
	assert.Equal(t, "example.com:{{GIT_TOKEN}}", in.String())
	_, err = egress.ParseInjection("example.com:{{GIT_TOKEN}} trailing")
	require.ErrorIs(t, err, errs.InvalidInput, "a binding is placeholders only")

	var apiSeen seen
	api := newTarget(t, true, apiSeen.handler(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	_, _, cl := secretProxy(t, api, egress.Config{
		AllowHosts: []string{"example.com"},
		Secrets:    []egress.Secret{{Name: "GIT_TOKEN", Value: secretValue}},
		Inject:     []egress.Injection{in},
	})
	req, err := http.NewRequest("GET", fmt.Sprintf("https://example.com:%d/repo.git/info/refs", api.Port), nil)
	require.NoError(t, err)
	req.SetBasicAuth("x-access-token", egress.Placeholder("GIT_TOKEN"))
	resp, err := cl.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	reqs := apiSeen.all()
	require.Len(t, reqs, 1)
	user, pass, ok := reqs[0].BasicAuth()
	require.True(t, ok)
	assert.Equal(t, "x-access-token", user)
	assert.Equal(t, secretValue, pass)
	assert.Len(t, reqs[0].Header.Values("Authorization"), 1, "no header added")
}
