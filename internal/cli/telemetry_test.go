package cli

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/internal/telemetry"
)

// startOTLPReceiver runs the OpenTelemetry Collector's own OTLP receiver (HTTP only) on a
// loopback port, its traces going to the sink it returns, and gives its base URL.
func startOTLPReceiver(t *testing.T) (string, *consumertest.TracesSink) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	sink := new(consumertest.TracesSink)
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	return "http://" + addr, sink
}

// spansOf returns the spans the sink holds whose sandboxer.run.id is runID.
func spansOf(sink *consumertest.TracesSink, runID string) []ptrace.Span {
	var out []ptrace.Span
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			ss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < ss.Len(); j++ {
				spans := ss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					if v, ok := spans.At(k).Attributes().Get("sandboxer.run.id"); ok && v.Str() == runID {
						out = append(out, spans.At(k))
					}
				}
			}
		}
	}
	return out
}

// TestTraces: `sandboxer tool bash` with --otlp-endpoint exports the call's span to the
// Collector's OTLP receiver before the invocation returns, with the journal's position of the
// call, the tool, the argv, the exit code and error code, and the egress proxy's decisions as
// events.
func TestTraces(t *testing.T) {
	endpoint, sink := startOTLPReceiver(t)
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
	spans := spansOf(sink, "trace-run")
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

	assert.Equal(t, []any{"echo", "hello", "world"}, attr(ok, "process.command_args").Slice().AsRaw())
	assert.EqualValues(t, 0, attr(ok, "process.exit.code").Int())
	_, hasErr := ok.Attributes().Get("error.type")
	assert.False(t, hasErr)
	assert.Equal(t, ptrace.StatusCodeUnset, ok.Status().Code())

	// The egress proxy's decisions are the span's events.
	if !local.Probe().Network {
		t.Skip("no network namespace here: the egress proxy is not attached (its events are not tested)")
	}
	code, out = tool(`{"cmd":"sh","args":["-c","busybox wget -q -O - \"$(cat url.txt)\""]}`, "--allow-host", "allowed.example", "--run-id", "trace-egress")
	require.Equal(t, 1, code, out)
	spans = spansOf(sink, "trace-egress")
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

// TestTracesOff: without an endpoint nothing is exported and a call's telemetry allocates
// nothing.
func TestTracesOff(t *testing.T) {
	assert.False(t, telemetry.Configured("", func(string) string { return "" }))
	assert.True(t, telemetry.Configured("", func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}[k]
	}))
	assert.False(t, telemetry.Configured("http://127.0.0.1:4318", func(k string) string {
		return map[string]string{"OTEL_SDK_DISABLED": "true"}[k]
	}))
	var stderr strings.Builder
	code := run(context.Background(), []string{"tool", "read", "--root", t.TempDir(), "--journal", "off", "--otlp-endpoint", "ftp://x", "--input", `{"path":"a"}`},
		Streams{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "otlp-endpoint")
}
