package egress

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/sandboxer/sandboxer/errs"
)

// policy is what the proxy lets through, swapped whole by SetPolicy: the allowlist (with its
// rules) and the secrets with their bindings.
type policy struct {
	allow *Allowlist
	sec   *secrets
}

func newPolicy(allowHosts []string, list []Secret, inject []Injection) (*policy, error) {
	if len(allowHosts) == 0 {
		return nil, errs.New(errs.InvalidInput, "egress", "", "allow-hosts is empty: an egress proxy needs at least one host")
	}
	allow, err := ParseAllowlist(allowHosts)
	if err != nil {
		return nil, err
	}
	sec, err := parseSecrets(list, inject, allow)
	if err != nil {
		return nil, err
	}
	return &policy{allow: allow, sec: sec}, nil
}

func (p *Proxy) policy() *policy { return p.pol.Load() }

// terminates reports whether the proxy terminates TLS for host (normalised): its requests are
// checked against rules or carry secrets.
func (pol *policy) terminates(host string) bool {
	return pol.allow.HasRules(host) || pol.sec.binds(host)
}

// normalHost is host as the allowlist compares it.
func normalHost(host string) string {
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// SetPolicy changes, at run time, the hosts the proxy lets through, their rules and the secrets,
// as New validates them (an invalid set changes nothing). It applies to every request from now
// on: a tunnel to a host no longer allowed is closed, a plain HTTP request to one is cancelled,
// and a blind tunnel to a host whose TLS the proxy now terminates is closed too (its client
// reconnects, through the new policy). No hosts (and no secrets) is a policy that allows nothing.
func (p *Proxy) SetPolicy(allowHosts []string, list []Secret, inject []Injection) error {
	pol := &policy{allow: &Allowlist{}}
	if len(allowHosts)+len(list)+len(inject) > 0 {
		var err error
		if pol, err = newPolicy(allowHosts, list, inject); err != nil {
			return err
		}
	}
	p.pol.Store(pol)
	p.mu.Lock()
	var stale []net.Conn
	for c, t := range p.tunnels {
		if !pol.allow.Allows(t.host) || !t.intercepted && pol.terminates(t.host) {
			stale = append(stale, c)
		}
	}
	var cancel []context.CancelFunc
	for f := range p.inflight {
		if !pol.allow.Allows(f.host) {
			cancel = append(cancel, f.cancel)
		}
	}
	p.mu.Unlock()
	for _, c := range stale {
		c.Close()
	}
	for _, c := range cancel {
		c()
	}
	return nil
}

// intercept serves a CONNECT to a host whose TLS the proxy terminates: it answers the CONNECT,
// completes the client's handshake with a certificate of its authority for host, and serves the
// HTTP/1.1 requests that come on the connection, each checked against the rules in force and
// given its secrets, then sent on to host over TLS verified against the host's trust store
// (Config.UpstreamRoots). A refused request is answered 403 and recorded as a decision of its
// own; the bytes of those that pass count to the tunnel's decision e.
func (p *Proxy) intercept(w http.ResponseWriter, host string, port int, e *entry) {
	name := normalHost(host)
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "sandboxer egress proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	if !p.track(tunnelInfo{host: name, intercepted: true}, client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var conn net.Conn = client
	if n := brw.Reader.Buffered(); n > 0 {
		conn = &prefixConn{Conn: client, r: io.MultiReader(io.LimitReader(brw.Reader, int64(n)), client)}
	}
	tc := tls.Server(conn, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.ca.leaf(name) // the CONNECT's host, whatever name the client says it wants
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), headerTimeout)
	err = tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		e.fail("TLS handshake with the sandbox's client: " + err.Error() + " (does it trust the proxy's CA?)")
		return
	}
	authority := name
	if port != 443 {
		authority = net.JoinHostPort(name, strconv.Itoa(port))
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.serveIntercepted(w, r, name, port, authority, e)
		}),
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	l := &oneConnListener{conn: tc, done: make(chan struct{})}
	srv.Serve(l)
	<-l.done
}

// serveIntercepted is one request on an intercepted connection.
func (p *Proxy) serveIntercepted(w http.ResponseWriter, r *http.Request, host string, port int, authority string, e *entry) {
	pol := p.policy()
	if !pol.allow.Allows(host) { // narrowed since the CONNECT
		p.rec.add(host, port, false, "not in the allowlist")
		refuse(w, notAllowedText(host))
		return
	}
	if !p.passesRules(w, r, pol, host, port) {
		return
	}
	r.URL.Scheme, r.URL.Host, r.Host = "https", authority, authority
	pol.sec.apply(host, r.Header)
	p.roundTrip(w, r, e)
}

// passesRules checks r against the rules of pol for host, an allowed host; a request outside
// them is answered 403 naming the rules and recorded as a refused decision of its own.
func (p *Proxy) passesRules(w http.ResponseWriter, r *http.Request, pol *policy, host string, port int) bool {
	ok, why := pol.allow.Check(host, r.Method, r.URL.Path)
	if !ok {
		p.rec.add(host, port, false, why)
		refuse(w, "sandboxer egress proxy: "+why+"\n")
	}
	return ok
}

// prefixConn is a connection whose first bytes were already read into a buffer.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConnListener hands out one connection, then waits until it is closed: http.Server serving
// a single connection.
type oneConnListener struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = &notifyConn{Conn: l.conn, done: l.done} })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

type notifyConn struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}

// redactHeader replaces secret values in h by their placeholders.
func (s *secrets) redactHeader(h http.Header) {
	if s == nil {
		return
	}
	for _, vs := range h {
		for i, v := range vs {
			vs[i] = s.redact(v)
		}
	}
}
