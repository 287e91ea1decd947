package egress_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/egress"
)

// Issue 37's figures, with their baseline in the same run: HTTPS through the proxy that
// terminates TLS (a host with a secret) against the same request straight to the server and
// through a blind CONNECT tunnel, for a 100 MB download (MB/s) and a small request (time to first
// byte and a tiny body), all over kept-alive connections.
//
//	go test -run '^$' -bench 'HTTPS' -benchtime 20x ./egress/

func BenchmarkHTTPSDownload100MB(b *testing.B) {
	const size = 100 << 20
	compareTLS(b, size, size, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		io.CopyN(w, zeros{}, size)
	}))
}

func BenchmarkHTTPSSmallRequest(b *testing.B) {
	compareTLS(b, 2, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
}

func compareTLS(b *testing.B, size, setBytes int64, h http.Handler) {
	srv := httptest.NewUnstartedServer(h)
	srv.StartTLS() // httptest's certificate, for example.com
	b.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	serverCA := x509.NewCertPool()
	serverCA.AddCert(srv.Certificate())
	resolve := names(map[string]string{"example.com": "127.0.0.1"})

	proxy := func(cfg egress.Config) (*egress.Proxy, *http.Transport) {
		cfg.Resolve, cfg.AllowAddrs, cfg.UpstreamRoots = resolve, loopbackOnly, serverCA
		p, err := egress.New(cfg)
		require.NoError(b, err)
		pu := serveBench(b, p)
		return p, &http.Transport{Proxy: http.ProxyURL(pu)}
	}
	direct := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}, TLSClientConfig: &tls.Config{RootCAs: serverCA}}
	_, tunnel := proxy(egress.Config{AllowHosts: []string{"example.com"}})
	tunnel.TLSClientConfig = &tls.Config{RootCAs: serverCA}
	p, terminated := proxy(egress.Config{AllowHosts: []string{"example.com"},
		Secrets: []egress.Secret{{Name: "API_KEY", Value: "bench-secret"}},
		Inject:  []egress.Injection{{Host: "example.com", Header: "Authorization", Template: "Bearer {{API_KEY}}"}}})
	proxyCA := x509.NewCertPool()
	require.True(b, proxyCA.AppendCertsFromPEM(p.CACert()))
	terminated.TLSClientConfig = &tls.Config{RootCAs: proxyCA}

	u := fmt.Sprintf("https://example.com:%d/", port)
	for _, c := range []struct {
		name string
		tr   *http.Transport
	}{{"direct", direct}, {"tunnel", tunnel}, {"terminated", terminated}} {
		b.Run(c.name, func(b *testing.B) {
			cl := &http.Client{Transport: c.tr}
			defer cl.CloseIdleConnections()
			get(b, cl, u, size) // warm the kept-alive connections
			if setBytes > 0 {
				b.SetBytes(setBytes)
			}
			for b.Loop() {
				get(b, cl, u, size)
			}
		})
	}
}
