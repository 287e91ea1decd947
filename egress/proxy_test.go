package egress_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
)

type target = egresstest.Target

func newTarget(t *testing.T, tlsOn bool, h http.Handler) *target {
	return egresstest.NewTarget(t, tlsOn, h)
}

func newTCPTarget(t *testing.T, serve func(net.Conn)) *egresstest.TCPTarget {
	return egresstest.NewTCPTarget(t, "127.0.0.1:0", serve)
}

func newTCPTargetAt(t *testing.T, addr string, serve func(net.Conn)) *egresstest.TCPTarget {
	return egresstest.NewTCPTarget(t, addr, serve)
}

var (
	echo         = egresstest.Echo
	names        = egresstest.Names
	loopbackOnly = egresstest.LoopbackOnly
)

// startProxy serves p on a loopback listener until the test ends, and returns its URL.
func startProxy(t *testing.T, cfg egress.Config) (*egress.Proxy, *url.URL) {
	t.Helper()
	p, err := egress.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, p.Close())
		require.NoError(t, <-served)
		require.NoError(t, p.Close()) // idempotent
	})
	return p, &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func client(proxy *url.URL, tg *target) *http.Client {
	tr := &http.Transport{Proxy: http.ProxyURL(proxy)}
	if tg != nil && tg.Certificate() != nil {
		pool := x509.NewCertPool()
		pool.AddCert(tg.Certificate())
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

func since(t *testing.T, p *egress.Proxy, m egress.Mark) []egress.Decision {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ds, dropped := p.Since(ctx, m, time.Minute)
	require.Zero(t, dropped)
	return ds
}

func TestPlainHTTPAllowedKeepAliveAndRecorded(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Host, r.URL.Path)
	}))
	p, pu := startProxy(t, egress.Config{AllowHosts: []string{"example.com"},
		Resolve: names(map[string]string{"example.com": "127.0.0.1"}), AllowAddrs: loopbackOnly})

	// Three requests on one connection to the proxy, written and read by hand.
	m := p.Mark()
	c, err := net.Dial("tcp", pu.Host)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 3 {
		_, err := fmt.Fprintf(c, "GET http://example.com:%d/p%d HTTP/1.1\r\nHost: example.com:%d\r\nProxy-Connection: keep-alive\r\n\r\n", tg.Port, i, tg.Port)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, fmt.Sprintf("hello example.com:%d /p%d", tg.Port, i), string(body))
	}
	assert.EqualValues(t, 1, tg.Conns(), "the proxy keeps its connection to the destination alive")
	ds := since(t, p, m)
	require.Len(t, ds, 3)
	for i, d := range ds {
		body := fmt.Sprintf("hello example.com:%d /p%d", tg.Port, i)
		assert.Equal(t, egress.Decision{Host: "example.com", Port: tg.Port, Allowed: true, BytesIn: int64(len(body))}, d)
	}
}

