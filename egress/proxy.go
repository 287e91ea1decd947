// Package egress owns the egress allowlist proxy (issue 16): the HTTP proxy that runs in the
// sandboxer process and is a sandbox's only way out when it is given an allowlist.
//
// Inside the sandbox the network stays cut as when it is off; a listener on the sandbox's own
// loopback (127.0.0.1:Port, from adapter.PortListener) hands each connection a command opens to
// a Proxy here, and every command is told about it through Env (HTTP_PROXY and friends).
// Nothing inside the sandbox resolves names or decides anything.
//
// The proxy serves `CONNECT host:port` (HTTPS and any other TLS, tunnelled as bytes) and
// absolute-URI HTTP requests (keep-alive, several requests per connection, bodies streamed both
// ways). For each it checks the host against the Allowlist before anything is dialled, resolves
// the name itself, and refuses a destination address that is loopback, private, link-local (cloud
// metadata 169.254.169.254), unspecified or multicast, on the address it actually dials (so a
// name that rebinds to such an address is refused too). A refusal is a 403 whose body names the
// host and the setting to change. Every decision is recorded (Mark, Since) for the tool layer's
// `network` result.
package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/errs"
)

// Config configures a Proxy. AllowHosts is required; the rest has working zero values.
type Config struct {
	// AllowHosts are the host patterns a command may reach (see ParseAllowlist).
	AllowHosts []string
	// Resolve resolves a host name to its addresses; nil means the system resolver
	// (net.DefaultResolver.LookupNetIP). Tests map names to loopback servers with it.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error) `json:"-"`
	// AllowAddrs are destination prefixes dialled although they are loopback, private or
	// link-local: for tests, whose servers listen on loopback. Never set it in production: it
	// opens the host's own services to the sandbox.
	AllowAddrs []netip.Prefix
	// MaxConns bounds the connections served at once (default DefaultMaxConns); further
	// connections wait until one ends.
	MaxConns int
	// DialTimeout bounds one dial of a destination (default DefaultDialTimeout).
	DialTimeout time.Duration
	// Secrets are credentials the proxy writes into requests to the hosts Inject binds them to
	// (see Secret, Injection); the sandbox holds only their placeholders.
	Secrets []Secret `json:"-"`
	Inject  []Injection
	// UpstreamRoots verifies the destinations of the requests whose TLS the proxy terminates;
	// nil is the host's trust store. Tests point it at their own CA.
	UpstreamRoots *x509.CertPool `json:"-"`
}

// Defaults of Config.
const (
	DefaultMaxConns    = 100
	DefaultDialTimeout = 30 * time.Second
	// headerTimeout bounds reading a request's header, so idle connections cannot hold the
	// MaxConns slots forever.
	headerTimeout = time.Minute
	idleTimeout   = 2 * time.Minute
	// maxHeaderBytes bounds a request's header (the request line included).
	maxHeaderBytes = 64 << 10
)

// Proxy is one sandbox's egress proxy. It is safe for concurrent use; Close ends it (and every
// connection and tunnel it serves) and is idempotent.
type Proxy struct {
	pol         atomic.Pointer[policy]
	ca          *authority
	resolve     func(ctx context.Context, host string) ([]netip.Addr, error)
	allowAddrs  []netip.Prefix
	dialTimeout time.Duration
	slots       chan struct{}
	srv         *http.Server
	rp          *httputil.ReverseProxy
	transport   *http.Transport
	rec         record

	mu        sync.Mutex
	closed    bool
	tunnels   map[net.Conn]tunnelInfo
	inflight  map[*inflight]struct{} // plain HTTP requests under way
	trustPath string                 // the authority's bundle in the sandbox (Ensure), "" before
	listeners map[net.Listener]struct{}
	attachMu  sync.Mutex // serialises Ensure
	attached  bool       // Ensure has attached a listener
	done      chan struct{}
}

