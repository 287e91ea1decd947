package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The floor servers: what an MCP bash call of /bin/true costs with nothing of sandboxer in it, so
// that BenchmarkMCPBash's figures can be read against what no server could go below. The test
// binary runs as one when floorEnv names it (see TestMain):
//
//   - raw: no SDK at all. It reads one JSON-RPC line, runs exec.Command("/bin/true").Run() for a
//     tools/call and writes a one-line result with one text block; everything else it answers
//     with the least the client accepts. Driven by the go-sdk client, it is the client's own
//     cost, the two pipe trips and the exec: the floor of any server.
//   - go-sdk: the SDK's server on stdio with one tool whose handler is the same bare exec: the
//     floor of any server built on the SDK (no journal, no tools layer, no adapter).
const floorEnv = "SANDBOXER_BENCH_FLOOR"

// runFloor serves as the floor server named mode on stdin/stdout until stdin ends.
func runFloor(mode string) error {
	switch mode {
	case "raw":
		return runRawFloor()
	case "go-sdk":
		srv := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "bash", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if err := exec.Command("/bin/true").Run(); err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "exit 0"}}}, nil
			})
		return srv.Run(context.Background(), &mcp.StdioTransport{})
	default:
		return fmt.Errorf("%s=%q: not a floor server", floorEnv, mode)
	}
}

func runRawFloor() error {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return nil // the client is gone
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			return err
		}
		if req.ID == nil {
			continue // a notification
		}
		var result string
		switch req.Method {
		case "tools/call":
			if err := exec.Command("/bin/true").Run(); err != nil {
				return err
			}
			result = `{"content":[{"type":"text","text":"exit 0"}],"resultType":"complete"}`
		case "server/discover":
			result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"resultType":"complete"}`
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"1"}}`, req.Params.ProtocolVersion)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
			if err := out.Flush(); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// floorCommand is the command that runs this test binary as the floor server mode.
func floorCommand(tb testing.TB, mode string) *exec.Cmd {
	tb.Helper()
	self, err := os.Executable()
	require.NoError(tb, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), floorEnv+"="+mode)
	cmd.Stderr = os.Stderr
	return cmd
}

// startFloorSDK connects the go-sdk client to the floor server mode.
func startFloorSDK(tb testing.TB, mode string) *mcp.ClientSession {
	tb.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "sandboxer-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: floorCommand(tb, mode)}, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// TestFloorServers checks that the floor servers do what BenchmarkMCPBash reads them as: a bash
// call through each returns the text result, with both clients where the benchmark uses them.
func TestFloorServers(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"raw", "go-sdk"} {
		cs := startFloorSDK(t, mode)
		res := callTool(t, cs, "bash", map[string]any{"cmd": "/bin/true"})
		require.False(t, res.IsError, mode)
		require.Equal(t, "exit 0", text(t, res), mode)
	}
	c := startWireClientCmd(t, floorCommand(t, "raw"))
	require.JSONEq(t, `{"content":[{"type":"text","text":"exit 0"}],"resultType":"complete"}`,
		string(c.roundTrip(t, "tools/call", `{"name":"bash","arguments":{"cmd":"/bin/true"}}`)))
}
