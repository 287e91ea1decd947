package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/telemetry"
	"github.com/sandboxer/sandboxer/internal/telemetry/otlptest"
	"github.com/sandboxer/sandboxer/tools"
)

// TestTraces: `sandboxer tool bash` with --otlp-endpoint exports the call's span to the
// Collector's OTLP receiver before the invocation returns, with the journal's position of the
// call, the tool, the argv, the exit code and error code, and the egress proxy's decisions as
// events.
func TestTraces(t *testing.T) {
	endpoint, sink := otlptest.Start(t)
	t.Cleanup(func() { telemetry.Shutdown(context.Background()) })
	root, state := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "url.txt"), []byte("http://evil.example/"), 0o600))
	tool := func(input string, extra ...string) (int, string) {
		var stdout, stderr strings.Builder
		args := append([]string{"tool", "bash", "--root", root, "--state-dir", state, "--otlp-endpoint", endpoint,
			"--run-id", "trace-run", "--node-id", "n1", "--iteration", "2", "--attempt", "3", "--input", input}, extra...)
		code := run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		return code, stdout.String() + stderr.String()
	}

	code, out := tool(`{"cmd":"sh","args":["-c","echo hi; exit 3"]}`)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "TOOL_COMMAND_FAILED")
	code, out = tool(`{"cmd":"echo","args":["hello","world"]}`)
	require.Equal(t, 0, code, out)

	// Flushed before run returned: nothing to wait for.
	spans := otlptest.Spans(sink, "trace-run")
	require.Len(t, spans, 2)
	failed, ok := spans[0], spans[1]
	attr := func(s ptrace.Span, k string) pcommon.Value {
		v, found := s.Attributes().Get(k)
		require.True(t, found, "attribute %s of %s", k, s.Name())
		return v
	}
	for i, s := range spans {
		assert.Equal(t, "execute_tool bash", s.Name())
		assert.Equal(t, "bash", attr(s, "gen_ai.tool.name").Str())
		assert.Equal(t, "n1", attr(s, "sandboxer.node.id").Str())
		assert.EqualValues(t, 2, attr(s, "sandboxer.iteration").Int())
		assert.EqualValues(t, 3, attr(s, "sandboxer.attempt").Int())
		assert.EqualValues(t, i+1, attr(s, "sandboxer.seq").Int(), "the journal's seq")
		assert.Less(t, s.StartTimestamp(), s.EndTimestamp())
	}
	assert.Equal(t, []any{"sh", "-c", "echo hi; exit 3"}, attr(failed, "process.command_args").Slice().AsRaw())
	assert.EqualValues(t, 3, attr(failed, "process.exit.code").Int())
	assert.Equal(t, "TOOL_COMMAND_FAILED", attr(failed, "error.type").Str())
	assert.Equal(t, ptrace.StatusCodeError, failed.Status().Code())
	assert.Contains(t, failed.Status().Message(), "exited with code 3")
	assert.NotContains(t, failed.Status().Message(), "hi", "the output stays out of the span")

	// The receipt: what each command wrote, and (the stat diff) no workspace path changed.
	assert.EqualValues(t, len("hi\n"), attr(failed, "sandboxer.receipt.stdout_bytes").Int())
	assert.EqualValues(t, len("hello world\n"), attr(ok, "sandboxer.receipt.stdout_bytes").Int())
	assert.Positive(t, attr(ok, "sandboxer.receipt.wall_us").Int())
	assert.EqualValues(t, 0, attr(ok, "sandboxer.receipt.paths.created").Int())
	code, out = tool(`{"cmd":"sh","args":["-c","echo new > made.txt"]}`, "--run-id", "trace-receipt")
	require.Equal(t, 0, code, out)
	spans = otlptest.Spans(sink, "trace-receipt")
	require.Len(t, spans, 1)
	assert.EqualValues(t, 1, attr(spans[0], "sandboxer.receipt.paths.created").Int(), "made.txt")

	assert.Equal(t, []any{"echo", "hello", "world"}, attr(ok, "process.command_args").Slice().AsRaw())
	assert.EqualValues(t, 0, attr(ok, "process.exit.code").Int())
	_, hasErr := ok.Attributes().Get("error.type")
	assert.False(t, hasErr)
	assert.Equal(t, ptrace.StatusCodeUnset, ok.Status().Code())

	// A caller's W3C trace context (the HTTP API's traceparent header) makes the call's span its
	// child.
	ta := newTestAPI(t, nil)
	sb := ta.create("", api.CreateRequest{Adapter: "memory"})
	req, err := http.NewRequest("POST", ta.srv.URL+"/v1/sandboxes/"+sb.ID+"/tools/read", strings.NewReader(`{"path":"none"}`))
	require.NoError(t, err)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.Header.Set("Sandboxer-Run-Id", "trace-api")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, telemetry.Flush(context.Background()))
	spans = otlptest.Spans(sink, "trace-api")
	require.Len(t, spans, 1)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", spans[0].TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", spans[0].ParentSpanID().String())
	assert.Equal(t, "TOOL_NOT_FOUND", attr(spans[0], "error.type").Str())

	// The egress proxy's decisions are the span's events.
	if !local.Probe().Network {
		t.Skip("no network namespace here: the egress proxy is not attached (its events are not tested)")
	}
	code, out = tool(`{"cmd":"sh","args":["-c","busybox wget -q -O - \"$(cat url.txt)\""]}`, "--allow-host", "allowed.example", "--run-id", "trace-egress")
	require.Equal(t, 1, code, out)
	spans = otlptest.Spans(sink, "trace-egress")
	require.Len(t, spans, 1)
	events := spans[0].Events()
	require.Equal(t, 1, events.Len(), out)
	ev := events.At(0)
	assert.Equal(t, "egress", ev.Name())
	get := func(k string) pcommon.Value { v, _ := ev.Attributes().Get(k); return v }
	assert.Equal(t, "evil.example", get("server.address").Str())
	assert.EqualValues(t, 80, get("server.port").Int())
	assert.False(t, get("sandboxer.egress.allowed").Bool())
	assert.NotEmpty(t, get("sandboxer.egress.reason").Str())
}

