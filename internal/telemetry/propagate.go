package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// getter is a read-only W3C Trace Context carrier over a lookup (HTTP headers, MCP _meta).
type getter func(string) string

func (g getter) Get(key string) string { return g(key) }
func (getter) Set(string, string)      {}
func (getter) Keys() []string          { return []string{"traceparent", "tracestate"} }

// Remote returns ctx with the caller's span, when get finds a valid W3C traceparent (and
// tracestate): the call's span is then its child, in the caller's trace. get looks a key up
// ("traceparent", "tracestate"; "" when absent). Without tracing it returns ctx untouched.
func Remote(ctx context.Context, get func(key string) string) context.Context {
	if tracer.Load() == nil {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, getter(get))
}

// MetaGetter looks W3C trace context keys up in an MCP request's _meta (string values only).
func MetaGetter(meta map[string]any) func(string) string {
	return func(key string) string {
		s, _ := meta[key].(string)
		return s
	}
}
