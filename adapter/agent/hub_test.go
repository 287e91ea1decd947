package agent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// The agent here runs on the host: the sandbox's loopback is the host's.

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func portOf(t *testing.T, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

// bigBody streams n pseudo-random bytes.
type bigBody struct{ n, seed int64 }

func (b *bigBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	for i := range p {
		b.seed = b.seed*6364136223846793005 + 1442695040888963407
		p[i] = byte(b.seed >> 56)
	}
	b.n -= int64(len(p))
	return len(p), nil
}

func sum(r io.Reader) (string, int64) {
	h := sha256.New()
	n, _ := io.Copy(h, r)
	return string(h.Sum(nil)), n
}

// streamModes runs f with a client whose streams are multiplexed over its link, and with one
// whose streams are direct unix connections (SetDirect; here the "sandbox" sees the host's
// directory at the same path).
func streamModes(t *testing.T, f func(t *testing.T, c *agent.Client)) {
	t.Run("multiplexed", func(t *testing.T) {
		c, _ := serve(t)
		f(t, c)
		direct, _ := c.DirectStreams()
		assert.False(t, direct)
	})
	t.Run("direct", func(t *testing.T) {
		c, _ := serve(t)
		dir := t.TempDir()
		c.SetDirect(dir, dir)
		f(t, c)
		direct, why := c.DirectStreams()
		assert.True(t, direct, "the streams were not direct: %v", why)
	})
}

func TestDialCarriesBothWaysWithHalfClose(t *testing.T) {
	streamModes(t, testDialCarriesBothWaysWithHalfClose)
}

func testDialCarriesBothWaysWithHalfClose(t *testing.T, c *agent.Client) {
	const size = 40 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			got, n := sum(r.Body)
			want, _ := sum(&bigBody{n: size, seed: 7})
			io.WriteString(w, strconv.FormatBool(got == want)+" "+strconv.FormatInt(n, 10))
			return
		}
		io.Copy(w, &bigBody{n: size, seed: 1})
	}))
	defer srv.Close()
	port := portOf(t, srv.Listener.Addr().String())
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return c.Dial(ctx, port)
	}}}
	defer client.CloseIdleConnections()

	resp, err := client.Get("http://sandbox/")
	require.NoError(t, err)
	got, n := sum(resp.Body)
	resp.Body.Close()
	want, _ := sum(&bigBody{n: size, seed: 1})
	assert.Equal(t, int64(size), n)
	assert.True(t, got == want, "the download came back changed")

	resp, err = client.Post("http://sandbox/", "application/octet-stream", &bigBody{n: size, seed: 7})
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "true "+strconv.Itoa(size), string(b))

	// A half close: the server sees the end of the request and still answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		in, _ := io.ReadAll(conn)
		conn.Write(bytes.ToUpper(in))
	}()
	conn, err := c.Dial(testCtx(t), portOf(t, ln.Addr().String()))
	require.NoError(t, err)
	defer conn.Close()
	conn.Write([]byte("hello"))
	require.NoError(t, conn.(interface{ CloseWrite() error }).CloseWrite())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	back, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.Equal(t, "HELLO", string(back))
}

func TestDialErrors(t *testing.T) { streamModes(t, testDialErrors) }

func testDialErrors(t *testing.T, c *agent.Client) {
	var re *agent.RequestError
	_, err := c.Dial(testCtx(t), 0)
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, "invalid", re.Code)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := portOf(t, ln.Addr().String())
	ln.Close()
	_, err = c.Dial(testCtx(t), port)
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, "refused", re.Code)
}

func TestListenHandsConnectionsToTheClient(t *testing.T) {
	streamModes(t, testListenHandsConnectionsToTheClient)
}

func testListenHandsConnectionsToTheClient(t *testing.T, c *agent.Client) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := portOf(t, probe.Addr().String())
	probe.Close()

	ln, err := c.Listen(testCtx(t), port)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "through the agent: "+r.URL.Path)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	for i := range 20 {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/x" + strconv.Itoa(i))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, "through the agent: /x"+strconv.Itoa(i), string(b))
	}
	// The port is the listener's: a second listen by the same client is refused.
	_, err = c.Listen(testCtx(t), port)
	var re *agent.RequestError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, "inuse", re.Code)

	// Closing the listener stops listening in the sandbox.
	require.NoError(t, ln.Close())
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			conn.Close()
		}
		return err != nil
	}, 10*time.Second, 20*time.Millisecond, "the agent still listens after Close")
}

