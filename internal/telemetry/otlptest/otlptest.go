// Package otlptest runs the OpenTelemetry Collector's own OTLP receiver in a test, so that the
// spans sandboxer exports are checked by the code that receives them in production, not by a
// stub. Only tests import it: the Collector stays out of the binaries.
package otlptest

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// Start runs the receiver (OTLP/HTTP only) on a loopback port until the test ends; its traces go
// to the sink returned. endpoint is its base URL (http://127.0.0.1:PORT), as
// OTEL_EXPORTER_OTLP_ENDPOINT or --otlp-endpoint take it.
func Start(t testing.TB) (endpoint string, sink *consumertest.TracesSink) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	sink = new(consumertest.TracesSink)
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	return "http://" + addr, sink
}

// Spans returns the spans of the sink whose sandboxer.run.id is runID, in the order received.
func Spans(sink *consumertest.TracesSink, runID string) []ptrace.Span {
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
