package telemetry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools"
)

var bashCall = Call{RunID: "r", NodeID: "n", Attempt: 1, Seq: 1, Tool: "bash", Input: []byte(`{"cmd":"true"}`)}

// With neither tracing nor metrics on, a call's telemetry allocates nothing.
func TestStartCallOffAllocatesNothing(t *testing.T) {
	require.Nil(t, tracer.Load())
	require.Nil(t, metrics.Load())
	res := &tools.Result{Value: tools.BashResult{}}
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		StartCall(context.Background(), bashCall)(res, nil)
	}))
}

// BenchmarkStartCall is the telemetry of one call alone, off and with metrics.
//
//	go test -run '^$' -bench StartCall -benchmem ./internal/telemetry/
func BenchmarkStartCall(b *testing.B) {
	ctx := context.Background()
	res := &tools.Result{Value: tools.BashResult{}}
	b.Run("off", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			StartCall(ctx, bashCall)(res, nil)
		}
	})
	b.Run("metrics", func(b *testing.B) {
		srv, err := ServeMetrics("127.0.0.1:0")
		require.NoError(b, err)
		defer srv.Close()
		b.ReportAllocs()
		for b.Loop() {
			StartCall(ctx, bashCall)(res, nil)
		}
	})
}

func TestConfigured(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	assert.False(t, Configured("", env()))
	assert.True(t, Configured("http://127.0.0.1:4318", env()))
	assert.True(t, Configured("", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")))
	assert.True(t, Configured("", env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")))
	assert.False(t, Configured("http://127.0.0.1:4318", env("OTEL_SDK_DISABLED", "true")))
	assert.False(t, Configured("", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:4318", "OTEL_TRACES_EXPORTER", "none")))
	// Not configured: nothing is built.
	require.NoError(t, EnableTracing("", env()))
	assert.Nil(t, tracer.Load())
	for _, bad := range []string{"ftp://x", "127.0.0.1:4318", "http://"} {
		assert.ErrorContains(t, EnableTracing(bad, env()), "--otlp-endpoint", bad)
	}
	assert.Nil(t, tracer.Load())
}

// The outcome of a call: its code, exit code and egress decisions, from a result or an error.
func TestOutcome(t *testing.T) {
	d := []egress.Decision{{Host: "a.example", Port: 443, Allowed: true}, {Host: "b.example", Port: 80, Reason: "not in the allowlist"}}
	o := outcomeOf(&tools.Result{Value: tools.BashResult{ExitCode: 0, Network: d, Receipt: adapter.Receipt{StdoutBytes: 7}}}, nil)
	assert.Equal(t, outcome{exitCode: 0, network: d, receipt: &adapter.Receipt{StdoutBytes: 7}}, o)
	o = outcomeOf(&tools.Result{Value: "text"}, nil)
	assert.Equal(t, outcome{exitCode: -1}, o)
	e := errs.New(errs.CommandFailed, "bash", "", "command exited with code 2:\nsecret output")
	e.Details = map[string]any{"exitCode": 2, "network": d, "receipt": adapter.Receipt{StderrBytes: 3}}
	o = outcomeOf(nil, e)
	assert.Equal(t, "TOOL_COMMAND_FAILED", o.code)
	assert.Equal(t, &adapter.Receipt{StderrBytes: 3}, o.receipt, "a failed call's receipt, from its details")
	assert.Equal(t, 2, o.exitCode)
	assert.Equal(t, d, o.network)
	assert.NotContains(t, o.message, "secret output")
	o = outcomeOf(nil, errors.New("plain"))
	assert.Equal(t, -1, o.exitCode)
	assert.NotEmpty(t, o.code)
}

// Metrics on a unix socket: served in the Prometheus text format, counting calls by tool and
// code and the egress decisions; the socket is gone after Close, and counting stops.
func TestServeMetricsUnix(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "metrics.sock")
	srv, err := ServeMetrics("unix:" + sock)
	require.NoError(t, err)
	_, err = ServeMetrics("127.0.0.1:0")
	assert.ErrorContains(t, err, "already served")
	require.NoError(t, srv.Gauge(MetricPoolSandboxes, "test", map[string]string{"pool": "warm"}, func() float64 { return 2 }))

	ctx := context.Background()
	d := []egress.Decision{{Host: "a.example", Port: 443, Allowed: true}, {Host: "b.example", Port: 80}}
	StartCall(ctx, bashCall)(&tools.Result{Value: tools.BashResult{Network: d}}, nil)
	StartCall(ctx, Call{Tool: "read"})(nil, errs.New(errs.NotFound, "read", "x", "no such file"))

	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := client.Get("http://metrics/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	text := string(body)
	for _, line := range []string{
		`sandboxer_tool_calls_total{code="OK",tool="bash"} 1`,
		`sandboxer_tool_calls_total{code="TOOL_NOT_FOUND",tool="read"} 1`,
		`sandboxer_tool_call_duration_seconds_count{tool="bash"} 1`,
		`sandboxer_egress_decisions_total{decision="allowed"} 1`,
		`sandboxer_egress_decisions_total{decision="refused"} 1`,
		`sandboxer_pool_sandboxes{pool="warm"} 2`,
	} {
		assert.Contains(t, text, line+"\n")
	}
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))

	require.NoError(t, srv.Close())
	assert.NoFileExists(t, sock)
	assert.Nil(t, metrics.Load())
}

// FromMeta takes the caller's W3C trace context from an MCP request's _meta when tracing is on,
// and leaves the context alone otherwise.
func TestFromMeta(t *testing.T) {
	meta := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "progressToken": 1}
	ctx := context.Background()
	assert.Equal(t, ctx, FromMeta(ctx, meta), "tracing off")

	require.NoError(t, EnableTracing("http://127.0.0.1:1", func(string) string { return "" }))
	defer Shutdown(ctx)
	sc := trace.SpanContextFromContext(FromMeta(ctx, meta))
	assert.True(t, sc.IsRemote())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", sc.SpanID().String())
	assert.False(t, trace.SpanContextFromContext(FromMeta(ctx, map[string]any{"traceparent": 7})).IsValid())
}
