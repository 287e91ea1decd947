package policy

import (
	"net/netip"
	"strconv"
	"strings"
)

// scanText denies s when it holds a URL (scheme://authority) or a bash /dev/tcp or /dev/udp
// path whose host is not loopback. Unknown parts of the text (dyn) inside a host deny: the host
// cannot be known.
func (c *checker) scanText(s string) {
	if c.denied {
		return
	}
	for rest := s; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		start := schemeStart(rest, i)
		auth := rest[i+3:]
		if j := strings.IndexAny(auth, "/?#\t\n\v\f\r "); j >= 0 {
			auth = auth[:j]
		}
		if !authorityIsLocal(rest[start:i], auth) {
			url := cleanURL(rest[start:i+3] + auth)
			if c.allowMode {
				// The text may be a script: a quote, bracket or separator after the host ends
				// it ('https://modules.example.com' in python, `curl https://a.b;`). A backslash
				// may be an escape that changes the host: such a URL is not allowed.
				hauth := auth
				if j := strings.IndexAny(hauth, ";&|'\"()<>`,{}"); j >= 0 {
					hauth = hauth[:j]
				}
				host, ok := authorityHost(hauth)
				ok = ok && !strings.Contains(hauth, `\`)
				if !ok {
					host, ok = literalHost(hauth)
				}
				if ok && c.allowed(host) {
					rest = rest[i+3:]
					continue
				}
				if !ok {
					host = url
				}
				c.denyHost(url, host, "URL "+quoteSrc(url)+" names host "+quoteSrc(cleanURL(host))+", which is not in the allowlist (add it with --allow-host)")
				return
			}
			c.denyNet(url, "URL "+quoteSrc(url)+" has a non-loopback host")
			return
		}
		rest = rest[i+3:]
	}
	for _, dev := range [...]string{"/dev/tcp/", "/dev/udp/"} {
		for rest := s; ; {
			i := strings.Index(rest, dev)
			if i < 0 {
				break
			}
			host := rest[i+len(dev):]
			if j := strings.IndexAny(host, "/\t\n\v\f\r "); j >= 0 {
				host = host[:j]
			}
			if !hostIsLoopback(host) {
				if c.allowMode {
					c.denyHost(cleanURL(dev+host), cleanURL(host), "bash network path "+quoteSrc(cleanURL(dev+host))+" does not go through the egress proxy, the only way out with an allowlist")
					return
				}
				c.denyNet(cleanURL(dev+host), "bash network path "+quoteSrc(cleanURL(dev+host))+" has a non-loopback host")
				return
			}
			rest = rest[i+len(dev):]
		}
	}
}

// literalHost is the host of an authority whose user or port is made at run time
// (https://x:$TOKEN@host:$PORT/): the proxy checks what it becomes; a host that is not literal
// is not ok.
func literalHost(auth string) (string, bool) {
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	if i := strings.IndexByte(auth, ':'); i >= 0 && !strings.HasPrefix(auth, "[") {
		auth = auth[:i]
	}
	if auth == "" || strings.ContainsAny(auth, "$[]") || strings.Contains(auth, dyn) {
		return "", false
	}
	return auth, true
}

func cleanURL(s string) string { return strings.ReplaceAll(s, dyn, "$?") }

// schemeStart returns where the scheme that ends at i begins.
func schemeStart(s string, i int) int {
	j := i
	for j > 0 {
		ch := s[j-1]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '+' || ch == '-' || ch == '.' {
			j--
			continue
		}
		break
	}
	return j
}

// authorityIsLocal reports whether a URL authority (userinfo@host:port) names a loopback host,
// parsed strictly: anything ambiguous (several @, unknown parts, a bad port) is not local. An
// empty authority is local only for file: URLs.
func authorityIsLocal(scheme, auth string) bool {
	if auth == "" {
		return strings.EqualFold(scheme, "file")
	}
	host, ok := authorityHost(auth)
	return ok && hostIsLoopback(host)
}

// authorityHost returns the host of a URL authority (userinfo@host:port, [v6]:port), parsed
// strictly: ok is false for anything ambiguous (several @, unknown parts, a bad port).
func authorityHost(auth string) (host string, ok bool) {
	if auth == "" || strings.Contains(auth, dyn) {
		return "", false
	}
	if n := strings.Count(auth, "@"); n > 1 {
		return "", false
	} else if n == 1 {
		auth = auth[strings.IndexByte(auth, '@')+1:]
	}
	host, port := auth, ""
	if strings.HasPrefix(auth, "[") {
		end := strings.IndexByte(auth, ']')
		if end < 0 {
			return "", false
		}
		host, port = auth[1:end], auth[end+1:]
		if port != "" && port[0] != ':' {
			return "", false
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.LastIndexByte(auth, ':'); i >= 0 {
		host, port = auth[:i], auth[i+1:]
	}
	for _, ch := range port {
		if ch < '0' || ch > '9' {
			return "", false
		}
	}
	return host, host != ""
}

// hostIsLoopback reports whether host is localhost, a *.localhost name, or a loopback IP
// address (127.0.0.0/8, ::1) in canonical form.
func hostIsLoopback(host string) bool {
	if host == "" || strings.Contains(host, dyn) {
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return validName(h)
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// toLoopbackOnly reports whether a network client's arguments name a loopback destination and
// nothing else (CheckEnforced): every argument that is not an option or an option's possible
// value (the word after an option, which the client's own syntax decides) is a loopback URL,
// host or host:port, or a port; at least one destination is there. This is no parser per client:
// a destination hidden in an option's value passes here, and the kernel stops it.
func toLoopbackOnly(args []arg) bool {
	dest, afterOpt := false, false
	for _, a := range args {
		switch {
		case a.k != static:
			return false
		case strings.HasPrefix(a.s, "-"):
			afterOpt = !strings.Contains(a.s, "=")
		case isLoopbackDest(a.s):
			dest, afterOpt = true, false
		case isPort(a.s) || afterOpt:
			afterOpt = false
		default:
			return false
		}
	}
	return dest
}

// isLoopbackDest: a URL, host or host:port (a path after it) naming a loopback host.
func isLoopbackDest(s string) bool {
	if i := strings.Index(s, "://"); i >= 0 {
		auth := s[i+3:]
		if j := strings.IndexAny(auth, "/?#"); j >= 0 {
			auth = auth[:j]
		}
		return auth != "" && authorityIsLocal(s[:i], auth)
	}
	if j := strings.IndexByte(s, '/'); j >= 0 {
		s = s[:j]
	}
	if host, ok := authorityHost(s); ok {
		return hostIsLoopback(host)
	}
	return false
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 65536
}

// validName reports whether h only holds host-name characters, so that "localhost" cannot be
// the visible end of something a client would read differently.
func validName(h string) bool {
	for i := 0; i < len(h); i++ {
		ch := h[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '.' || ch == '_') {
			return false
		}
	}
	return true
}