// New validates cfg and returns a proxy that serves nothing yet (Serve, Attach or Ensure).
// Errors: errs.InvalidInput for an empty or invalid allowlist or a negative limit.
func New(cfg Config) (*Proxy, error) {
	pol, err := newPolicy(cfg.AllowHosts, cfg.Secrets, cfg.Inject)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConns < 0 || cfg.DialTimeout < 0 {
		return nil, errs.New(errs.InvalidInput, "egress", "", "MaxConns and DialTimeout must not be negative")
	}
	ca, err := newAuthority()
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "egress", "", err)
	}
	p := &Proxy{
		ca:          ca,
		resolve:     cfg.Resolve,
		allowAddrs:  append([]netip.Prefix(nil), cfg.AllowAddrs...),
		dialTimeout: cfg.DialTimeout,
		tunnels:     map[net.Conn]tunnelInfo{},
		inflight:    map[*inflight]struct{}{},
		listeners:   map[net.Listener]struct{}{},
		done:        make(chan struct{}),
	}
	if p.resolve == nil {
		p.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if p.dialTimeout == 0 {
		p.dialTimeout = DefaultDialTimeout
	}
	n := cfg.MaxConns
	if n == 0 {
		n = DefaultMaxConns
	}
	p.pol.Store(pol)
	p.slots = make(chan struct{}, n)
	p.transport = &http.Transport{
		Proxy:                 nil, // never the sandboxer process's own proxy settings
		DialContext:           p.dialContext,
		ForceAttemptHTTP2:     false,
		MaxIdleConns:          n,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   30 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true, // pass the body through as the destination sent it
		TLSClientConfig:       &tls.Config{RootCAs: cfg.UpstreamRoots, MinVersion: tls.VersionTLS12},
		ReadBufferSize:        64 << 10,
		WriteBufferSize:       64 << 10,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = pr.In.URL.Scheme, pr.In.URL.Host
			pr.Out.Host = pr.In.Host
		},
		Transport:     p.transport,
		FlushInterval: -1,
		BufferPool:    copyPool{},
		ErrorLog:      log.New(io.Discard, "", 0),
		ModifyResponse: func(resp *http.Response) error {
			if e, ok := resp.Request.Context().Value(entryKey{}).(*entry); ok && resp.Body != nil {
				resp.Body = &countingBody{ReadCloser: resp.Body, n: &e.bytesIn}
			}
			p.policy().sec.redactHeader(resp.Header) // a destination echoing a secret back
			return nil
		},
		ErrorHandler: p.httpError,
	}
	p.srv = &http.Server{
		Handler:           p,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return p, nil
}

// Allowlist returns the proxy's validated allowlist (the one in force now).
func (p *Proxy) Allowlist() *Allowlist { return p.policy().allow }

// CACert is the proxy's certificate authority (PEM): what the sandbox must trust for the hosts
// whose TLS the proxy terminates (those with secrets or rules). Its key never leaves the proxy.
func (p *Proxy) CACert() []byte { return p.ca.pem }

// Serve serves the connections accepted on ln until Close (then it returns nil) or until ln
// fails. ln is typically adapter.PortListener.ListenPort's listener; Close closes it. Serve may be
// called for several listeners.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return errs.New(errs.SandboxUnavailable, "egress", "", "the egress proxy is closed")
	}
	p.listeners[ln] = struct{}{}
	p.mu.Unlock()
	err := p.srv.Serve(&limitListener{Listener: ln, p: p})
	if errors.Is(err, http.ErrServerClosed) || p.isClosed() {
		return nil
	}
	return err
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close stops serving: the listeners, every connection and tunnel are closed. Idempotent; a nil
// proxy closes nothing.
func (p *Proxy) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	tunnels := p.tunnels
	p.tunnels = nil
	lns := p.listeners
	p.listeners = nil
	p.mu.Unlock()
	err := p.srv.Close()
	for ln := range lns {
		ln.Close()
	}
	for c := range tunnels {
		c.Close()
	}
	p.transport.CloseIdleConnections()
	if errors.Is(err, net.ErrClosed) {
		err = nil // a listener the sandbox had already ended (its stream closed first)
	}
	return err
}

