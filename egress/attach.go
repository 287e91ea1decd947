package egress

import (
	"context"
	"strconv"
	"sync"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// Port is where the proxy listens on every sandbox's own loopback (127.0.0.1:3128, squid's
// port): fixed, so that a command can name it, and documented in the README.
const Port = 3128

// Env is what every command of a sandbox with an allowlist gets: the proxy in HTTP_PROXY,
// HTTPS_PROXY, http_proxy and https_proxy (http://127.0.0.1:Port), and NO_PROXY / no_proxy for
// the sandbox's own loopback, which stays reachable directly.
func Env() []string {
	u := "http://127.0.0.1:" + strconv.Itoa(Port)
	const no = "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=" + no, "no_proxy=" + no,
	}
}

// Attach listens on 127.0.0.1:Port inside sb (adapter.PortListener) and serves p there until p
// is closed or the sandbox stops. Errors: errs.SandboxUnavailable when sb cannot carry a
// listener (the memory adapter has no network; the local adapter without a network namespace
// has no loopback of its own), or ListenPort's errors.
func Attach(ctx context.Context, sb adapter.Sandbox, p *Proxy) error {
	return attach(ctx, sb, p, nil)
}

// attach is Attach, calling ended once the listener ends.
func attach(ctx context.Context, sb adapter.Sandbox, p *Proxy, ended func()) error {
	pl, ok := sb.(adapter.PortListener)
	if !ok {
		return errs.New(errs.SandboxUnavailable, "egress", "", "this sandbox cannot carry an egress proxy (no listener on its own loopback): an allowlist (allow-hosts) needs the local adapter with a network namespace, docker or oci")
	}
	ln, err := pl.ListenPort(ctx, Port)
	if err != nil {
		return err
	}
	go func() {
		p.Serve(ln) //nolint:errcheck // Serve ends with Close or with the sandbox's listener
		if ended != nil {
			ended()
		}
	}()
	return nil
}

// Ensure attaches p to sb once (Attach); later calls return nil at once, or
// errs.SandboxUnavailable once p is closed. A nil p (no allowlist) attaches nothing. A failed attach is retried by the next call.
// Adapters call it before each command of a sandbox with an allowlist, so the proxy exists from
// the first command on.
func (p *Proxy) Ensure(ctx context.Context, sb adapter.Sandbox) error {
	if p == nil {
		return nil
	}
	p.attachMu.Lock()
	defer p.attachMu.Unlock()
	if p.isClosed() {
		return errs.New(errs.SandboxUnavailable, "egress", "", "the egress proxy is closed (the sandbox is stopped)")
	}
	if p.attached {
		return p.trust(ctx, sb)
	}
	// The listener may end before the proxy does (the agent's stream broke and the adapter
	// started another): the next command attaches again.
	err := attach(ctx, sb, p, func() {
		p.attachMu.Lock()
		p.attached = false
		p.attachMu.Unlock()
	})
	if err != nil {
		return err
	}
	p.attached = true
	return p.trust(ctx, sb)
}

// Egressed is a sandbox with an egress proxy (an adapter whose Config has AllowHosts): the
// tool layer reads its decisions through it.
type Egressed interface {
	// Egress returns the sandbox's proxy, or nil when it has no allowlist.
	Egress() *Proxy
}

// Of returns sb's proxy, or nil.
func Of(sb adapter.Sandbox) *Proxy {
	if e, ok := sb.(Egressed); ok {
		return e.Egress()
	}
	return nil
}

// NewFor is the proxy of an adapter Config's AllowHosts, tuned by opts (whose AllowHosts is
// ignored); nil and no error without an allowlist.
func NewFor(allowHosts []string, opts Config) (*Proxy, error) {
	if len(allowHosts) == 0 {
		return nil, nil
	}
	opts.AllowHosts = allowHosts
	return New(opts)
}

// CommandEnv attaches p to sb (Ensure) and returns EnvOf(p), the variables every command of sb
// must get.
func (p *Proxy) CommandEnv(ctx context.Context, sb adapter.Sandbox) ([]string, error) {
	if err := p.Ensure(ctx, sb); err != nil {
		return nil, err
	}
	return EnvOf(p), nil
}

// EnvOf is Env for a sandbox with proxy p, nil for one without (p nil); where p terminates TLS
// for some host, with the variables that make the commands trust its authority (installed by
// Ensure) and the secrets' placeholders.
func EnvOf(p *Proxy) []string {
	if p == nil {
		return nil
	}
	return append(Env(), p.commandEnv()...)
}

// Holder is what an adapter embeds to own the proxy of its Config's AllowHosts, made at first
// use: Get returns it (nil without an allowlist), Close ends it. The zero value is ready.
type Holder struct {
	mu     sync.Mutex
	p      *Proxy
	made   bool
	closed bool
}

// Get returns the proxy for allowHosts and opts, making it on the first call; nil without an
// allowlist, after Close, or when the allowlist is invalid (adapters validate their Config
// first).
func (h *Holder) Get(allowHosts []string, opts Config) *Proxy {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.made && !h.closed {
		h.made = true
		h.p, _ = NewFor(allowHosts, opts)
	}
	return h.p
}

// Close closes the proxy, if one was made; later Gets return it closed. Idempotent.
func (h *Holder) Close() error {
	h.mu.Lock()
	h.closed = true
	p := h.p
	h.mu.Unlock()
	return p.Close()
}
