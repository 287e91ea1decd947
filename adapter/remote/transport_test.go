package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/servetest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns their paths and a pool
// that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandboxer test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile, pool
}

// TestTLSWithTokens: a server with TLS and tokens; the remote adapter runs a command, reaches a
// port and moves a file over it, and a wrong token or an untrusted certificate gets nothing.
func TestTLSWithTokens(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tok := servetest.Token(t, tokens, "ci")
	srv := servetest.Start(t, "--adapter", "local", "--tokens", tokens, "--tls-cert", certFile, "--tls-key", keyFile)
	require.True(t, strings.HasPrefix(srv.URL, "https://"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sb, err := remote.New(ctx, remote.Config{URL: srv.URL, Token: tok, TLS: &tls.Config{RootCAs: pool}})
	require.NoError(t, err)
	defer sb.Stop(ctx)
	assert.Equal(t, "ci", sb.Info().Owner)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "echo over tls"}})
	require.NoError(t, err)
	assert.Equal(t, "over tls\n", string(res.Stdout))
	require.NoError(t, sb.WriteFile(ctx, "f.bin", []byte{0, 1, 2, 255}))
	data, err := sb.ReadFile(ctx, "f.bin")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2, 255}, data)

	// A port through the upgrade, over TLS.
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"busybox", "nc", "-l", "-p", "7001", "-e", "echo", "pong"}})
	require.NoError(t, err)
	defer p.Signal(ctx, "KILL")
	var conn net.Conn
	require.Eventually(t, func() bool {
		conn, err = sb.DialPort(ctx, 7001)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	buf := make([]byte, 5)
	_, err = io.ReadFull(conn, buf)
	conn.Close()
	require.NoError(t, err)
	assert.Equal(t, "pong\n", string(buf))

	_, err = remote.New(ctx, remote.Config{URL: srv.URL, Token: "sbx_wrong", TLS: &tls.Config{RootCAs: pool}})
	assert.ErrorIs(t, err, errs.Code("UNAUTHORIZED"))
	_, err = remote.New(ctx, remote.Config{URL: srv.URL, Token: tok}) // the system's roots: not trusted
	assert.ErrorContains(t, err, "certificate")
}

// TestUnixSocket: the API on a unix socket (mode 0600), used by the remote adapter.
func TestUnixSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "sbx-sock-") // a socket's path is at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "api.sock")
	srv := servetest.Start(t, "--adapter", "local", "--listen", "unix:"+sock)
	assert.Equal(t, "unix:"+sock, srv.URL)
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
	require.NoError(t, err)
	defer sb.Stop(ctx)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"echo", "over a socket"}})
	require.NoError(t, err)
	assert.Equal(t, "over a socket\n", string(res.Stdout))
}
