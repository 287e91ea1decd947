package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// getter is a read-only W3C Trace Context carrier over a lookup (HTTP headers, MCP _meta).
type getter func(string) string

func (g getter) Get(key string) string { return g(key) }
func (getter) Set(string, string)      {}
func (getter) Keys() []string          { return []string{"traceparent", "tracestate"} }

// remote returns ctx with the caller's span, when get finds a valid W3C traceparent (and
// tracestate): the call's span is then its child, in the caller's trace.
func remote(ctx context.Context, get func(key string) string) context.Context {
	return propagation.TraceContext{}.Extract(ctx, getter(get))
}

// FromHeader is ctx with the span of an HTTP request's traceparent and tracestate headers, if
// valid. Without tracing it returns ctx at once.
func FromHeader(ctx context.Context, h http.Header) context.Context {
	if tracer.Load() == nil {
		return ctx
	}
	return remote(ctx, h.Get)
}

// FromMeta is ctx with the span of an MCP request's _meta traceparent and tracestate (string
// values), if valid. Without tracing it returns ctx at once.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if tracer.Load() == nil {
		return ctx
	}
	return remote(ctx, func(key string) string {
		s, _ := meta[key].(string)
		return s
	})
}
