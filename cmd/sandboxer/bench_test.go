package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// BenchmarkMCPBash measures one MCP tools/call of bash running /bin/true through `sandboxer mcp` on
// the local adapter, with the journal on, against bare exec.Command("/bin/true").Run(). Every
// iteration runs one of each, alternately, so that both see the same machine at the same moment
// (this machine's exec time drifts by ±15% between runs a few seconds apart). It reports the
// median of each (median-ns for the MCP call, bare-median-ns) and their ratio, x-bare (target:
// no more than 1.25).
//
// Two clients drive the server: client=wire writes each request as one line of JSON on the
// server's stdin and reads the response line, which is all an MCP stdio client must do, so the
// figure is the server's; client=go-sdk is the SDK's client, whose own work per call (and the
// per-request _meta it sends, which the server then validates) is in its figure too.
// isolation=off is the tool path itself; isolation=auto adds the local adapter's kernel isolation
// (namespaces, Landlock, a cgroup per command), whose own figure is in adapter/local.
//
// The rest break the figure down: journal=off is the go-sdk call without its journal row, and
// the floors (floor_test.go) are the same call to servers with nothing of sandboxer in them, the
// SDK's own server with a handler that is one bare exec (floor=go-sdk), and a server of a few
// lines without the SDK (floor=raw): with the go-sdk client, the least any server built on the
// SDK, and any server at all, can cost on this machine.
//
//	go test -run '^$' -bench MCPBash -benchtime 1000x -count 3 ./cmd/sandboxer/
func BenchmarkMCPBash(b *testing.B) {
	for _, iso := range []string{"off", "auto"} {
		args := []string{"--run-id", "bench", "--node-id", "n", "--isolation", iso}
		b.Run("client=wire/isolation="+iso, func(b *testing.B) {
			c := startWireClient(b, newEnv(b), args...)
			benchAgainstBare(b, c.callTrue)
		})
		b.Run("client=go-sdk/isolation="+iso, func(b *testing.B) {
			cs := newEnv(b).startMCP(b, args...)
			benchAgainstBare(b, sdkCallTrue(cs))
		})
	}
	// The breakdown: the journal's share, then the floors (floor_test.go), the same call to
	// servers with nothing of sandboxer in them.
	b.Run("client=go-sdk/isolation=off/journal=off", func(b *testing.B) {
		cs := newEnv(b).startMCP(b, "--run-id", "bench", "--node-id", "n", "--isolation", "off", "--journal", "off")
		benchAgainstBare(b, sdkCallTrue(cs))
	})
	b.Run("floor=raw/client=wire", func(b *testing.B) {
		c := startWireClientCmd(b, floorCommand(b, "raw"))
		benchAgainstBare(b, func(b *testing.B) {
			c.roundTrip(b, "tools/call", `{"name":"bash","arguments":{"cmd":"/bin/true"}}`)
		})
	})
	for _, mode := range []string{"raw", "go-sdk"} {
		b.Run("floor="+mode+"/client=go-sdk", func(b *testing.B) {
			cs := startFloorSDK(b, mode)
			benchAgainstBare(b, sdkCallTrue(cs))
		})
	}
}

// sdkCallTrue is a bash call of /bin/true through the go-sdk client.
func sdkCallTrue(cs *mcp.ClientSession) func(b *testing.B) {
	return func(b *testing.B) {
		if res := callTool(b, cs, "bash", map[string]any{"cmd": "/bin/true"}); res.IsError {
			b.Fatal(text(b, res))
		}
	}
}

// settle is the pause after each call.
const settle = time.Millisecond

// benchAgainstBare runs call and a bare exec of /bin/true alternately and reports both medians.
func benchAgainstBare(b *testing.B, call func(b *testing.B)) {
	call(b) // warm up: the journal file, prepared statements, the page cache
	lat := make([]time.Duration, 0, b.N)
	bare := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(start))
		start = time.Now()
		call(b)
		lat = append(lat, time.Since(start))
		time.Sleep(settle) // the server's work after its reply (the journal row) is not the next bare exec's
	}
	m, base := median(lat), median(bare)
	b.ReportMetric(float64(m.Nanoseconds()), "median-ns")
	b.ReportMetric(float64(base.Nanoseconds()), "bare-median-ns")
	b.ReportMetric(float64(m)/float64(base), "x-bare")
}

