package sdk_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The Python SDK's tests (sdk/python/tests, pytest) run against a real `sandboxerd serve`: the
// local adapter always, docker where the daemon answers, a unix socket, TLS, and a server with
// tokens. The runs are parallel: most of their time is spent waiting for sandboxes.
// They need Debian's python3 with pytest: without it they skip, except where
// SANDBOXER_TEST_REQUIRE names python (CI), which makes that a failure.

// python is Debian's interpreter: `python3` on PATH may be a version manager's shim without pytest.
const python = "/usr/bin/python3"

func requirePytest(t testing.TB) {
	t.Helper()
	out, err := exec.Command(python, "-m", "pytest", "--version").CombinedOutput()
	if err == nil {
		return
	}
	msg := python + " -m pytest does not run (apt-get install python3-pytest)"
	if testenv.Required("python") {
		t.Fatalf("SANDBOXER_TEST_REQUIRE=python but %s: %v\n%s", msg, err, out)
	}
	t.Skipf("%s: %v\n%s", msg, err, out)
}

// pytest runs the SDK's tests (or the files and options given) against the server at url, with
// the extra environment variables env.
func pytest(t *testing.T, url string, env []string, args ...string) {
	t.Helper()
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 {
		args = []string{"tests"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	// -p no:cacheprovider and no bytecode: the run writes nothing into the source tree.
	// faulthandler_timeout prints every thread's stack if one test hangs.
	argv := append([]string{"-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-o", "faulthandler_timeout=240"}, args...)
	cmd := exec.CommandContext(ctx, python, argv...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1", "SANDBOXER_URL="+url)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	t.Logf("pytest %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("pytest failed: %v", err)
	}
}

// cleanEnv is the environment without the SDK's own variables, which the tests set.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SANDBOXER_URL=") && !strings.HasPrefix(kv, "SANDBOXER_TOKEN") &&
			!strings.HasPrefix(kv, "SANDBOXER_TEST_IMAGE=") {
			env = append(env, kv)
		}
	}
	return env
}

func TestPythonLocal(t *testing.T) {
	t.Parallel()
	requirePytest(t)
	srv := servetest.Start(t, "--adapter", "local")
	pytest(t, srv.URL, nil)
}

func TestPythonDocker(t *testing.T) {
	t.Parallel()
	requirePytest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ok, err := image.Exists(ctx, "", image.DefaultTag); err != nil || !ok {
		msg := "docker daemon or image " + image.DefaultTag + " not available (sandboxer image build)"
		if testenv.Required("docker") {
			t.Fatalf("%s: %v", msg, err)
		}
		t.Skipf("%s: %v", msg, err)
	}
	// The real-work test runs Python's own tests, which need an image with python3: the Debian
	// toolchain image where it is built (.ci/debian-image.sh); without it that test skips.
	var env []string
	debian := os.Getenv("SANDBOXER_TEST_DEBIAN_IMAGE")
	if debian == "" {
		debian = "sandboxer-debian:test"
	}
	if ok, err := image.Exists(ctx, "", debian); err == nil && ok {
		env = append(env, "SANDBOXER_TEST_IMAGE="+debian)
	} else if testenv.Required("debian-image") {
		t.Fatalf("SANDBOXER_TEST_REQUIRE=debian-image but %s is not there (.ci/debian-image.sh builds it): %v", debian, err)
	}
	srv := servetest.Start(t, "--adapter", "docker")
	pytest(t, srv.URL, env)
}

// TestPythonUnixSocket runs the exec and files tests over a unix socket.
func TestPythonUnixSocket(t *testing.T) {
	t.Parallel()
	requirePytest(t)
	// A short path: a socket's name has room for about 100 bytes.
	dir, err := os.MkdirTemp("", "sbxpy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "api.sock")
	servetest.Start(t, "--adapter", "local", "--listen", "unix:"+sock)
	pytest(t, "unix:"+sock, nil, "tests/test_exec.py", "tests/test_files.py")
}

// TestPythonTokens runs tests/test_tokens.py against a server with a tokens file of two tokens:
// alice, and bob who may use the local adapter only and hold one sandbox at a time.
func TestPythonTokens(t *testing.T) {
	t.Parallel()
	requirePytest(t)
	bin := servetest.Binary(t)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	add := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"serve", "token", "add"}, append(args, "--tokens", tokens)...)...).Output()
		if err != nil {
			t.Fatalf("sandboxerd serve token add %v: %v", args, err)
		}
		tok := strings.TrimSpace(string(out))
		if !strings.HasPrefix(tok, "sbx_") {
			t.Fatalf("sandboxerd serve token add printed %q, not a token", out)
		}
		return tok
	}
	alice := add("alice")
	bob := add("bob", "--adapter", "local", "--max-sandboxes", "1")
	srv := servetest.Start(t, "--adapter", "local", "--tokens", tokens)
	pytest(t, srv.URL, []string{"SANDBOXER_TOKEN=" + alice, "SANDBOXER_TOKEN_2=" + bob}, "tests/test_tokens.py")
}

// TestPythonTLS runs the files, processes and ports tests over TLS, with a certificate of the
// test's own that the client trusts through SSL_CERT_FILE (OpenSSL's default verify paths).
func TestPythonTLS(t *testing.T) {
	t.Parallel()
	requirePytest(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	selfSigned(t, cert, key)
	srv := servetest.Start(t, "--adapter", "local", "--tls-cert", cert, "--tls-key", key)
	pytest(t, srv.URL, []string{"SSL_CERT_FILE=" + cert}, "tests/test_files.py", "tests/test_processes.py", "tests/test_ports.py")
}

// selfSigned writes a certificate for 127.0.0.1 that is its own authority, and its key.
func selfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandboxer test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}
