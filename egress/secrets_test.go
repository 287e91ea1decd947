package egress_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/agent/trustfile"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// The value of the test's secret: it must reach the API server and nothing else.
const secretValue = "s3cr3t-0d5e8a-value"

// seen records the headers each request reached a server with.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seen) handler(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(r.Context()))
		s.mu.Unlock()
		next(w, r)
	}
}

func (s *seen) all() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// secretProxy is a proxy whose upstream trust store is the API target's certificate (httptest's,
// for example.com) and a client that trusts the proxy's CA, as a sandbox's clients do.
func secretProxy(t *testing.T, api *target, cfg egress.Config) (*egress.Proxy, *url.URL, *http.Client) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(api.Certificate())
	cfg.UpstreamRoots = roots
	cfg.Resolve = names(map[string]string{"example.com": "127.0.0.1", "other.test": "127.0.0.1"})
	cfg.AllowAddrs = loopbackOnly
	p, pu := startProxy(t, cfg)
	trust := x509.NewCertPool()
	require.True(t, trust.AppendCertsFromPEM(p.CACert()))
	cl := &http.Client{Timeout: time.Minute, Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: trust}}}
	t.Cleanup(cl.CloseIdleConnections)
	return p, pu, cl
}

func do(t *testing.T, cl *http.Client, method, u string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := cl.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestSecretsReachOnlyTheirHost(t *testing.T) {
	t.Parallel()
	var apiSeen, otherSeen seen
	other := newTarget(t, false, otherSeen.handler(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "landed") }))
	api := newTarget(t, true, apiSeen.handler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/redirect" {
			http.Redirect(w, r, fmt.Sprintf("http://other.test:%d/landing", other.Port), http.StatusFound)
			return
		}
		w.Header().Set("X-Echo", r.Header.Get("Authorization")) // a destination that echoes it back
		io.WriteString(w, "ok")
	}))
	p, _, cl := secretProxy(t, api, egress.Config{
		AllowHosts: []string{"example.com", "other.test"},
		Secrets:    []egress.Secret{{Name: "API_KEY", Value: secretValue}},
		Inject:     []egress.Injection{{Host: "example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"}},
	})
	m := p.Mark()
	apiURL := fmt.Sprintf("https://example.com:%d", api.Port)
	placeholder := http.Header{"X-Token": {egress.Placeholder("API_KEY")}, "Authorization": {"Bearer " + egress.Placeholder("API_KEY")}}

	code, body := do(t, cl, "GET", apiURL+"/v1/models", placeholder)
	require.Equal(t, 200, code, body)
	// The redirect to another host: the client sends its placeholder there too; it stays one.
	code, body = do(t, cl, "GET", apiURL+"/v1/redirect", placeholder)
	require.Equal(t, 200, code, body)
	assert.Equal(t, "landed", body)

	reqs := apiSeen.all()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		assert.Equal(t, "Bearer "+secretValue, r.Header.Get("Authorization"), "the injection replaced what the client sent")
		assert.Equal(t, secretValue, r.Header.Get("X-Token"), "the placeholder is replaced for the bound host")
	}
	oreqs := otherSeen.all()
	require.Len(t, oreqs, 1)
	assert.Equal(t, egress.Placeholder("API_KEY"), oreqs[0].Header.Get("X-Token"))
	for k, vs := range oreqs[0].Header {
		for _, v := range vs {
			assert.NotContains(t, v, secretValue, "header %s of the redirect's request", k)
		}
	}

	// What the sandbox gets back and what the proxy reports hold no value.
	resp, err := cl.Get(apiURL + "/v1/echo")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "Bearer "+egress.Placeholder("API_KEY"), resp.Header.Get("X-Echo"), "an echoed secret is redacted from the response's headers")
	cl.CloseIdleConnections()
	for _, d := range since(t, p, m) {
		assert.NotContains(t, fmt.Sprintf("%+v", d), secretValue)
	}
	cfg := egress.Config{Secrets: []egress.Secret{{Name: "API_KEY", Value: secretValue}}}
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.Secrets), secretValue)
}

// TestSecretsGoOnlyOverTLS: a plain-HTTP request to the bound host keeps its placeholder.
func TestSecretsGoOnlyOverTLS(t *testing.T) {
	t.Parallel()
	var plainSeen seen
	plain := newTarget(t, false, plainSeen.handler(func(w http.ResponseWriter, r *http.Request) {}))
	api := newTarget(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	_, _, cl := secretProxy(t, api, egress.Config{
		AllowHosts: []string{"example.com"},
		Secrets:    []egress.Secret{{Name: "API_KEY", Value: secretValue}},
		Inject:     []egress.Injection{{Host: "example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"}},
	})
	code, _ := do(t, cl, "GET", fmt.Sprintf("http://example.com:%d/", plain.Port), http.Header{"X-Token": {egress.Placeholder("API_KEY")}})
	require.Equal(t, 200, code)
	reqs := plainSeen.all()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Header.Get("Authorization"))
	assert.Equal(t, egress.Placeholder("API_KEY"), reqs[0].Header.Get("X-Token"))
}