// ServeHTTP is the proxy's handler: CONNECT and absolute-URI requests.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "sandboxer egress proxy: send requests through it as a proxy (absolute URI or CONNECT), not to it\n", http.StatusBadRequest)
		return
	}
	scheme := strings.ToLower(r.URL.Scheme)
	if scheme != "http" && scheme != "https" {
		http.Error(w, fmt.Sprintf("sandboxer egress proxy: scheme %q is not proxied (http, https and CONNECT are)\n", r.URL.Scheme), http.StatusBadRequest)
		return
	}
	host := r.URL.Hostname()
	port := 80
	if scheme == "https" {
		port = 443
	}
	if ps := r.URL.Port(); ps != "" {
		var ok bool
		if port, ok = parsePort(ps); !ok {
			http.Error(w, fmt.Sprintf("sandboxer egress proxy: bad port %q\n", ps), http.StatusBadRequest)
			return
		}
	}
	pol := p.policy()
	if pol.allow.Allows(host) && !p.passesRules(w, r, pol, host, port) {
		return
	}
	e, ok := p.decide(w, host, port)
	if !ok {
		return
	}
	defer e.finish()
	if scheme == "https" { // the upstream leg is TLS: secrets may go; never over plain HTTP
		pol.sec.apply(normalHost(host), r.Header)
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	f := &inflight{host: normalHost(host), cancel: cancel}
	if !p.trackRequest(f) {
		return
	}
	defer p.untrackRequest(f)
	p.roundTrip(w, r.WithContext(ctx), e)
}

// roundTrip sends r on to its destination and streams the answer back, counting the bytes into e.
func (p *Proxy) roundTrip(w http.ResponseWriter, r *http.Request, e *entry) {
	// Stream both ways: a response may start before the request body has ended.
	_ = http.NewResponseController(w).EnableFullDuplex()
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &e.bytesOut}
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), entryKey{}, e)))
}

type entryKey struct{}

// decide checks host against the allowlist and records the decision; a refusal is answered
// with 403 here.
func (p *Proxy) decide(w http.ResponseWriter, host string, port int) (*entry, bool) {
	if !p.policy().allow.Allows(host) {
		p.rec.add(host, port, false, "not in the allowlist")
		refuse(w, notAllowedText(host))
		return nil, false
	}
	return p.rec.add(host, port, true, ""), true
}

func notAllowedText(host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(h); err == nil {
		return fmt.Sprintf("sandboxer egress proxy: %s is an IP address; the allowlist (setting allow-hosts) only names hosts, so an address is never reached directly. Use the host's name, and add it with --allow-host NAME (or SANDBOXER_ALLOW_HOSTS).\n", host)
	}
	return fmt.Sprintf("sandboxer egress proxy: host %s is not in the allowlist (setting allow-hosts). To allow it, add --allow-host %s (or add it to SANDBOXER_ALLOW_HOSTS, comma-separated; AllowHosts in the Go Config).\n", host, h)
}

func refuse(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Sandboxer-Egress", "refused")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, text)
}

// httpError answers a failed plain-HTTP round trip: 403 for a refused address, 504 for a
// timeout, 502 for every other failure. Never nothing: an unanswered handler would be a 200 with
// an empty body (a name lookup that ended "operation was canceled" once was), and a client gone
// away just does not read the answer.
func (p *Proxy) httpError(w http.ResponseWriter, r *http.Request, err error) {
	e, _ := r.Context().Value(entryKey{}).(*entry)
	var re *refusedAddr
	if errors.As(err, &re) {
		if e != nil {
			e.refuse(re.reason())
		}
		refuse(w, re.text())
		return
	}
	msg := p.policy().sec.redact(err.Error())
	if e != nil {
		e.fail(msg)
	}
	http.Error(w, fmt.Sprintf("sandboxer egress proxy: %s: %s\n", r.URL.Host, msg), failedStatus(err))
}

