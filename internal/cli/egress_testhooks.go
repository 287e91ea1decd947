//go:build sandboxer_testhooks

package cli

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/netip"
	"os"

	"github.com/sandboxer/sandboxer/egress"
)

// TestEgressVar names, in a build with the sandboxer_testhooks tag only (the CLI's tests), the
// test servers the egress proxies may reach: JSON {"hosts": {"api.test": "127.0.0.1"}, "roots":
// "/path/ca.pem"}: names resolved to loopback addresses, which are then dialled, and the CA the
// terminated requests' destinations are verified against. sandboxer itself never reads it.
const TestEgressVar = "SANDBOXER_TEST_EGRESS"

func egressTuning(inv invocation) egress.Config {
	raw := inv.getenv(TestEgressVar)
	if raw == "" {
		return egress.Config{}
	}
	var t struct {
		Hosts map[string]string `json:"hosts"`
		Roots string            `json:"roots"`
	}
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		panic(TestEgressVar + ": " + err.Error())
	}
	c := egress.Config{AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	c.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		a, err := netip.ParseAddr(t.Hosts[host])
		if err != nil {
			return nil, &net.DNSError{Err: "no such host (" + TestEgressVar + ")", Name: host, IsNotFound: true}
		}
		return []netip.Addr{a}, nil
	}
	if t.Roots != "" {
		pem, err := os.ReadFile(t.Roots)
		if err != nil {
			panic(TestEgressVar + ": " + err.Error())
		}
		c.UpstreamRoots = x509.NewCertPool()
		c.UpstreamRoots.AppendCertsFromPEM(pem)
	}
	return c
}