func TestBackgroundProcess(t *testing.T) {
	c, _ := serve(t)
	ctx := testCtx(t)
	res, err := c.Request(ctx, agent.Request{Op: "start", Start: &agent.Start{Args: []string{"sh", "-c", `echo started; while read l; do echo "got $l"; echo "err $l" >&2; done; exit 3`}}})
	require.NoError(t, err)
	id := res.Process.ID
	require.True(t, res.Process.Running)

	out := waitOutput(t, c, id, 0, "started\n")
	_, err = c.Request(ctx, agent.Request{Op: "input", Process: id, Data: []byte("one\ntwo\n")})
	require.NoError(t, err)
	out2 := waitOutput(t, c, id, out.Offset, "got one\ngot two\n")
	assert.Equal(t, "err one\nerr two\n", string(out2.Stderr))

	_, err = c.Request(ctx, agent.Request{Op: "input", Process: id, EOF: true})
	require.NoError(t, err)
	res, err = c.Request(ctx, agent.Request{Op: "wait", Process: id, WaitMs: 30000})
	require.NoError(t, err)
	assert.False(t, res.Process.Running)
	assert.Equal(t, 3, res.Process.ExitCode)

	res, err = c.Request(ctx, agent.Request{Op: "list"})
	require.NoError(t, err)
	require.Len(t, res.Processes, 1)
	assert.Equal(t, id, res.Processes[0].ID)

	var re *agent.RequestError
	_, err = c.Request(ctx, agent.Request{Op: "output", Process: "p999"})
	require.True(t, errors.As(err, &re))
	assert.Equal(t, "notfound", re.Code)
	_, err = c.Request(ctx, agent.Request{Op: "signal", Process: id, Signal: "BOGUS"})
	require.True(t, errors.As(err, &re))
	assert.Equal(t, "invalid", re.Code)
}

// waitOutput reads process id's output after since until its stdout has want.
func waitOutput(t *testing.T, c *agent.Client, id string, since int64, want string) *agent.ProcOutput {
	t.Helper()
	var got agent.ProcOutput
	got.Offset = since
	var stdout, stderr []byte
	deadline := time.Now().Add(30 * time.Second)
	for len(stdout) < len(want) && time.Now().Before(deadline) {
		res, err := c.Request(testCtx(t), agent.Request{Op: "output", Process: id, Since: got.Offset, WaitMs: 1000})
		require.NoError(t, err)
		got = *res.Output
		stdout = append(stdout, got.Stdout...)
		stderr = append(stderr, got.Stderr...)
	}
	require.Equal(t, want, string(stdout))
	// stderr may lag stdout by a read: take what is there now.
	res, err := c.Request(testCtx(t), agent.Request{Op: "output", Process: id, Since: got.Offset, WaitMs: 200})
	require.NoError(t, err)
	stderr = append(stderr, res.Output.Stderr...)
	got.Stdout, got.Stderr = stdout, stderr
	return &got
}

