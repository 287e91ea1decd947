package egress

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/sandboxer/sandboxer/errs"
)

// TrustStore is a sandbox that can hold a certificate bundle for its commands, in a file of its
// own outside the workspace: where the proxy terminates TLS, the sandbox's clients must trust the
// proxy's authority (Proxy.CACert) besides the certificates they trust already.
type TrustStore interface {
	// TrustCA makes the file hold the sandbox's own trusted certificates (SystemBundle of its
	// root file system) followed by pem, writing it only when it does not end with pem already
	// (WriteBundle), and returns its path as the sandbox's commands see it. It is called before
	// every command of a policy that terminates TLS: the steady state must be cheap.
	TrustCA(ctx context.Context, pem []byte) (string, error)
}

// TrustFile is where, under a sandbox's HOME, adapters keep the bundle: a name no tool uses.
const TrustFile = ".sandboxer/ca-bundle.pem"

// systemBundles are where distributions keep their bundle of trusted certificates.
var systemBundles = []string{
	"etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine, Arch
	"etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"etc/ssl/ca-bundle.pem",             // openSUSE
	"etc/ssl/cert.pem",                  // Alpine's link, macOS
}

// SystemBundle returns the bundle of trusted certificates of the root file system at root ("/"
// for the host's), or nil when it has none of the usual files.
func SystemBundle(root string) []byte {
	for _, p := range systemBundles {
		if b, err := os.ReadFile(filepath.Join(root, p)); err == nil && len(b) > 0 {
			return b
		}
	}
	return nil
}

// WriteBundle makes the file at path hold the bundle system returns followed by pem (the
// directory made 0755, the file 0644, replaced atomically). A file that ends with pem already is
// left as it is, after one small read and without calling system: the check every command makes
// (a recycled sandbox's HOME is emptied, and a command may remove the file) costs next to nothing.
func WriteBundle(path string, pem []byte, system func() ([]byte, error)) error {
	if endsWith(path, pem) {
		return nil
	}
	sys, err := system()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".ca-bundle-*")
	if err != nil {
		return err
	}
	_, err = f.Write(slices.Concat(sys, []byte("\n"), pem))
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// endsWith reports whether the file at path ends with tail.
func endsWith(path string, tail []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < int64(len(tail)) {
		return false
	}
	buf := make([]byte, len(tail))
	_, err = f.ReadAt(buf, fi.Size()-int64(len(tail)))
	return err == nil && bytes.Equal(buf, tail)
}

// trustEnv is what a command needs to trust the bundle at path: the usual variables of OpenSSL,
// curl, Python's requests, git and Node.
func trustEnv(path string) []string {
	return []string{"SSL_CERT_FILE=" + path, "CURL_CA_BUNDLE=" + path, "REQUESTS_CA_BUNDLE=" + path,
		"GIT_SSL_CAINFO=" + path, "NODE_EXTRA_CA_CERTS=" + path}
}

// placeholderEnv gives each secret's name its placeholder: a command that needs the credential
// in hand holds that, and the proxy puts the value in its place on the way out.
func (s *secrets) placeholderEnv() []string {
	if s == nil {
		return nil
	}
	var env []string
	for name := range s.values {
		env = append(env, name+"="+Placeholder(name))
	}
	slices.Sort(env)
	return env
}

// trust installs the authority in sb when the policy terminates TLS for some host and keeps the
// path its commands see (EnvOf); a sandbox that cannot hold it is errs.SandboxUnavailable then.
func (p *Proxy) trust(ctx context.Context, sb any) error {
	if !p.policy().terminatesAny() {
		return nil
	}
	ts, ok := sb.(TrustStore)
	if !ok {
		return errs.New(errs.SandboxUnavailable, "egress", "", "this sandbox cannot hold the egress proxy's certificate authority, "+
			"which hosts with secrets or rules need: use the local, docker (its workspace on this host) or oci adapter")
	}
	path, err := ts.TrustCA(ctx, p.ca.pem)
	if err != nil {
		return errs.Wrap(errs.SandboxUnavailable, "egress", "", err)
	}
	p.mu.Lock()
	p.trustPath = path
	p.mu.Unlock()
	return nil
}

// terminatesAny reports whether the policy terminates TLS for some host.
func (pol *policy) terminatesAny() bool {
	return len(pol.allow.rules) > 0 || pol.sec != nil && len(pol.sec.inject) > 0
}

// commandEnv is what the policy in force adds to a command's environment: the trust variables
// (once the bundle is installed) and the secrets' placeholders.
func (p *Proxy) commandEnv() []string {
	pol := p.policy()
	if !pol.terminatesAny() {
		return nil
	}
	p.mu.Lock()
	path := p.trustPath
	p.mu.Unlock()
	var env []string
	if path != "" {
		env = trustEnv(path)
	}
	return append(env, pol.sec.placeholderEnv()...)
}
