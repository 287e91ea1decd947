package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/api"
)

// FuzzAPI sends arbitrary requests (method, path, query, body, token, headers) to the API's
// handlers over a memory sandbox and checks that every answer is a success or a refusal in the
// tools' error shape, never a server error; that nothing panics; and that the server goes on
// serving. "{id}" in the path is the live sandbox's id, so that the fuzzer reaches past the lookup.
func FuzzAPI(f *testing.F) {
	seeds := []struct{ method, path, body, header string }{
		{"POST", "/v1/sandboxes", `{"adapter":"memory"}`, ""},
		{"POST", "/v1/sandboxes", `{"adapter":"memory","ttlSeconds":-1}`, ""},
		{"GET", "/v1/sandboxes/{id}", "", ""},
		{"POST", "/v1/sandboxes/{id}/tools/write", `{"path":"a","content":"x"}`, "Sandboxer-Attempt: 2"},
		{"POST", "/v1/sandboxes/{id}/tools/read", `{"path":"../a"}`, ""},
		{"POST", "/v1/sandboxes/{id}/tools/bash", `{"cmd":"echo","args":["hi"]}`, ""},
		{"POST", "/v1/sandboxes/{id}/exec", `{"args":["sh","-c","echo hi; exit 2"],"stream":true}`, ""},
		{"POST", "/v1/sandboxes/{id}/exec", `{"args":["cat"],"stdinBase64":"aGk="}`, ""},
		{"PUT", "/v1/sandboxes/{id}/files?path=b", "\xff\x00", ""},
		{"GET", "/v1/sandboxes/{id}/files?path=b", "", ""},
		{"GET", "/v1/sandboxes/{id}/files/list?dir=..", "", ""},
		{"POST", "/v1/sandboxes/{id}/files/symlink", `{"path":"l","target":"/etc"}`, ""},
		{"POST", "/v1/sandboxes/{id}/processes", `{"args":["cat"]}`, ""},
		{"GET", "/v1/sandboxes/{id}/processes/p1/output?since=-1", "", ""},
		{"POST", "/v1/sandboxes/{id}/processes/p1/stdin?close=true", "x", ""},
		{"POST", "/v1/sandboxes/{id}/processes/p1/signal", `{"signal":"NOPE"}`, ""},
		{"GET", "/v1/sandboxes/{id}/ports/80", "", "Upgrade: tcp"},
		{"POST", "/v1/sandboxes/{id}/listeners", `{"port":0}`, ""},
		{"POST", "/v1/sandboxes/{id}/fork", `{"ttlSeconds":99999999999}`, ""},
		{"DELETE", "/v1/sandboxes/{id}/files?path=", "", ""},
		{"GET", "/v1/../../etc/passwd", "", ""},
		{"BREW", "/v1/sandboxes", "{", "Authorization: Bearer x"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.body, s.header)
	}
	ta := newTestAPI(f, []string{"--adapter", "memory", "--timeout", "2s"}, func(o *apiOptions) {
		o.MaxRequestBytes, o.MaxFileBytes = 1<<16, 1<<16
	})
	id := ta.create("", api.CreateRequest{Adapter: "memory"}).ID
	f.Fuzz(func(t *testing.T, method, path, body, header string) {
		if !validMethod(method) || strings.ContainsAny(path, " \r\n\x00") || !strings.HasPrefix(path, "/") {
			return // not a request a client can send
		}
		target := "http://api" + strings.ReplaceAll(path, "{id}", id)
		if _, err := url.ParseRequestURI(target); err != nil {
			return // not a request a client can send
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
		if k, v, ok := strings.Cut(header, ":"); ok && validHeader(k) {
			req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		rec := httptest.NewRecorder()
		ta.a.ServeHTTP(rec, req)
		status := rec.Code
		if status == http.StatusSwitchingProtocols {
			return
		}
		if status >= 500 && status != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: %d %s", method, path, body, status, rec.Body.String())
		}
		if status >= 300 {
			var ref struct {
				OK    *bool `json:"ok"`
				Error *struct {
					Code    string         `json:"code"`
					Message string         `json:"message"`
					Details map[string]any `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &ref); err != nil || ref.OK == nil || *ref.OK || ref.Error == nil || ref.Error.Code == "" || ref.Error.Details == nil {
				t.Fatalf("%s %s: %d: not a refusal: %s", method, path, status, rec.Body.String())
			}
		}
		health := httptest.NewRecorder()
		ta.a.ServeHTTP(health, httptest.NewRequest("GET", "http://api/v1/health", nil))
		if health.Code != http.StatusOK {
			t.Fatalf("the server stopped serving after %s %s: %d", method, path, health.Code)
		}
	})
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func validHeader(k string) bool {
	k = strings.TrimSpace(k)
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
