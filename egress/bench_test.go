package egress_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/egress"
)

// The figures, each with its baseline in the same run: a 100 MB download through the
// proxy against the same download straight over loopback (b.SetBytes gives MB/s), and a small
// request's round trip (time to first byte and the rest of a tiny body) through the proxy
// against direct, both over kept-alive connections.
//
//	go test -run '^$' -bench . -benchtime 20x ./egress/

func benchSetup(b *testing.B, h http.Handler) (direct, proxied *http.Client, port string) {
	b.Helper()
	srv := newBenchTarget(b, h)
	p, err := egress.New(egress.Config{AllowHosts: []string{"bench.example.com"},
		Resolve: names(map[string]string{"bench.example.com": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	require.NoError(b, err)
	pu := serveBench(b, p)
	direct = &http.Client{Transport: &http.Transport{Proxy: nil}}
	proxied = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	b.Cleanup(direct.CloseIdleConnections)
	b.Cleanup(proxied.CloseIdleConnections)
	return direct, proxied, srv
}

func get(b *testing.B, c *http.Client, u string, want int64) {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != want {
		b.Fatalf("%d bytes, %v", n, err)
	}
}

func BenchmarkDownload100MB(b *testing.B) {
	const size = 100 << 20
	compare(b, size, size, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		io.CopyN(w, zeros{}, size)
	}))
}

func BenchmarkSmallRequest(b *testing.B) {
	compare(b, 2, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
}

// compare runs the same GET straight to h and through the proxy, as sub-benchmarks of one run;
// each gets a body of size bytes. setBytes > 0 reports throughput.
func compare(b *testing.B, size, setBytes int64, h http.Handler) {
	direct, proxied, port := benchSetup(b, h)
	for _, c := range []struct {
		name string
		cl   *http.Client
		host string
	}{{"direct", direct, "127.0.0.1"}, {"proxy", proxied, "bench.example.com"}} {
		b.Run(c.name, func(b *testing.B) {
			u := fmt.Sprintf("http://%s:%s/", c.host, port)
			get(b, c.cl, u, size) // warm the kept-alive connections
			if setBytes > 0 {
				b.SetBytes(setBytes)
			}
			for b.Loop() {
				get(b, c.cl, u, size)
			}
		})
	}
}

func newBenchTarget(b *testing.B, h http.Handler) string {
	b.Helper()
	ln := listenLoopback(b)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	_, port, _ := splitPort(ln.Addr().String())
	return port
}

func serveBench(b *testing.B, p *egress.Proxy) *url.URL {
	b.Helper()
	ln := listenLoopback(b)
	done := make(chan struct{})
	go func() { p.Serve(ln); close(done) }()
	b.Cleanup(func() { p.Close(); <-done })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}