func TestStreamingBodiesBothWays(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, http.NewResponseController(w).EnableFullDuplex())
		io.Copy(w, r.Body) // echo, streamed
	}))
	p, pu := startProxy(t, egress.Config{AllowHosts: []string{"*.example.com"},
		Resolve: names(map[string]string{"up.example.com": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	const size = 8 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	m := p.Mark()
	resp, err := client(pu, nil).Post(fmt.Sprintf("http://up.example.com:%d/echo", tg.Port), "application/octet-stream", io.NopCloser(bytes.NewReader(payload)))
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, sha256.Sum256(payload), sha256.Sum256(got))
	ds := since(t, p, m)
	require.Len(t, ds, 1)
	assert.Equal(t, egress.Decision{Host: "up.example.com", Port: tg.Port, Allowed: true, BytesIn: size, BytesOut: size}, ds[0])
}

func TestConnectTunnelsTLS(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret page")
	}))
	// httptest's certificate is for example.com: map it to the loopback server.
	p, pu := startProxy(t, egress.Config{AllowHosts: []string{"example.com"},
		Resolve: names(map[string]string{"example.com": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	m := p.Mark()
	cl := client(pu, tg)
	for range 2 {
		resp, err := cl.Get(fmt.Sprintf("https://example.com:%d/", tg.Port))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, "secret page", string(body))
	}
	cl.CloseIdleConnections()
	ds := since(t, p, m)
	require.Len(t, ds, 1, "one tunnel carried both requests")
	assert.True(t, ds[0].Allowed)
	assert.Equal(t, "example.com", ds[0].Host)
	assert.Positive(t, ds[0].BytesIn)
	assert.Positive(t, ds[0].BytesOut)
	assert.EqualValues(t, 1, tg.Conns())
}

// TestRefusals: a host off the list, an IP literal, a name resolving to loopback or to the
// metadata address: 403 naming the host, nothing dialled.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	raw := newTCPTarget(t, echo)
	p, pu := startProxy(t, egress.Config{
		AllowHosts: []string{"loop.test", "meta.test", "ten.test", "mapped.test"},
		Resolve: names(map[string]string{
			"other.test": "127.0.0.1", "loop.test": "127.0.0.1", "meta.test": "169.254.169.254",
			"ten.test": "10.0.0.1", "mapped.test": "::ffff:127.0.0.1",
		}),
	})
	cases := []struct {
		host, want string
	}{
		{"other.test", "--allow-host other.test"},
		{"127.0.0.1", "IP address"},
		{"loop.test", "loopback"},
		{"meta.test", "169.254.169.254"},
		{"ten.test", "private"},
		{"mapped.test", "loopback"},
	}
	for _, c := range cases {
		for _, port := range []int{tg.Port, raw.Port} {
			m := p.Mark()
			// Plain HTTP.
			resp, err := client(pu, nil).Get(fmt.Sprintf("http://%s:%d/", c.host, port))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, c.host)
			assert.Contains(t, string(body), c.host)
			assert.Contains(t, string(body), c.want)
			assert.Contains(t, string(body), "allow-hosts")
			// CONNECT.
			status, body2 := connect(t, pu.Host, fmt.Sprintf("%s:%d", c.host, port))
			assert.Equal(t, http.StatusForbidden, status, c.host)
			assert.Contains(t, body2, c.want)
			ds := since(t, p, m)
			require.Len(t, ds, 2)
			for _, d := range ds {
				assert.Equal(t, c.host, d.Host)
				assert.Equal(t, port, d.Port)
				assert.False(t, d.Allowed)
				assert.NotEmpty(t, d.Reason)
				assert.Zero(t, d.BytesIn+d.BytesOut)
			}
		}
	}
	assert.Zero(t, tg.Conns(), "the HTTP target was never reached")
	assert.Zero(t, raw.Conns(), "the TCP target was never reached")
}

