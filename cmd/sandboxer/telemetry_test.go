package main_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
// its calls' counts and its warm pool on that unix socket.
func TestServerMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir, err := os.MkdirTemp("", "sbx-m-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "metrics.sock")
	env := []string{"SANDBOXER_SERVER_METRICS_LISTEN=unix:" + sock}
	r := e.run("", env, "tool", "bash", "--input", `{"cmd":"echo","args":["hi"]}`)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", env, "tool", "read", "--input", `{"path":"missing.txt"}`)
	require.Equal(t, 1, r.code, r.stderr)
	require.Len(t, e.servers(), 1)

	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := client.Get("http://sandboxer/metrics")
	require.NoError(t, err, e.serverLog())
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	text := string(body)
	for _, line := range []string{
		`sandboxer_tool_calls_total{code="OK",tool="bash"} 1`,
		`sandboxer_tool_calls_total{code="TOOL_NOT_FOUND",tool="read"} 1`,
		`sandboxer_pool_journals 1`,
	} {
		assert.Contains(t, text, line+"\n")
	}
	assert.Regexp(t, `(?m)^sandboxer_pool_sandboxes\{pool="warm"\} [0-9]+$`, text)
}
