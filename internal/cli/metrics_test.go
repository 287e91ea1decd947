package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/telemetry"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestMetricsListenRefused: --metrics-listen on anything but loopback or a unix socket is a usage
// error that names the address.
func TestMetricsListenRefused(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:9464", ":9464", "192.0.2.1:9464", "[::]:9464", "unix:relative.sock", "nonsense"} {
		var stderr strings.Builder
		code := run(context.Background(), []string{"mcp", "--root", t.TempDir(), "--journal", "off", "--metrics-listen", addr},
			Streams{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
		assert.Equal(t, 2, code, addr)
		assert.Contains(t, stderr.String(), "--metrics-listen", addr)
		assert.Contains(t, stderr.String(), "loopback", addr)
	}
}

// freePort is a loopback TCP address free at the time of the call.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// startPrometheus runs Debian's prometheus in a temporary directory, scraping target every
// second, and returns its HTTP API's base URL once it is ready.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin := testenv.NeedPrometheus(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sandboxer
    static_configs:
      - targets: ['%s']
`, target)), 0o600))
	web := freePort(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", log.String())
		}
	})
	base := "http://" + web
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		require.True(t, time.Now().Before(deadline), "prometheus not ready: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
}

// promQuery runs an instant query and returns the value of its single sample (ok false when the
// result is empty).
func promQuery(t *testing.T, base, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Equal(t, "success", r.Status, q)
	if len(r.Data.Result) == 0 {
		return 0, false
	}
	require.Len(t, r.Data.Result, 1, q)
	v, err := strconv.ParseFloat(r.Data.Result[0].Value[1].(string), 64)
	require.NoError(t, err)
	return v, true
}

var metricsAddr = regexp.MustCompile(`metrics on tcp://(\S+)/metrics`)

// TestMetricsScrapedByPrometheus: `sandboxer mcp --metrics-listen` serves its metrics; a real
// Prometheus scrapes them while real calls run, and its query API counts the calls by tool and
// code, their durations, the sandbox and the egress proxy's refusal.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	testenv.NeedPrometheus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "url.txt"), []byte("http://evil.example/"), 0o600))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"mcp", "--root", root, "--state-dir", t.TempDir(), "--allow-host", "allowed.example",
			"--metrics-listen", "127.0.0.1:0"}, Streams{In: inR, Out: outW, Err: errW})
		outW.Close()
		errW.Close()
	}()
	lines := bufio.NewScanner(errR)
	var target string
	for target == "" && lines.Scan() {
		if m := metricsAddr.FindStringSubmatch(lines.Text()); m != nil {
			target = m[1]
		}
	}
	require.NotEmpty(t, target, "no metrics address on stderr")
	go io.Copy(io.Discard, errR)

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	prom := startPrometheus(t, target)

	call := func(tool string, args map[string]any) bool {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		return res.IsError
	}
	for i := 0; i < 3; i++ {
		require.False(t, call("bash", map[string]any{"cmd": "echo", "args": []string{strconv.Itoa(i)}}))
	}
	require.True(t, call("bash", map[string]any{"cmd": "false"}))
	require.True(t, call("read", map[string]any{"path": "missing.txt"}))
	failedBash, refused := 1.0, 0.0
	if local.Probe().Network {
		require.True(t, call("bash", map[string]any{"cmd": "sh", "args": []string{"-c", `busybox wget -q -O - "$(cat url.txt)"`}}))
		failedBash, refused = 2, 1
	}

	// Wait for a scrape after the last call.
	total := 4 + failedBash
	deadline := time.Now().Add(60 * time.Second)
	for {
		if v, ok := promQuery(t, prom, `sum(sandboxer_tool_calls_total)`); ok && v == total {
			break
		}
		require.True(t, time.Now().Before(deadline), "prometheus did not scrape %d calls in time", int(total))
		time.Sleep(200 * time.Millisecond)
	}
	for q, want := range map[string]float64{
		`up{job="sandboxer"}`:                                                1,
		`sandboxer_tool_calls_total{tool="bash",code="OK"}`:                  3,
		`sandboxer_tool_calls_total{tool="bash",code="TOOL_COMMAND_FAILED"}`: failedBash,
		`sandboxer_tool_calls_total{tool="read",code="TOOL_NOT_FOUND"}`:      1,
		`sandboxer_tool_call_duration_seconds_count{tool="bash"}`:            3 + failedBash,
		`sandboxer_tool_call_duration_seconds_count{tool="read"}`:            1,
		`sandboxer_sandboxes`:                                                1,
		`sandboxer_egress_decisions_total{decision="refused"}`:               refused,
		`sandboxer_egress_decisions_total{decision="allowed"}`:               0,
	} {
		v, ok := promQuery(t, prom, q)
		assert.True(t, ok, "%s: no sample", q)
		assert.Equal(t, want, v, q)
	}
	v, ok := promQuery(t, prom, `sandboxer_tool_call_duration_seconds_sum{tool="bash"}`)
	assert.True(t, ok && v > 0, "bash durations sum to %v", v)

	cs.Close()
	inW.Close()
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-ctx.Done():
		t.Fatal("mcp did not end")
	}
}

// TestServeMetrics: the HTTP API server's metrics count its tool calls and its live sandboxes.
func TestServeMetrics(t *testing.T) {
	ms, err := telemetry.ServeMetrics("127.0.0.1:0")
	require.NoError(t, err)
	defer ms.Close()
	ta := newTestAPI(t, nil, func(o *apiOptions) { o.Metrics = ms.Metrics })
	a := ta.create("", api.CreateRequest{Adapter: "memory"})
	ta.create("", api.CreateRequest{Adapter: "memory"})
	status, data := ta.do("POST", "/v1/sandboxes/"+a.ID+"/tools/write", "", map[string]any{"path": "a.txt", "content": "x"})
	require.Equal(t, http.StatusOK, status, "%s", data)

	resp, err := http.Get("http://" + ms.Addr().String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	scraped, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(scraped), "\nsandboxer_sandboxes 2\n")
	assert.Contains(t, string(scraped), "\n"+`sandboxer_tool_calls_total{code="OK",tool="write"} 1`+"\n")
	status, data = ta.do("DELETE", "/v1/sandboxes/"+a.ID, "", nil)
	require.Less(t, status, 300, "%s", data)
}