// connect sends CONNECT target on a new connection to proxy and returns the status and body.
func connect(t *testing.T, proxy, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	if resp.StatusCode == 200 {
		return 200, ""
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestDNSRebinding: the address checked is the address dialled, per request: a name that first
// resolves to an allowed address and then to the target's loopback address is refused the
// second time, and the target sees nothing.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	raw := newTCPTarget(t, echo)
	decoy := newTCPTargetAt(t, fmt.Sprintf("127.0.0.2:%d", raw.Port), echo)
	var calls atomic.Int64
	p, pu := startProxy(t, egress.Config{
		AllowHosts: []string{"rebind.test"},
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			if calls.Add(1) == 1 {
				return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
	})
	// The decoy listens on 127.0.0.2, the target on 127.0.0.1, both on the same port.
	m := p.Mark()
	status, _ := connect(t, pu.Host, fmt.Sprintf("rebind.test:%d", raw.Port))
	require.Equal(t, 200, status, "127.0.0.2 is allowed by the test option")
	status, body := connect(t, pu.Host, fmt.Sprintf("rebind.test:%d", raw.Port))
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, "127.0.0.1")
	ds := since(t, p, m)
	require.Len(t, ds, 2)
	assert.True(t, ds[0].Allowed)
	assert.False(t, ds[1].Allowed)
	assert.EqualValues(t, 1, decoy.Conns())
	assert.Zero(t, raw.Conns(), "the rebound name reached nothing")
}

// TestConcurrentTunnels: DefaultMaxConns (100) tunnels open at once, each carrying its own
// bytes.
func TestConcurrentTunnels(t *testing.T) {
	t.Parallel()
	raw := newTCPTarget(t, echo)
	p, pu := startProxy(t, egress.Config{AllowHosts: []string{"echo.test"},
		Resolve: names(map[string]string{"echo.test": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	m := p.Mark()
	const n = egress.DefaultMaxConns
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", pu.Host)
			if err != nil {
				errc <- err
				return
			}
			conns[i] = c
			fmt.Fprintf(c, "CONNECT echo.test:%d HTTP/1.1\r\nHost: echo.test\r\n\r\n", raw.Port)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				errc <- fmt.Errorf("tunnel %d: %v %v", i, resp, err)
				return
			}
			conns[i] = &bufConn{Conn: c, r: br}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	// Every tunnel is open at the same time now; each echoes its own message.
	for i, c := range conns {
		msg := fmt.Sprintf("tunnel %03d\n", i)
		_, err := io.WriteString(c, msg)
		require.NoError(t, err)
		got := make([]byte, len(msg))
		_, err = io.ReadFull(c, got)
		require.NoError(t, err)
		require.Equal(t, msg, string(got))
	}
	for _, c := range conns {
		c.Close()
	}
	ds := since(t, p, m)
	require.Len(t, ds, n)
	for _, d := range ds {
		assert.True(t, d.Allowed)
		assert.EqualValues(t, len("tunnel 000\n"), d.BytesIn)
		assert.EqualValues(t, len("tunnel 000\n"), d.BytesOut)
	}
	assert.EqualValues(t, n, raw.Conns())
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// TestMaxConnsQueues: with MaxConns 2, a third connection is served only once one of the first
// two ends.
func TestMaxConnsQueues(t *testing.T) {
	t.Parallel()
	raw := newTCPTarget(t, echo)
	_, pu := startProxy(t, egress.Config{AllowHosts: []string{"echo.test"}, MaxConns: 2,
		Resolve: names(map[string]string{"echo.test": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	var open []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", pu.Host)
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "CONNECT echo.test:%d HTTP/1.1\r\n\r\n", raw.Port)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		open = append(open, c)
	}
	third, err := net.Dial("tcp", pu.Host) // the kernel's backlog accepts it; the proxy does not yet
	require.NoError(t, err)
	defer third.Close()
	fmt.Fprintf(third, "CONNECT echo.test:%d HTTP/1.1\r\n\r\n", raw.Port)
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(third), &http.Request{Method: http.MethodConnect})
		if err != nil {
			answered <- -1
			return
		}
		answered <- resp.StatusCode
	}()
	select {
	case s := <-answered:
		t.Fatalf("a third connection was served while two held the only slots (status %d)", s)
	case <-time.After(300 * time.Millisecond):
	}
	open[0].Close()
	select {
	case s := <-answered:
		require.Equal(t, 200, s)
	case <-time.After(time.Minute):
		t.Fatal("the third connection was not served after a slot freed")
	}
}

// TestDownloadMemoryBounded: 100 MB through the proxy (plain HTTP and a CONNECT tunnel) allocate
// a small fraction of that: nothing is buffered whole.
func TestDownloadMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB download")
	}
	const size = 100 << 20
	tg := newTarget(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		io.CopyN(w, zeros{}, size)
	}))
	p, pu := startProxy(t, egress.Config{AllowHosts: []string{"big.test"},
		Resolve: names(map[string]string{"big.test": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	for _, via := range []string{"http", "connect"} {
		m := p.Mark()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var n int64
		var err error
		if via == "http" {
			var resp *http.Response
			resp, err = client(pu, nil).Get(fmt.Sprintf("http://big.test:%d/", tg.Port))
			require.NoError(t, err)
			n, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		} else {
			tr := &http.Transport{Proxy: http.ProxyURL(pu)}
			// An http:// URL through CONNECT: a tunnel the client asks for explicitly.
			c, derr := net.Dial("tcp", pu.Host)
			require.NoError(t, derr)
			fmt.Fprintf(c, "CONNECT big.test:%d HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: big.test\r\nConnection: close\r\n\r\n", tg.Port)
			br := bufio.NewReader(c)
			resp, rerr := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			require.NoError(t, rerr)
			require.Equal(t, 200, resp.StatusCode)
			resp, rerr = http.ReadResponse(br, nil)
			require.NoError(t, rerr)
			n, err = io.Copy(io.Discard, resp.Body)
			c.Close()
			tr.CloseIdleConnections()
		}
		require.NoError(t, err)
		require.EqualValues(t, size, n)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		assert.Less(t, alloc, uint64(16<<20), "%s: %d bytes allocated for a 100 MB download", via, alloc)
		ds := since(t, p, m)
		require.Len(t, ds, 1)
		assert.GreaterOrEqual(t, ds[0].BytesIn, int64(size), via)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestCloseEndsEverything: Close ends open tunnels and the listener; Serve returns.
func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	raw := newTCPTarget(t, echo)
	p, err := egress.New(egress.Config{AllowHosts: []string{"echo.test"},
		Resolve: names(map[string]string{"echo.test": "127.0.0.1"}), AllowAddrs: loopbackOnly})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT echo.test:%d HTTP/1.1\r\n\r\n", raw.Port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	var wg sync.WaitGroup
	for range 2 { // Close from two goroutines at once
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, p.Close()) }()
	}
	wg.Wait()
	require.NoError(t, <-served)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the tunnel ended with the proxy")
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "the listener is closed")
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.Error(t, p.Serve(ln2), "a closed proxy serves nothing")
	_, err = ln2.Accept()
	require.True(t, errors.Is(err, net.ErrClosed))
}

func TestNotAProxyRequest(t *testing.T) {
	t.Parallel()
	_, pu := startProxy(t, egress.Config{AllowHosts: []string{"a.test"}})
	resp, err := http.Get(pu.String() + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	status, _ := connect(t, pu.Host, "a.test:0")
	assert.Equal(t, http.StatusBadRequest, status)
	status, _ = connect(t, pu.Host, "a.test")
	assert.Equal(t, http.StatusBadRequest, status)
}

func TestEnv(t *testing.T) {
	t.Parallel()
	env := egress.Env()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		assert.Contains(t, env, k+"=http://127.0.0.1:3128")
	}
	assert.Contains(t, env, "NO_PROXY=localhost,127.0.0.1,::1")
	assert.Contains(t, env, "no_proxy=localhost,127.0.0.1,::1")
}

func listenLoopback(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	return ln
}

func splitPort(addr string) (string, string, error) { return net.SplitHostPort(addr) }

// A listener that its sandbox closed first (its stream ended), while the proxy still serves it,
// does not make Close fail.
func TestCloseAfterListenerEnded(t *testing.T) {
	for range 50 {
		p, err := egress.New(egress.Config{AllowHosts: []string{"example.test"}})
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() { served <- p.Serve(ln) }()
		require.Eventually(t, func() bool {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err == nil {
				c.Close()
			}
			return err == nil
		}, 10*time.Second, time.Millisecond)
		ln.Close()
		require.NoError(t, p.Close())
		require.NoError(t, p.Close(), "idempotent")
		<-served
	}
}

// TestFailedUpstreamIsNeverOK: a name lookup that fails, also with "operation was canceled" or a
// timeout while the client still waits, is answered 502 (504 for the timeout), on plain HTTP and
// on CONNECT: never a 200 with an empty body.
func TestFailedUpstreamIsNeverOK(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{&net.DNSError{Err: "no such host", Name: "up.example.com", IsNotFound: true}, http.StatusBadGateway},
		{fmt.Errorf("lookup up.example.com: %w", context.Canceled), http.StatusBadGateway},
		{fmt.Errorf("lookup up.example.com: %w", context.DeadlineExceeded), http.StatusGatewayTimeout},
	} {
		_, proxy := startProxy(t, egress.Config{AllowHosts: []string{"up.example.com"},
			Resolve: func(context.Context, string) ([]netip.Addr, error) { return nil, c.err }})
		resp, err := client(proxy, nil).Get("http://up.example.com/")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, c.want, resp.StatusCode, "plain HTTP, %v", c.err)
		assert.Contains(t, string(body), "sandboxer egress proxy", "plain HTTP, %v", c.err)
		code, _ := connect(t, proxy.Host, "up.example.com:443")
		assert.Equal(t, c.want, code, "CONNECT, %v", c.err)
	}
}
