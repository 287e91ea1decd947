// Package egresstest checks, from inside a sandbox, that an adapter enforces an allowlist
// through the egress proxy (issue 16), with real servers on the host's loopback and real
// clients in the sandbox; and holds the small servers and resolver the egress tests share.
package egresstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Target is a real HTTP(S) server on loopback that counts the connections it accepts.
type Target struct {
	*httptest.Server
	conns atomic.Int64
	Port  int
}

// Conns is the number of connections accepted so far.
func (t *Target) Conns() int64 { return t.conns.Load() }

// NewTarget starts h on 127.0.0.1 (with TLS: httptest's certificate, for example.com) until the
// test ends.
func NewTarget(t testing.TB, tlsOn bool, h http.Handler) *Target {
	t.Helper()
	tg := &Target{}
	tg.Server = httptest.NewUnstartedServer(h)
	tg.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			tg.conns.Add(1)
		}
	}
	if tlsOn {
		tg.StartTLS()
	} else {
		tg.Start()
	}
	t.Cleanup(tg.Close)
	tg.Port = tg.Listener.Addr().(*net.TCPAddr).Port
	return tg
}

// NewTargetFor starts h on 127.0.0.1 over TLS with a certificate of its own for host
// (self-signed: Certificate is what a client or the proxy's upstream trust store must trust).
func NewTargetFor(t testing.TB, host string, h http.Handler) *Target {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	tg := &Target{}
	tg.Server = httptest.NewUnstartedServer(h)
	tg.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			tg.conns.Add(1)
		}
	}
	tg.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	tg.StartTLS()
	t.Cleanup(tg.Close)
	tg.Port = tg.Listener.Addr().(*net.TCPAddr).Port
	return tg
}

// TCPTarget is a raw TCP server that counts the connections it accepts.
type TCPTarget struct {
	conns atomic.Int64
	Port  int
}

// Conns is the number of connections accepted so far.
func (t *TCPTarget) Conns() int64 { return t.conns.Load() }

// NewTCPTarget listens on addr ("127.0.0.1:0") and runs serve for each connection until the test
// ends.
func NewTCPTarget(t testing.TB, addr string, serve func(net.Conn)) *TCPTarget {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	tt := &TCPTarget{Port: ln.Addr().(*net.TCPAddr).Port}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tt.conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return tt
}

// Echo copies a connection back to itself.
func Echo(c net.Conn) { io.Copy(c, c) }

// Names is a resolver for egress.Config.Resolve that maps test names (any case) to addresses.
func Names(m map[string]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		a, ok := m[strings.TrimSuffix(strings.ToLower(host), ".")]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
}

// LoopbackOnly lets the proxy dial 127.0.0.1, where the test servers listen.
var LoopbackOnly = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
