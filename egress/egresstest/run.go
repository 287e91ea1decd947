package egresstest

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools"
)

// NewSandbox makes a sandbox of the adapter under test with allowHosts as its Config's
// AllowHosts and opts as its egress options (resolver, address exceptions); the harness stops it.
type NewSandbox func(t *testing.T, allowHosts []string, opts egress.Config) adapter.Sandbox

// The names the harness's resolver knows. allowed.test and *.wild.test are allowed and lead to
// the host's loopback servers (127.0.0.1, which AllowAddrs opens for the test); evil.test leads
// there too but is not allowed; loop.test is allowed but resolves to 127.0.0.2, and meta.test to
// the cloud metadata address: both refused by address.
var harnessAllow = []string{"allowed.test", "*.wild.test", "example.com", "loop.test", "meta.test"}

// Run checks, with commands inside a sandbox of the adapter (busybox required; curl and python3
// used when present), that the proxy is the only way out and lets through exactly the allowed
// hosts:
//   - every command has HTTP_PROXY and friends, pointing at 127.0.0.1:egress.Port;
//   - busybox wget (and curl, python urllib, curl over CONNECT with TLS, where present) reach an
//     allowed host, and the tool result's network lists the request with its bytes;
//   - a host off the list, an IP literal, a name resolving to loopback or to the metadata
//     address are refused (403) and the target counts 0 connections;
//   - a client that ignores the proxy, busybox nc, python sockets and bash /dev/tcp to the
//     host's servers make 0 connections;
//   - Stop ends the proxy.
func Run(t *testing.T, newSandbox NewSandbox) {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s", r.URL.Path) })
	allowed := NewTarget(t, false, hello)
	secure := NewTarget(t, true, hello)
	refused := NewTarget(t, false, hello)
	raw := NewTCPTarget(t, "127.0.0.1:0", Echo)
	loop := NewTCPTarget(t, fmt.Sprintf("127.0.0.2:%d", raw.Port), Echo)
	wide := NewTCPTarget(t, ":0", Echo) // every address of the host

	opts := egress.Config{
		Resolve: Names(map[string]string{
			"allowed.test": "127.0.0.1", "x.wild.test": "127.0.0.1", "example.com": "127.0.0.1",
			"git.wild.test": "127.0.0.1", "goproxy.wild.test": "127.0.0.1",
			"evil.test": "127.0.0.1", "loop.test": "127.0.0.2", "meta.test": "169.254.169.254",
		}),
		AllowAddrs: LoopbackOnly,
	}
	sb := newSandbox(t, harnessAllow, opts)
	if _, ok := sb.(adapter.PortListener); !ok {
		t.Skip("the adapter has no adapter.PortListener (yet): the egress proxy cannot be attached")
	}
	if res := sh(t, sb, "command -v busybox"); res.ExitCode != 0 {
		t.Skip("no busybox in the sandbox")
	}
	proxy := egress.Of(sb)
	require.NotNil(t, proxy, "the sandbox has no egress proxy (egress.Egressed)")

	t.Run("Env", func(t *testing.T) {
		res := sh(t, sb, `echo "$HTTP_PROXY $HTTPS_PROXY $http_proxy $https_proxy $NO_PROXY $no_proxy"`)
		u := fmt.Sprintf("http://127.0.0.1:%d", egress.Port)
		assert.Equal(t, strings.Repeat(u+" ", 4)+"localhost,127.0.0.1,::1 localhost,127.0.0.1,::1\n", string(res.Stdout))
	})

	t.Run("Allowed", func(t *testing.T) {
		for _, host := range []string{"allowed.test", "x.wild.test", "ALLOWED.test"} {
			m := proxy.Mark()
			res := sh(t, sb, fmt.Sprintf("busybox wget -q -O - http://%s:%d/bb", host, allowed.Port))
			require.Equal(t, 0, res.ExitCode, "%s: %s", res.Stdout, res.Stderr)
			assert.Equal(t, "hello /bb", string(res.Stdout))
			ds := since(t, proxy, m)
			require.Len(t, ds, 1)
			assert.True(t, ds[0].Allowed)
			assert.EqualValues(t, len("hello /bb"), ds[0].BytesIn)
		}
		if sh(t, sb, "command -v curl").ExitCode == 0 {
			res := sh(t, sb, fmt.Sprintf("curl -sS http://allowed.test:%d/curl", allowed.Port))
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			assert.Equal(t, "hello /curl", string(res.Stdout))
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})
			require.NoError(t, sb.WriteFile(ctxT(t), "ca.pem", ca))
			res = sh(t, sb, fmt.Sprintf("curl -sS --cacert ca.pem https://example.com:%d/tls", secure.Port))
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			assert.Equal(t, "hello /tls", string(res.Stdout))
		}
		if sh(t, sb, "command -v python3").ExitCode == 0 {
			res := sh(t, sb, fmt.Sprintf(`python3 -c 'import urllib.request as u; print(u.urlopen("http://allowed.test:%d/py").read().decode())'`, allowed.Port))
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			assert.Equal(t, "hello /py\n", string(res.Stdout))
		}
	})

	t.Run("GitClone", func(t *testing.T) {
		if sh(t, sb, "command -v git").ExitCode != 0 {
			t.Skip("no git in the sandbox")
		}
		srv := GitServer(t)
		m := proxy.Mark()
		res := sh(t, sb, fmt.Sprintf("GIT_CONFIG_NOSYSTEM=1 git clone -q http://git.wild.test:%d/repo.git clone && cat clone/README", srv.Port))
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.Equal(t, GitReadme, string(res.Stdout))
		for _, d := range since(t, proxy, m) {
			assert.True(t, d.Allowed)
			assert.Equal(t, "git.wild.test", d.Host)
		}
	})

	t.Run("GoModDownload", func(t *testing.T) {
		if sh(t, sb, "command -v go").ExitCode != 0 {
			t.Skip("no go in the sandbox")
		}
		srv := GoModServer(t)
		mv := Module + "@" + ModuleVersion
		res := sh(t, sb, fmt.Sprintf("export GOPROXY=http://goproxy.wild.test:%d GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-modcacherw GOMODCACHE=$PWD/modcache GOCACHE=$PWD/gocache; "+
			"go mod download -json %s && cat modcache/%s/hello.go", srv.Port, mv, mv))
		require.Equal(t, 0, res.ExitCode, "%s %s", res.Stdout, res.Stderr)
		assert.Contains(t, string(res.Stdout), ModuleText)
	})

	t.Run("Refused", func(t *testing.T) {
		before := allowed.Conns()
		for _, c := range []struct{ url, body string }{
			{fmt.Sprintf("http://evil.test:%d/", refused.Port), "--allow-host evil.test"},
			{fmt.Sprintf("http://127.0.0.1:%d/", refused.Port), "IP address"},
			{fmt.Sprintf("http://loop.test:%d/", loop.Port), "127.0.0.2"},
			{fmt.Sprintf("http://meta.test:%d/", raw.Port), "169.254.169.254"},
		} {
			m := proxy.Mark()
			// NO_PROXY names 127.0.0.1, so the IP literal would not be sent to the proxy: force it.
			res := sh(t, sb, "unset NO_PROXY no_proxy; busybox wget -S -O - "+c.url+" 2>&1")
			assert.NotEqual(t, 0, res.ExitCode, c.url)
			assert.Contains(t, string(res.Stdout), "403", c.url)
			ds := since(t, proxy, m)
			require.Len(t, ds, 1, c.url)
			assert.False(t, ds[0].Allowed, c.url)
			if sh(t, sb, "command -v curl").ExitCode == 0 {
				res := sh(t, sb, "curl -sS --noproxy '' "+c.url)
				assert.Contains(t, string(res.Stdout), c.body, c.url)
				res = sh(t, sb, "curl -sS --noproxy '' "+strings.Replace(c.url, "http:", "https:", 1))
				assert.NotEqual(t, 0, res.ExitCode, c.url)
			}
		}
		assert.Zero(t, refused.Conns(), "the refused host was reached")
		assert.Zero(t, loop.Conns(), "the name resolving to loopback was dialled")
		assert.Zero(t, raw.Conns(), "the metadata name reached something")
		assert.Equal(t, before, allowed.Conns())
	})

	t.Run("NoOtherWayOut", func(t *testing.T) {
		scripts := []string{
			// A client that ignores the proxy: no name resolves, no route leads out.
			fmt.Sprintf("unset HTTP_PROXY http_proxy; busybox wget -q -O - http://allowed.test:%d/", allowed.Port),
			fmt.Sprintf("unset HTTP_PROXY http_proxy; busybox wget -q -O - http://127.0.0.1:%d/", allowed.Port),
			fmt.Sprintf("echo x | busybox nc 127.0.0.1 %d", wide.Port),
			fmt.Sprintf("echo x | busybox nc 127.0.0.2 %d", raw.Port),
		}
		if ip := hostIP(); ip != "" {
			scripts = append(scripts, fmt.Sprintf("echo x | busybox nc %s %d", ip, wide.Port))
		}
		if sh(t, sb, "command -v python3").ExitCode == 0 {
			scripts = append(scripts, fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d), 5)'`, wide.Port))
		}
		if sh(t, sb, "command -v bash").ExitCode == 0 {
			scripts = append(scripts, fmt.Sprintf(`bash -c 'echo x > /dev/tcp/127.0.0.1/%d'`, wide.Port))
		}
		for _, s := range scripts {
			res := sh(t, sb, s)
			assert.NotEqual(t, 0, res.ExitCode, "%s got out: %s", s, res.Stdout)
		}
		assert.Zero(t, raw.Conns()+loop.Conns(), "a raw connection reached the host")
		assert.Zero(t, wide.Conns(), "a raw connection reached the host")
	})

	t.Run("ToolResult", func(t *testing.T) {
		tc := tools.NewContext(sb)
		tc.AllowHosts = harnessAllow
		tc.Timeout = time.Minute
		in, _ := json.Marshal(tools.BashInput{Cmd: "busybox", Args: []string{"wget", "-q", "-O", "-", fmt.Sprintf("http://allowed.test:%d/tool", allowed.Port)}})
		res, err := tools.Bash.Call(ctxT(t), in, tc)
		require.NoError(t, err)
		out, err := json.Marshal(res.Value)
		require.NoError(t, err)
		var br struct {
			Output        string            `json:"output"`
			NetworkPolicy string            `json:"networkPolicy"`
			Network       []egress.Decision `json:"network"`
		}
		require.NoError(t, json.Unmarshal(out, &br), string(out))
		assert.Equal(t, "hello /tool", br.Output)
		assert.Equal(t, tools.PolicyAllowlist, br.NetworkPolicy)
		require.Len(t, br.Network, 1, string(out))
		assert.Equal(t, egress.Decision{Host: "allowed.test", Port: allowed.Port, Allowed: true, BytesIn: int64(len("hello /tool"))}, br.Network[0])

		// Inspection refuses a URL it can see, naming the host; nothing runs.
		in, _ = json.Marshal(tools.BashInput{Cmd: "busybox", Args: []string{"wget", fmt.Sprintf("http://evil.test:%d/", refused.Port)}})
		_, err = tools.Bash.Call(ctxT(t), in, tc)
		require.ErrorIs(t, err, errs.NetworkDisabled)
		assert.Equal(t, "evil.test", errs.As(err).Details["host"])
		// What it cannot see is the proxy's: the command runs, is refused, and the error's
		// details carry the decision.
		require.NoError(t, sb.WriteFile(ctxT(t), "url.txt", fmt.Appendf(nil, "http://evil.test:%d/", refused.Port)))
		in, _ = json.Marshal(tools.BashInput{Cmd: "sh", Args: []string{"-c", `busybox wget -q -O - "$(cat url.txt)"`}})
		_, err = tools.Bash.Call(ctxT(t), in, tc)
		require.ErrorIs(t, err, errs.CommandFailed)
		ds, _ := errs.As(err).Details["network"].([]egress.Decision)
		require.Len(t, ds, 1)
		assert.Equal(t, "evil.test", ds[0].Host)
		assert.False(t, ds[0].Allowed)
		assert.Zero(t, refused.Conns())
	})

	t.Run("StopEndsTheProxy", func(t *testing.T) {
		// A tunnel held open by a running command ends with the sandbox.
		var ended atomic.Int64
		hold := NewTCPTarget(t, "127.0.0.1:0", func(c net.Conn) { io.Copy(io.Discard, c); ended.Add(1) })
		go sb.ExecuteCommand(context.WithoutCancel(ctxT(t)), adapter.Command{Args: []string{"sh", "-c",
			fmt.Sprintf(`(printf 'CONNECT allowed.test:%d HTTP/1.1\r\n\r\n'; sleep 600) | busybox nc 127.0.0.1 %d`, hold.Port, egress.Port)}})
		require.Eventually(t, func() bool { return hold.Conns() == 1 }, time.Minute, 20*time.Millisecond, "the tunnel never opened")
		assert.Zero(t, ended.Load())
		require.NoError(t, sb.Stop(ctxT(t)))
		require.Eventually(t, func() bool { return ended.Load() == 1 }, time.Minute, 20*time.Millisecond, "the tunnel outlived the sandbox")
		err := proxy.Ensure(ctxT(t), sb)
		require.ErrorIs(t, err, errs.SandboxUnavailable)
	})
}

func since(t *testing.T, p *egress.Proxy, m egress.Mark) []egress.Decision {
	t.Helper()
	ds, dropped := p.Since(ctxT(t), m, time.Minute)
	require.Zero(t, dropped)
	return ds
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func sh(t *testing.T, sb adapter.Sandbox, script string) adapter.Result {
	t.Helper()
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", script}, Timeout: time.Minute})
	require.NoError(t, err, script)
	return res
}

// hostIP is a non-loopback address of this host (a server listening on all addresses would be
// reachable there from a sandbox sharing the host's network), or "".
func hostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if pn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(pn.IP); ok && !ip.Unmap().IsLoopback() && ip.Unmap().Is4() {
				return ip.Unmap().String()
			}
		}
	}
	return ""
}
