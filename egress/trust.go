package egress

import (
	"context"
	"slices"

	"github.com/sandboxer/sandboxer/errs"
)

// TrustStore is a sandbox that can hold a certificate bundle for its commands, in a file of its
// own outside the workspace: where the proxy terminates TLS, the sandbox's clients must trust the
// proxy's authority (Proxy.CACert) besides the certificates they trust already.
type TrustStore interface {
	// TrustCA makes the file hold the sandbox's own trusted certificates (trustfile.System of its
	// root file system) followed by pem, writing it only when it does not end with pem already
	// (trustfile.Write), and returns its path as the sandbox's commands see it. It is called before
	// every command of a policy that terminates TLS: the steady state must be cheap.
	TrustCA(ctx context.Context, pem []byte) (string, error)
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