func median(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// wireClient is a minimal MCP stdio client: one JSON-RPC message per line each way.
type wireClient struct {
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	cmd *exec.Cmd
}

func startWireClient(tb testing.TB, e *env, args ...string) *wireClient {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stderr = e.work, e.vars, os.Stderr
	return startWireClientCmd(tb, cmd)
}

// startWireClientCmd starts cmd, an MCP server on stdio, and initializes a session with it.
func startWireClientCmd(tb testing.TB, cmd *exec.Cmd) *wireClient {
	tb.Helper()
	in, err := cmd.StdinPipe()
	require.NoError(tb, err)
	out, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	tb.Cleanup(func() {
		in.Close() // the server exits at the end of its input
		if err := cmd.Wait(); err != nil {
			tb.Errorf("%s: %v", cmd.Path, err)
		}
	})
	c := &wireClient{in: in, out: bufio.NewReader(out), cmd: cmd}
	c.roundTrip(tb, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	c.send(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// send writes one line.
func (c *wireClient) send(tb testing.TB, line string) {
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		tb.Fatal(err)
	}
}

// reply reads one line.
func (c *wireClient) reply(tb testing.TB) []byte {
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		tb.Fatal(err)
	}
	return line
}

// roundTrip sends one request and returns the result of its response.
func (c *wireClient) roundTrip(tb testing.TB, method, params string) json.RawMessage {
	c.id++
	c.send(tb, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, params))
	line := c.reply(tb)
	var resp struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.ID != c.id || resp.Error != nil {
		tb.Fatalf("response to %s: %s (%v)", method, strings.TrimSpace(string(line)), err)
	}
	return resp.Result
}

func (c *wireClient) callTrue(b *testing.B) {
	res := c.roundTrip(b, "tools/call", `{"name":"bash","arguments":{"cmd":"/bin/true"}}`)
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError {
		b.Fatalf("bash /bin/true: %s", res)
	}
}

// BenchmarkOneShot measures whole one-shot CLI invocations as a CI job or an agent framework
// runs them (one process per tool call), each interleaved with the same work done bare:
//
//   - help: `sandboxer --help` against a Go hello world's equivalent, `/bin/true`;
//   - read: `sandboxer tool read` of a 3-byte file, journal on (SQLite in the state directory),
//     against `cat` of the file;
//   - bash-true: `sandboxer tool bash` of `true` with the defaults (journal on, isolation auto),
//     against `sh -c true`.
//
// Each runs served (the front hands the call to the resident server, the default) and direct
// (SANDBOXER_SERVER=off: the front execs the engine, which does all the work in a process of its
// own). It reports the medians and p99s of both (median-ns, p99-ns, bare-median-ns,
// bare-p99-ns) and the ratio of the medians, x-bare.
//
//	go test -run '^$' -bench OneShot -benchtime 200x -count 1 ./cmd/sandboxer/
func BenchmarkOneShot(b *testing.B) {
	e := newEnv(b)
	e.write("a.txt", "hi\n")
	for _, bc := range []struct {
		name string
		args []string
		bare []string
	}{
		{"help", []string{"--help"}, []string{"/bin/true"}},
		{"read", []string{"tool", "read", "--input", `{"path":"a.txt"}`}, []string{"cat", "a.txt"}},
		{"bash-true", []string{"tool", "bash", "--input", `{"cmd":"true"}`}, []string{"sh", "-c", "true"}},
	} {
		for _, mode := range []string{"served", "direct"} {
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				vars := e.vars
				if mode == "direct" {
					vars = append(slices.Clip(vars), "SANDBOXER_SERVER=off")
				}
				run := func(argv []string) time.Duration {
					cmd := exec.Command(argv[0], argv[1:]...)
					cmd.Dir, cmd.Env = e.work, vars
					start := time.Now()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%q: %v: %s", argv, err, out)
					}
					return time.Since(start)
				}
				self := append([]string{bin}, bc.args...)
				run(self) // warm up: the journal's schema, the page cache
				var lat, bare []time.Duration
				for b.Loop() {
					bare = append(bare, run(bc.bare))
					lat = append(lat, run(self))
				}
				m, base := median(lat), median(bare)
				b.ReportMetric(float64(m.Nanoseconds()), "median-ns")
				b.ReportMetric(float64(p99(lat).Nanoseconds()), "p99-ns")
				b.ReportMetric(float64(base.Nanoseconds()), "bare-median-ns")
				b.ReportMetric(float64(p99(bare).Nanoseconds()), "bare-p99-ns")
				b.ReportMetric(float64(m)/float64(base), "x-bare")
			})
		}
	}
}

func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[(len(lat)*99)/100]
}
