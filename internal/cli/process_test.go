package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/memory"
)

func TestParseForward(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec       string
		host, port int
		bad        bool
	}{
		{"8080", 8080, 8080, false},
		{"0:80", 0, 80, false},
		{"9000:3000", 9000, 3000, false},
		{"x:80", 0, 0, true},
		{"80:", 0, 0, true},
		{"0", 0, 0, true},
		{"70000", 0, 0, true},
		{"-1:80", 0, 0, true},
		{"", 0, 0, true},
	} {
		h, p, err := parseForward(c.spec)
		if c.bad {
			assert.Error(t, err, c.spec)
			continue
		}
		require.NoError(t, err, c.spec)
		assert.Equal(t, [2]int{c.host, c.port}, [2]int{h, p}, c.spec)
	}
}

// lockedBuffer is a bytes.Buffer for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// forward joins host loopback connections to a server in a local sandbox (its own network
// namespace where the kernel allows), both ways, and reports a port nobody listens on.
func TestForwardToLocalSandbox(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("no busybox")
	}
	sb, err := local.New(local.Config{Root: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	page := strings.Repeat("sandboxed page\n", 50000)
	require.NoError(t, sb.WriteFile(ctx, "index.html", []byte(page)))
	ln0, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln0.Addr().(*net.TCPAddr).Port
	ln0.Close()
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"busybox", "httpd", "-f", "-p", fmt.Sprintf("127.0.0.1:%d", port), "-h", "."}})
	require.NoError(t, err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var warn lockedBuffer
	fctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- forward(fctx, ln, sb, port, &warn) }()

	var body []byte
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + ln.Addr().String() + "/index.html")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == 200
	}, time.Minute, 50*time.Millisecond)
	assert.True(t, page == string(body), "the page, whole: %d bytes of %d", len(body), len(page))

	// Nothing listens on the sandbox port any more: the connection is closed at once, and said.
	require.NoError(t, p.Signal(ctx, "KILL"))
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	n, rerr := c.Read(make([]byte, 1))
	assert.Zero(t, n)
	assert.Error(t, rerr, "closed by the forwarder")
	c.Close()
	assert.Eventually(t, func() bool { return strings.Contains(warn.String(), "TOOL_NOT_FOUND") }, time.Minute, 20*time.Millisecond, warn.String())

	stop()
	require.NoError(t, <-served)
	// Asked of the listener itself: a dial to its address could reach another test's listener
	// that got the freed port.
	err = ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Second))
	if err == nil {
		_, err = ln.Accept()
	}
	assert.ErrorIs(t, err, net.ErrClosed, "the listener is closed when forward returns")
}

// logs prints each stream to its own output, once or following until the exit.
func TestPrintLogs(t *testing.T) {
	t.Parallel()
	sb, err := memory.New(memory.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"sh", "-c", "echo one; read x; echo two; echo err >&2"}})
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	std := Streams{Out: &out, Err: &errOut}
	require.Eventually(t, func() bool {
		out.Reset()
		require.NoError(t, printLogs(ctx, p, 0, false, false, std))
		return out.String() == "one\n"
	}, time.Minute, 10*time.Millisecond)

	done := make(chan error, 1)
	var fout, ferr lockedBuffer
	go func() { done <- printLogs(ctx, p, 0, true, false, Streams{Out: &fout, Err: &ferr}) }()
	require.NoError(t, p.Write(ctx, []byte("go\n")))
	require.NoError(t, <-done, "logs -f returns once the process has exited")
	assert.Equal(t, "one\ntwo\n", fout.String())
	assert.Equal(t, "err\n", ferr.String())

	out.Reset()
	require.NoError(t, printLogs(ctx, p, 4, false, true, std))
	assert.JSONEq(t, `{"stdout":"two\n","stderr":"err\n","offset":12,"dropped":0,"running":false,"exitCode":0}`, out.String())
}