// failedStatus is the status of an upstream that could not be reached: 504 when it timed out,
// else 502.
func failedStatus(err error) int {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// connect serves CONNECT host:port: check, dial, then tunnel bytes both ways.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, ps, err := net.SplitHostPort(r.RequestURI)
	port, okPort := parsePort(ps)
	if err != nil || host == "" || !okPort {
		http.Error(w, fmt.Sprintf("sandboxer egress proxy: CONNECT wants host:port, got %q\n", r.RequestURI), http.StatusBadRequest)
		return
	}
	e, ok := p.decide(w, host, port)
	if !ok {
		return
	}
	defer e.finish()
	if p.policy().terminates(normalHost(host)) {
		p.intercept(w, host, port, e)
		return
	}
	up, err := p.dial(r.Context(), host, port)
	if err != nil {
		var re *refusedAddr
		if errors.As(err, &re) {
			e.refuse(re.reason())
			refuse(w, re.text())
			return
		}
		e.fail(err.Error())
		http.Error(w, fmt.Sprintf("sandboxer egress proxy: %s: %v\n", r.RequestURI, err), failedStatus(err))
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "sandboxer egress proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(tunnelInfo{host: normalHost(host)}, client, up) {
		client.Close()
		up.Close()
		return
	}
	defer p.untrack(client, up)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after the CONNECT header are buffered in brw.
	var in io.Reader = client
	if n := brw.Reader.Buffered(); n > 0 {
		in = io.MultiReader(io.LimitReader(brw.Reader, int64(n)), client)
	}
	tunnel(client, up, in, &e.bytesOut, &e.bytesIn)
}

// tunnel copies both ways until both directions end; a direction that ends half-closes the other
// side's write so request/response protocols finish cleanly.
func tunnel(client, up net.Conn, clientIn io.Reader, out, in interface{ Add(int64) int64 }) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		copyCount(up, clientIn, out)
		closeWrite(up)
	}()
	copyCount(client, up, in)
	closeWrite(client)
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	c.Close()
}

const copyBuf = 32 << 10

func copyCount(dst io.Writer, src io.Reader, n interface{ Add(int64) int64 }) {
	buf := make([]byte, copyBuf)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			n.Add(int64(k))
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// tunnelInfo is what SetPolicy needs to know of an open tunnel.
type tunnelInfo struct {
	host        string // normalised
	intercepted bool   // its TLS is terminated here (requests checked one by one)
}

func (p *Proxy) track(t tunnelInfo, cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = t
	}
	return true
}

// inflight is a plain HTTP request under way.
type inflight struct {
	host   string
	cancel context.CancelFunc
}

func (p *Proxy) trackRequest(f *inflight) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight[f] = struct{}{}
	return true
}

func (p *Proxy) untrackRequest(f *inflight) {
	p.mu.Lock()
	delete(p.inflight, f)
	p.mu.Unlock()
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.tunnels, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func parsePort(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// copyPool hands the reverse proxy 256 KiB copy buffers (its own are 32 KiB): fewer writes and
// flushes per response, each a TLS record or more where the proxy terminates TLS.
type copyPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func (copyPool) Get() []byte  { return *copyBuffers.Get().(*[]byte) }
func (copyPool) Put(b []byte) { copyBuffers.Put(&b) }

// countingBody counts the bytes read through it.
type countingBody struct {
	io.ReadCloser
	n interface{ Add(int64) int64 }
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// limitListener accepts at most cap(p.slots) connections at once; a connection frees its slot
// when it is closed.
type limitListener struct {
	net.Listener
	p *Proxy
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.p.slots <- struct{}{}:
	case <-l.p.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.p.slots
		return nil, err
	}
	return &slotConn{Conn: c, slots: l.p.slots}, nil
}

type slotConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

func (c *slotConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
