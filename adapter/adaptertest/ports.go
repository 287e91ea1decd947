package adaptertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sandbox's loopback, reached from the sandboxer process: DialPort to a server a command runs
// (busybox httpd), ListenPort for a client a command runs (busybox wget). Commands need busybox.

func (s *suite) testPorts(t *testing.T) {
	sb := s.sandbox(t)
	if !caps(t, sb).Ports {
		t.Skip("the sandbox has no ports (Capabilities.Ports)")
	}
	_, ok := sb.(adapter.PortForwarder)
	require.True(t, ok, "Capabilities.Ports without adapter.PortForwarder")
	t.Run("DialPort", s.testDialPort)
	t.Run("DialPortErrors", s.testDialPortErrors)
	t.Run("ListenPort", s.testListenPort)
}

// freePort is a port no one listens on, on the host at least (and so, in a namespace of its own,
// in the sandbox too).
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func needBusybox(t *testing.T, sb adapter.Sandbox) {
	if res := sh(t, sb, "command -v busybox"); res.ExitCode != 0 {
		t.Skip("no busybox in the sandbox")
	}
}

func (s *suite) testDialPort(t *testing.T) {
	sb := s.sandbox(t)
	needBusybox(t, sb)
	pf := sb.(adapter.PortForwarder)
	page := randomBytes(t, 1<<20)
	require.NoError(t, sb.WriteFile(ctxT(t), "www/page.bin", page))
	port := freePort(t)

	srvCtx, stopSrv := context.WithCancel(ctxT(t))
	served := make(chan error, 1)
	go func() {
		_, err := sb.ExecuteCommand(srvCtx, adapter.Command{Dir: "www",
			Args: []string{"busybox", "httpd", "-f", "-p", "127.0.0.1:" + strconv.Itoa(port), "-h", "."}})
		served <- err
	}()
	defer func() {
		stopSrv()
		<-served
	}()

	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return pf.DialPort(ctx, port) },
	}}
	defer client.CloseIdleConnections()
	var body []byte
	require.Eventually(t, func() bool {
		resp, err := client.Get("http://sandbox/page.bin")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == 200
	}, 20*time.Second, 50*time.Millisecond, "httpd in the sandbox never answered through DialPort")
	assert.True(t, bytes.Equal(page, body), "the page came back changed (%d bytes of %d)", len(body), len(page))
}

func (s *suite) testDialPortErrors(t *testing.T) {
	sb := s.sandbox(t)
	pf := sb.(adapter.PortForwarder)
	for _, p := range []int{0, -1, 65536} {
		_, err := pf.DialPort(ctxT(t), p)
		assert.ErrorIs(t, err, errs.InvalidInput, "port %d", p)
	}
	_, err := pf.DialPort(ctxT(t), freePort(t))
	assert.ErrorIs(t, err, errs.NotFound, "nothing listens there")
	require.NoError(t, sb.Stop(ctxT(t)))
	_, err = pf.DialPort(ctxT(t), freePort(t))
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}

func (s *suite) testListenPort(t *testing.T) {
	sb := s.sandbox(t)
	needBusybox(t, sb)
	pl, ok := sb.(adapter.PortListener)
	require.True(t, ok, "an adapter with PortForwarder has PortListener too")
	_, err := pl.ListenPort(ctxT(t), 70000)
	assert.ErrorIs(t, err, errs.InvalidInput)

	port := freePort(t)
	ln, err := pl.ListenPort(ctxT(t), port)
	require.NoError(t, err)
	page := randomBytes(t, 1<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page.bin" {
			w.Write(page)
			return
		}
		http.NotFound(w, r)
	})}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()

	url := fmt.Sprintf("http://127.0.0.1:%d/page.bin", port)
	res := shOK(t, sb, "busybox wget -q -O got.bin "+url+" && wc -c < got.bin")
	assert.Equal(t, strconv.Itoa(len(page)), string(bytes.TrimSpace(res.Stdout)))
	got, err := sb.ReadFile(ctxT(t), "got.bin")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(page, got), "the page reached the sandbox changed")

	// Stop ends the listener: Serve returns, and nothing is left listening.
	require.NoError(t, sb.Stop(ctxT(t)))
	select {
	case err := <-done:
		assert.True(t, errors.Is(err, net.ErrClosed) || err != nil, "Serve ended with %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not end the listener")
	}
	_, err = pl.ListenPort(ctxT(t), port)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}