func TestRulesRefuseRequestsOutsideThem(t *testing.T) {
	t.Parallel()
	var apiSeen seen
	api := newTarget(t, true, apiSeen.handler(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	p, _, cl := secretProxy(t, api, egress.Config{AllowHosts: []string{"example.com GET /v1/"}})
	m := p.Mark()
	u := fmt.Sprintf("https://example.com:%d", api.Port)
	code, _ := do(t, cl, "GET", u+"/v1/models", nil)
	assert.Equal(t, 200, code)
	// On the same kept-alive connection: each request is checked.
	for _, c := range []struct{ method, path string }{{"POST", "/v1/models"}, {"GET", "/v2/models"}, {"GET", "/v1/../admin"}, {"DELETE", "/"}} {
		req, err := http.NewRequest(c.method, u+c.path, nil)
		require.NoError(t, err)
		req.URL.Opaque = c.path // sent as written, not cleaned by the client
		resp, err := cl.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s", c.method, c.path)
		assert.Contains(t, string(b), `"example.com GET /v1/"`, "the refusal names the rule")
	}
	cl.CloseIdleConnections()
	assert.Len(t, apiSeen.all(), 1, "only the request inside the rules reached the server")
	ds := since(t, p, m)
	var refused []string
	for _, d := range ds {
		if !d.Allowed {
			refused = append(refused, d.Reason)
		}
	}
	assert.Len(t, refused, 4, "each refused request is a decision of the network report: %v", ds)
	assert.EqualValues(t, 1, api.Conns())
}

func TestSecretAndInjectionErrorsNeverShowTheValue(t *testing.T) {
	t.Parallel()
	sec := []egress.Secret{{Name: "API_KEY", Value: secretValue}}
	bind := []egress.Injection{{Host: "example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"}}
	for name, cfg := range map[string]egress.Config{
		"unbound":          {AllowHosts: []string{"example.com"}, Secrets: sec},
		"unknown name":     {AllowHosts: []string{"example.com"}, Secrets: sec, Inject: append(bind, egress.Injection{Host: "example.com", Header: "X-Other", Template: "{{NOPE}}"})},
		"host not allowed": {AllowHosts: []string{"other.test"}, Secrets: sec, Inject: bind},
		"bad header":       {AllowHosts: []string{"example.com"}, Secrets: sec, Inject: []egress.Injection{{Host: "example.com", Header: "Host", Template: "{{API_KEY}}"}}},
		"no reference":     {AllowHosts: []string{"example.com"}, Secrets: sec, Inject: append(bind, egress.Injection{Host: "example.com", Header: "X-A", Template: "plain"})},
		"line break":       {AllowHosts: []string{"example.com"}, Secrets: []egress.Secret{{Name: "API_KEY", Value: secretValue + "\r\nX-Evil: 1"}}, Inject: bind},
		"bad name":         {AllowHosts: []string{"example.com"}, Secrets: []egress.Secret{{Name: "api-key", Value: secretValue}}, Inject: bind},
		"twice":            {AllowHosts: []string{"example.com"}, Secrets: append(sec, sec...), Inject: bind},
	} {
		_, err := egress.New(cfg)
		require.ErrorIs(t, err, errs.InvalidInput, name)
		assert.NotContains(t, err.Error(), secretValue, name)
	}
	in, err := egress.ParseInjection("api.example.com:Authorization=Bearer {{API_KEY}}")
	require.NoError(t, err)
	assert.Equal(t, egress.Injection{Host: "api.example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"}, in)
	_, err = egress.ParseInjection("api.example.com Authorization")
	assert.ErrorIs(t, err, errs.InvalidInput)
}

// TestCurlCarriesASecretItNeverHeld: a real client (curl) trusting the proxy's CA through its
// file, as in a sandbox, sends the placeholder; the API server gets the value.
func TestCurlCarriesASecretItNeverHeld(t *testing.T) {
	t.Parallel()
	curl := need(t, "curl")
	var apiSeen seen
	api := newTarget(t, true, apiSeen.handler(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	p, pu, _ := secretProxy(t, api, egress.Config{
		AllowHosts: []string{"example.com"},
		Secrets:    []egress.Secret{{Name: "GIT_TOKEN", Value: secretValue}},
		Inject:     []egress.Injection{{Host: "example.com", Header: "X-Api-Key", Template: "{{GIT_TOKEN}}"}},
	})
	ca := filepath.Join(t.TempDir(), "proxy-ca.pem")
	require.NoError(t, os.WriteFile(ca, p.CACert(), 0o644))
	env := append(proxyEnv(t, pu), "SSL_CERT_FILE="+ca, "GIT_TOKEN="+egress.Placeholder("GIT_TOKEN"))
	out, err := run(t, env, "", curl, "-sS", "-u", "x-access-token:"+egress.Placeholder("GIT_TOKEN"),
		fmt.Sprintf("https://example.com:%d/v1/user", api.Port))
	require.NoError(t, err, out)
	assert.Equal(t, "ok", out)
	reqs := apiSeen.all()
	require.Len(t, reqs, 1)
	assert.Equal(t, secretValue, reqs[0].Header.Get("X-Api-Key"))
	user, pass, ok := reqs[0].BasicAuth()
	require.True(t, ok)
	assert.Equal(t, "x-access-token", user)
	assert.Equal(t, secretValue, pass, "the placeholder inside a Basic credential is replaced too")
	assert.False(t, strings.Contains(out, secretValue))
}

// TestSetPolicyAppliesAtOnce: a narrowing stops running downloads (a blind tunnel, an
// intercepted one, a plain HTTP request) to the host it removes; a widening lets a new host in;
// an invalid policy changes nothing.
func TestSetPolicyAppliesAtOnce(t *testing.T) {
	t.Parallel()
	endless := func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 32<<10)
		for {
			if _, err := w.Write(buf); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
	}
	secure := newTarget(t, true, http.HandlerFunc(endless))
	plain := newTarget(t, false, http.HandlerFunc(endless))
	for _, c := range []struct {
		name   string
		hosts  []string
		url    string
		narrow []string // nil: no host at all
	}{
		{"blind tunnel", []string{"example.com", "other.test"}, fmt.Sprintf("https://example.com:%d/", secure.Port), []string{"other.test"}},
		{"intercepted", []string{"example.com GET", "other.test"}, fmt.Sprintf("https://example.com:%d/", secure.Port), []string{"other.test"}},
		{"plain http", []string{"example.com", "other.test"}, fmt.Sprintf("http://example.com:%d/", plain.Port), []string{"other.test"}},
		{"to nothing", []string{"example.com GET", "other.test"}, fmt.Sprintf("https://example.com:%d/", secure.Port), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _, cl := secretProxy(t, secure, egress.Config{AllowHosts: c.hosts})
			if c.name == "blind tunnel" { // the client trusts the server itself: nothing is terminated
				pool := x509.NewCertPool()
				pool.AddCert(secure.Certificate())
				cl.Transport.(*http.Transport).TLSClientConfig.RootCAs = pool
			}
			resp, err := cl.Get(c.url)
			require.NoError(t, err)
			defer resp.Body.Close()
			_, err = io.ReadFull(resp.Body, make([]byte, 256<<10))
			require.NoError(t, err, "the download runs")

			require.ErrorIs(t, p.SetPolicy([]string{"*"}, nil, nil), errs.InvalidInput)
			_, err = io.ReadFull(resp.Body, make([]byte, 64<<10))
			require.NoError(t, err, "an invalid policy changed nothing")

			require.NoError(t, p.SetPolicy(c.narrow, nil, nil))
			done := make(chan error, 1)
			go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the download to a host no longer allowed went on")
			}
			resp2, err := cl.Get(c.url)
			if err == nil {
				resp2.Body.Close()
				assert.Equal(t, http.StatusForbidden, resp2.StatusCode)
			}
			assert.Equal(t, c.narrow, p.Allowlist().Patterns())
		})
	}
}

// TestWriteBundleChecksCheaply: the bundle is made from the system certificates once; while the
// file ends with the authority, the system's are not read again; a removed or changed file is
// made again.
func TestWriteBundleChecksCheaply(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "home", trustfile.Path)
	calls := 0
	system := func() ([]byte, error) { calls++; return []byte("SYSTEM CERTS"), nil }
	pem := []byte("-----BEGIN CERTIFICATE-----\nproxy\n-----END CERTIFICATE-----\n")
	require.NoError(t, trustfile.Write(path, pem, system))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "SYSTEM CERTS\n"+string(pem), string(b))
	require.NoError(t, trustfile.Write(path, pem, system))
	assert.Equal(t, 1, calls, "a file that ends with the authority is left as it is")
	require.NoError(t, os.WriteFile(path, []byte("something else"), 0o644))
	require.NoError(t, trustfile.Write(path, pem, system))
	require.NoError(t, os.Remove(path))
	require.NoError(t, trustfile.Write(path, pem, system))
	assert.Equal(t, 3, calls)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "SYSTEM CERTS\n"+string(pem), string(b))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")
}
