package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// TestNetworkPolicyInTheRecord: a long-lived sandbox keeps its egress policy in its record, its
// secrets by name and source only; a call that names no network gets it, and a session follows
// its changes at once (narrowing, widening, cut when a secret cannot be read); a call that names
// its own keeps it; an invalid policy changes nothing.
func TestNetworkPolicyInTheRecord(t *testing.T) {
	t.Parallel()
	const value = "v4lue-of-the-secret-9f3"
	mgr, o := newManager(t, "local")
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte(value+"\n"), 0o600))
	env := func(k string) (string, bool) { return map[string]string{"API_TOKEN": value}[k], k == "API_TOKEN" }

	o.AllowHosts = []string{"api.example.com GET,POST /v1/", "files.example.com"}
	o.Secrets = []egress.SecretRef{{Name: "API_KEY", Source: "env:API_TOKEN"}, {Name: "FILES", Source: "file:" + token}}
	o.Inject = []egress.Injection{{Host: "api.example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"},
		{Host: "files.example.com", Header: "X-Token", Template: "{{FILES}}"}}
	o.LookupEnv = env
	ctx := context.Background()
	rec, err := mgr.Create(ctx, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Remove(context.Background(), rec.ID, o) })
	require.NotNil(t, rec.Network)
	assert.Equal(t, o.AllowHosts, rec.Network.AllowHosts)
	assert.Equal(t, o.Secrets, rec.Network.Secrets)
	assert.Equal(t, []string{"api.example.com:Authorization=Bearer {{API_KEY}}", "files.example.com:X-Token={{FILES}}"}, rec.Network.Inject)
	assertNoValue(t, mgr.Dir(), value)

	plain := lifecycle.Options{StateDir: o.StateDir, LookupEnv: env}
	s, err := mgr.Attach(ctx, rec.ID, plain)
	require.NoError(t, err)
	defer s.Close()
	p := egress.Of(s.Sandbox)
	require.NotNil(t, p, "the record's policy gives the sandbox its proxy")
	assert.Equal(t, []string{"api.example.com GET,POST /v1/", "files.example.com"}, p.Allowlist().Patterns())

	own := plain
	own.AllowHosts = []string{"other.example.com"}
	s2, err := mgr.Attach(ctx, rec.ID, own)
	require.NoError(t, err)
	defer s2.Close()
	p2 := egress.Of(s2.Sandbox)
	require.NotNil(t, p2)

	waitFor := func(want []string) {
		t.Helper()
		require.Eventually(t, func() bool { return slicesEqual(p.Allowlist().Patterns(), want) }, 10*time.Second, 20*time.Millisecond,
			"the session follows the record: want %v, have %v", want, p.Allowlist().Patterns())
	}
	_, err = mgr.SetNetwork(rec.ID, &lifecycle.Network{AllowHosts: []string{"files.example.com"},
		Secrets: []egress.SecretRef{{Name: "FILES", Source: "file:" + token}}, Inject: []string{"files.example.com:X-Token={{FILES}}"}}, env)
	require.NoError(t, err)
	waitFor([]string{"files.example.com"})

	_, err = mgr.SetNetwork(rec.ID, &lifecycle.Network{AllowHosts: []string{"files.example.com"},
		Inject: []string{"api.example.com:X=Bearer {{NONE}}"}}, env)
	require.ErrorIs(t, err, errs.InvalidInput)
	_, err = mgr.SetNetwork(rec.ID, &lifecycle.Network{AllowHosts: []string{"*"}}, env)
	require.ErrorIs(t, err, errs.InvalidInput)
	got, err := mgr.Get(rec.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"files.example.com"}, got.Network.AllowHosts, "an invalid policy changes nothing")

	_, err = mgr.SetNetwork(rec.ID, &lifecycle.Network{AllowHosts: []string{"a.example.com", "b.example.com"}}, env)
	require.NoError(t, err)
	waitFor([]string{"a.example.com", "b.example.com"})

	// A source this process cannot read (another process set it) cuts the network.
	_, err = mgr.SetNetwork(rec.ID, &lifecycle.Network{AllowHosts: []string{"api.example.com"},
		Secrets: []egress.SecretRef{{Name: "OTHER", Source: "env:ONLY_THERE"}}, Inject: []string{"api.example.com:X-Key={{OTHER}}"}},
		func(k string) (string, bool) { return "x", k == "ONLY_THERE" })
	require.NoError(t, err)
	waitFor(nil)

	_, err = mgr.SetNetwork(rec.ID, nil, env)
	require.NoError(t, err)
	got, err = mgr.Get(rec.ID)
	require.NoError(t, err)
	assert.Nil(t, got.Network)
	assert.Equal(t, []string{"other.example.com"}, p2.Allowlist().Patterns(), "a session with its own policy keeps it")

	s3, err := mgr.Attach(ctx, rec.ID, plain)
	require.NoError(t, err)
	defer s3.Close()
	assert.Nil(t, egress.Of(s3.Sandbox), "no policy: no proxy, the network cut")
	assertNoValue(t, mgr.Dir(), value)

	_, err = mgr.SetNetwork("sbx-000000000000", nil, env)
	require.ErrorIs(t, err, errs.NotFound)
}

// TestSecretsAreCheckedBeforeAnythingIsMade: an unreadable or unbound secret fails Open and
// Create before any sandbox exists.
func TestSecretsAreCheckedBeforeAnythingIsMade(t *testing.T) {
	t.Parallel()
	mgr, o := newManager(t, "local")
	o.AllowHosts = []string{"api.example.com"}
	o.Secrets = []egress.SecretRef{{Name: "API_KEY", Source: "env:SURELY_UNSET_VARIABLE_37"}}
	o.Inject = []egress.Injection{{Host: "api.example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"}}
	_, err := mgr.Create(context.Background(), o)
	require.ErrorIs(t, err, errs.InvalidInput)
	assert.Contains(t, err.Error(), "SURELY_UNSET_VARIABLE_37")
	_, err = lifecycle.Open(context.Background(), o)
	require.ErrorIs(t, err, errs.InvalidInput)
	o.Secrets, o.Inject = nil, nil
	o.Secrets = []egress.SecretRef{{Name: "API_KEY", Source: "env:HOME"}}
	_, err = mgr.Create(context.Background(), o)
	require.ErrorIs(t, err, errs.InvalidInput, "a secret bound to no host")
	assertNothingLeft(t, mgr)
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n") && len(a) == len(b)
}

// assertNoValue checks that no file under dir holds value.
func assertNoValue(t *testing.T, dir, value string) {
	t.Helper()
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), value) {
			t.Errorf("%s holds the secret's value", p)
		}
		return nil
	}))
}
