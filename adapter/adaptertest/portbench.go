package adaptertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
)

// BenchDialPort measures adapter.PortForwarder against its baseline in one run: the same busybox
// httpd serving the same files, once on the host's loopback reached by a plain dial (direct), once
// in sb reached by DialPort (forwarded). "download" fetches a 100 MB file (MB/s reported);
// "connect" makes a new connection per request for a 1-byte file (the added time per connection
// is the difference of the two). The host needs busybox, and so does sb.
func BenchDialPort(b *testing.B, sb adapter.Sandbox) {
	pf, ok := sb.(adapter.PortForwarder)
	if !ok {
		b.Skip("no adapter.PortForwarder")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		b.Skip("no busybox on the host")
	}
	const size = 100 << 20
	ctx := context.Background()
	big := make([]byte, size)
	for i := range big {
		big[i] = byte(i * 7)
	}
	dir := b.TempDir()
	for name, data := range map[string][]byte{"big.bin": big, "one.txt": []byte("1")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := sb.WriteFile(ctx, "www/"+name, data); err != nil {
			b.Fatal(err)
		}
	}
	port := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	hostPort, sbPort := port(), port()
	host := exec.Command(busybox, "httpd", "-f", "-p", "127.0.0.1:"+strconv.Itoa(hostPort), "-h", dir)
	if err := host.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { host.Process.Kill(); host.Wait() })
	srvCtx, stop := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		sb.ExecuteCommand(srvCtx, adapter.Command{Dir: "www", Args: []string{"busybox", "httpd", "-f", "-p", "127.0.0.1:" + strconv.Itoa(sbPort), "-h", "."}})
		close(served)
	}()
	b.Cleanup(func() { stop(); <-served })

	clients := map[string]*http.Client{
		"direct": {Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(hostPort))
		}}},
		"forwarded": {Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return pf.DialPort(ctx, sbPort)
		}}},
	}
	get := func(c *http.Client, name string) int64 {
		resp, err := c.Get("http://x/" + name)
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != 200 {
			return -1
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for get(clients["forwarded"], "one.txt") != 1 || get(clients["direct"], "one.txt") != 1 {
		if time.Now().After(deadline) {
			b.Fatal("the servers never answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, kind := range []string{"download", "connect"} {
		for _, via := range []string{"direct", "forwarded"} {
			b.Run(fmt.Sprintf("%s/via=%s", kind, via), func(b *testing.B) {
				name, want := "one.txt", int64(1)
				if kind == "download" {
					name, want = "big.bin", size
					b.SetBytes(size)
				}
				for b.Loop() {
					if n := get(clients[via], name); n != want {
						b.Fatalf("got %d bytes of %d", n, want)
					}
				}
			})
		}
	}
}
