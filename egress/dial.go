package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/errs"
)

// extraForbidden are ranges that netip's predicates do not cover but that never lead to the
// public internet: "this network", shared address space (carrier-grade NAT), IETF protocol
// assignments, benchmarking, and IPv4-mapped/NAT64 forms are unmapped before the check.
var extraForbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// addrClass names why a is never dialled, or returns "" for a public unicast address.
func addrClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsPrivate():
		return "private"
	case !a.IsGlobalUnicast():
		return "non-unicast"
	}
	for _, p := range extraForbidden {
		if p.Contains(a) {
			return "reserved"
		}
	}
	return ""
}

// refusedAddr: the host is allowed, but it resolves to an address the proxy never dials.
type refusedAddr struct {
	host  string
	addr  netip.Addr
	class string
}

func (r *refusedAddr) Error() string {
	return fmt.Sprintf("%s resolves to %s, a %s address", r.host, r.addr, r.class)
}

func (r *refusedAddr) reason() string {
	return "resolves to a " + r.class + " address (" + r.addr.String() + ")"
}

func (r *refusedAddr) text() string {
	return fmt.Sprintf("sandboxer egress proxy: host %s resolves to %s, a %s address; the proxy never dials loopback, private, link-local (cloud metadata), unspecified or multicast addresses, whatever the allowlist (setting allow-hosts) says.\n", r.host, r.addr, r.class)
}

// permitted reports whether a may be dialled.
func (p *Proxy) permitted(a netip.Addr) (string, bool) {
	for _, pre := range p.allowAddrs {
		if pre.Contains(a) || pre.Contains(a.Unmap()) {
			return "", true
		}
	}
	c := addrClass(a)
	return c, c == ""
}

// dial resolves host itself, refuses the whole name when any of its addresses is one the proxy
// never dials (*refusedAddr), and dials the checked addresses in turn: what is checked is what
// is dialled, so a name that rebinds between check and dial cannot slip through.
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a} // never reached through decide (an IP is never allowed); kept for safety
	} else {
		if addrs, err = p.resolve(ctx, host); err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no address", host)
		}
	}
	for _, a := range addrs {
		if class, ok := p.permitted(a); !ok {
			return nil, &refusedAddr{host: host, addr: a.Unmap(), class: class}
		}
	}
	var d net.Dialer
	var firstErr error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// dialContext is the HTTP transport's dialer for plain-HTTP requests (addr is host:port).
func (p *Proxy) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, err
	}
	if !p.policy().allow.Allows(strings.Trim(host, "[]")) {
		return nil, errs.New(errs.NetworkDisabled, "egress", "", "host %s is not in the allowlist", host)
	}
	return p.dial(ctx, host, port)
}
