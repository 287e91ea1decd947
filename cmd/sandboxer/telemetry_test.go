package main_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/internal/telemetry/otlptest"
)

// TestTracesExported: with OTEL_EXPORTER_OTLP_ENDPOINT, a one-shot call's span reaches the
// Collector's OTLP receiver before the call returns, whether the resident server ran it or a
// process of its own that then exited.
func TestTracesExported(t *testing.T) {
	t.Parallel()
	endpoint, sink := otlptest.Start(t)
	e := newEnv(t)
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint}
	for _, tc := range []struct {
		run string
		env []string
	}{
		{"served", otel},
		{"own-process", append([]string{"SANDBOXER_SERVER=off"}, otel...)},
	} {
		r := e.run("", tc.env, "tool", "bash", "--run-id", tc.run, "--input", `{"cmd":"echo","args":["hi"]}`)
		require.Equal(t, 0, r.code, r.stderr)
		spans := otlptest.Spans(sink, tc.run)
		require.Len(t, spans, 1, tc.run)
		args, _ := spans[0].Attributes().Get("process.command_args")
		assert.Equal(t, []any{"echo", "hi"}, args.Slice().AsRaw(), tc.run)
		code, _ := spans[0].Attributes().Get("process.exit.code")
		assert.EqualValues(t, 0, code.Int(), tc.run)
	}
	assert.Len(t, e.servers(), 1, "the served call started a server")
}

// TestServerMetrics: the resident server started with SANDBOXER_SERVER_METRICS_LISTEN serves
// its calls' counts and its warm pool there (the unix socket form: internal/telemetry's tests).
func TestServerMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	env := []string{"SANDBOXER_SERVER_METRICS_LISTEN=" + addr}
	r := e.run("", env, "tool", "bash", "--input", `{"cmd":"echo","args":["hi"]}`)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", env, "tool", "read", "--input", `{"path":"missing.txt"}`)
	require.Equal(t, 1, r.code, r.stderr)
	require.Len(t, e.servers(), 1)

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err, e.serverLog())
	defer resp.Body.Close()
	scraped, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(scraped)
	want := `sandboxer_tool_calls_total{code="OK",tool="bash"} 1
sandboxer_tool_calls_total{code="TOOL_NOT_FOUND",tool="read"} 1
sandboxer_pool_journals 1`
	for line := range strings.Lines(want) {
		assert.Contains(t, text, strings.TrimSuffix(line, "\n")+"\n")
	}
	assert.Regexp(t, `(?m)^sandboxer_pool_sandboxes\{pool="warm"\} [0-9]+$`, text)
}