func TestBackgroundProcessesOutliveTheirClientNotTheAgent(t *testing.T) {
	a := agent.New(false)
	served := func() (*agent.Client, func()) {
		toAgent, fromClient := io.Pipe()
		toClient, fromAgent := io.Pipe()
		done := make(chan struct{})
		go func() {
			a.Serve(toAgent, fromAgent)
			fromAgent.Close()
			close(done)
		}()
		c := agent.NewClient(toClient, fromClient, closerFunc(func() error { fromClient.Close(); return toClient.Close() }))
		return c, func() { c.Close(); <-done }
	}
	c1, end1 := served()
	res, err := c1.Request(testCtx(t), agent.Request{Op: "start", Start: &agent.Start{Args: []string{"sh", "-c", "echo $$; exec sleep 300"}}})
	require.NoError(t, err)
	id := res.Process.ID
	out := waitOutputLine(t, c1, id)
	pid, err := strconv.Atoi(out)
	require.NoError(t, err)
	end1()

	c2, end2 := served()
	defer end2()
	res, err = c2.Request(testCtx(t), agent.Request{Op: "list"})
	require.NoError(t, err)
	require.Len(t, res.Processes, 1)
	assert.True(t, res.Processes[0].Running, "the process ended with the client that started it")
	assert.True(t, alive(pid))

	// A start over the limit is refused.
	for range agent.MaxProcesses - 1 {
		_, err := c2.Request(testCtx(t), agent.Request{Op: "start", Start: &agent.Start{Args: []string{"sleep", "300"}}})
		require.NoError(t, err)
	}
	_, err = c2.Request(testCtx(t), agent.Request{Op: "start", Start: &agent.Start{Args: []string{"sleep", "300"}}})
	var re *agent.RequestError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, "limit", re.Code)

	_, err = c2.Request(testCtx(t), agent.Request{Op: "signal", Process: id, Signal: "KILL"})
	require.NoError(t, err)
	res, err = c2.Request(testCtx(t), agent.Request{Op: "wait", Process: id, WaitMs: 30000})
	require.NoError(t, err)
	assert.Equal(t, 128+9, res.Process.ExitCode)

	a.Close()
	assert.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 20*time.Millisecond)
}

func waitOutputLine(t *testing.T, c *agent.Client, id string) string {
	t.Helper()
	var b []byte
	var off int64
	deadline := time.Now().Add(30 * time.Second)
	for !bytes.Contains(b, []byte("\n")) && time.Now().Before(deadline) {
		res, err := c.Request(testCtx(t), agent.Request{Op: "output", Process: id, Since: off, WaitMs: 1000})
		require.NoError(t, err)
		b = append(b, res.Output.Stdout...)
		off = res.Output.Offset
	}
	return strings.TrimSpace(string(b))
}

// Many tiny writes to a reader that is slow to read: flow control counts bytes, not frames, so
// nothing is lost and the stream is not reset.
func TestStreamOfTinyWritesToASlowReader(t *testing.T) {
	c, _ := serve(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	const n = 20000
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetNoDelay(true)
		for i := range n {
			if _, err := conn.Write([]byte{byte('a' + i%26)}); err != nil {
				return
			}
		}
	}()
	conn, err := c.Dial(testCtx(t), portOf(t, ln.Addr().String()))
	require.NoError(t, err)
	defer conn.Close()
	time.Sleep(500 * time.Millisecond) // let the frames pile up
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	got, err := io.ReadAll(conn)
	require.NoError(t, err)
	require.Len(t, got, n)
	for i, b := range got {
		if b != byte('a'+i%26) {
			t.Fatalf("byte %d is %q", i, b)
		}
	}
}

// stdin in many tiny pieces to a process that does not read it: the agent's reading of frames
// never blocks on it, so the link's other calls go on (it once blocked after 68 frames in flight,
// however small, stalling every call of the link).
func TestStdinOfTinyPiecesToAProcessThatDoesNotRead(t *testing.T) {
	c, _ := serve(t)
	pr, pw := io.Pipe()
	go func() {
		pw.Write(make([]byte, 96<<10)) // fills the process's stdin pipe
		for i := range 500 {
			if _, err := pw.Write([]byte{byte('a' + i%26)}); err != nil {
				return
			}
		}
		pw.Close()
	}()
	ctx, cancel := context.WithCancel(testCtx(t))
	first := make(chan struct{})
	go func() {
		c.Run(ctx, agent.Spec{Start: agent.Start{Args: []string{"sleep", "60"}}, Stdin: pr, KillGrace: time.Millisecond}, nil, 5*time.Second)
		close(first)
	}()
	time.Sleep(300 * time.Millisecond)
	e, stdout, _ := run(t, c, "echo", "ok")
	assert.Equal(t, 0, e.Code)
	assert.Equal(t, "ok\n", stdout)
	select {
	case <-first:
		t.Fatal("the sleeping reader ended first: the test proves nothing")
	default:
	}
	cancel()
	<-first
	pr.Close()
}