// TestOTLPEndpointInvalid: an --otlp-endpoint that is not an http(s) URL is a usage error.
func TestOTLPEndpointInvalid(t *testing.T) {
	var stderr strings.Builder
	code := run(context.Background(), []string{"tool", "read", "--root", t.TempDir(), "--journal", "off", "--otlp-endpoint", "ftp://x", "--input", `{"path":"a"}`},
		Streams{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "otlp-endpoint")
}

// BenchmarkCallTelemetry is the cost of telemetry per tool call: the same call (read of a small
// file on the memory adapter, no journal) with telemetry off, with metrics served, and with
// spans exported to the Collector's OTLP receiver on loopback (batched: the export runs beside
// the calls). The differences between the three are what telemetry adds.
//
//	go test -run '^$' -bench CallTelemetry -benchmem ./internal/cli/
func BenchmarkCallTelemetry(b *testing.B) {
	ctx := context.Background()
	sb, err := memory.New(memory.Config{})
	require.NoError(b, err)
	defer sb.Stop(ctx)
	require.NoError(b, sb.WriteFile(ctx, "a.txt", []byte("hello")))
	cl := &caller{base: *tools.NewContext(sb), warn: io.Discard}
	input := json.RawMessage(`{"path":"a.txt"}`)
	bench := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := cl.call(ctx, tools.Read, input); !r.OK {
				b.Fatal(r.Text())
			}
		}
	}
	b.Run("off", bench)
	b.Run("metrics", func(b *testing.B) {
		srv, err := telemetry.ServeMetrics("127.0.0.1:0")
		require.NoError(b, err)
		defer srv.Close()
		bench(b)
	})
	b.Run("otlp", func(b *testing.B) {
		endpoint, sink := otlptest.Start(b)
		require.NoError(b, telemetry.EnableTracing(endpoint, func(string) string { return "" }))
		bench(b)
		require.NoError(b, telemetry.Shutdown(ctx))
		b.ReportMetric(float64(sink.SpanCount()), "spans-received")
	})
}

// BenchmarkEnableTracing is what turning tracing on costs a process once: building the OTLP/HTTP
// exporter and the tracer provider (no connection is made until the first export).
//
//	go test -run '^$' -bench EnableTracing -benchmem ./internal/cli/
func BenchmarkEnableTracing(b *testing.B) {
	ctx := context.Background()
	getenv := func(string) string { return "" }
	for b.Loop() {
		require.NoError(b, telemetry.EnableTracing("http://127.0.0.1:4318", getenv))
		require.NoError(b, telemetry.Shutdown(ctx))
	}
}
