// Package telemetry is what operators see of sandboxer in the tools they already run: an
// OpenTelemetry span per tool call, exported over OTLP/HTTP when configured (EnableTracing), and
// Prometheus metrics of a long-running process (ServeMetrics). Both are process-wide and off by
// default: a call then pays one atomic load for each (StartCall), nothing is built, nothing
// listens. docs/observability.md lists the attributes, events and metric names.
package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools"
)

// ServiceName is the service.name of the spans' resource (unless OTEL_SERVICE_NAME says another).
const ServiceName = "sandboxer"

// The OpenTelemetry environment variables that ask for an OTLP exporter (any one non-empty).
var endpointVars = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}

// Configured reports whether tracing is asked for: endpoint (the otlp-endpoint setting) or one
// of the OTEL_EXPORTER_OTLP_*ENDPOINT variables of getenv is set, and neither OTEL_SDK_DISABLED
// (true) nor OTEL_TRACES_EXPORTER (none) turns it off.
func Configured(endpoint string, getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	if endpoint != "" {
		return true
	}
	for _, v := range endpointVars {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}

var tracing struct {
	mu sync.Mutex
	tp *sdktrace.TracerProvider
}

// tracer is the tracer of the process's provider; nil while tracing is off.
var tracer atomic.Pointer[trace.Tracer]

// EnableTracing builds the process's OTLP/HTTP exporter, once, when Configured says so (else
// it does nothing). endpoint, when given, is the collector's base URL (http://127.0.0.1:4318;
// spans go to its /v1/traces unless the URL has a path of its own) and wins over the
// environment; the other OTEL_EXPORTER_OTLP_* variables (headers, timeout, certificates) apply
// as the SDK reads them. Spans are batched: Flush sends them.
func EnableTracing(endpoint string, getenv func(string) string) error {
	if !Configured(endpoint, getenv) {
		return nil
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--otlp-endpoint %q: want the collector's URL, like http://127.0.0.1:4318", endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	tracing.mu.Lock()
	defer tracing.mu.Unlock()
	if tracing.tp != nil {
		return nil
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return fmt.Errorf("OTLP exporter: %w", err)
	}
	res := resource.Default() // it reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	if getenv("OTEL_SERVICE_NAME") == "" {
		if named, err := resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", ServiceName))); err == nil {
			res = named
		}
	}
	tracing.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := tracing.tp.Tracer("github.com/sandboxer/sandboxer")
	tracer.Store(&t)
	return nil
}

// Flush sends the spans ended so far (a CLI invocation calls it before it returns, so that a
// short-lived process loses none). Without tracing it does nothing.
func Flush(ctx context.Context) error {
	tracing.mu.Lock()
	tp := tracing.tp
	tracing.mu.Unlock()
	if tp == nil {
		return nil
	}
	return tp.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter; tracing is off after it (EnableTracing may build a
// new one).
func Shutdown(ctx context.Context) error {
	tracing.mu.Lock()
	tp := tracing.tp
	tracing.tp = nil
	tracer.Store(nil)
	tracing.mu.Unlock()
	if tp == nil {
		return nil
	}
	return tp.Shutdown(ctx)
}

// Call is what the span and the metrics of one tool call say about its position: the journal's
// key of the call (run, node, iteration, attempt, seq) and the tool.
type Call struct {
	RunID, NodeID      string
	Iteration, Attempt int
	Seq                int
	Tool               string
	// Input is the call's JSON input; only bash's argv is read from it.
	Input json.RawMessage
}

// End completes what StartCall began with the tool's result or error.
type End func(res *tools.Result, err error)

func noEnd(*tools.Result, error) {}

// StartCall begins the telemetry of one tool call: a span when tracing is on, the metrics'
// clock when metrics are served. Call the End it returns once the tool has returned. With both
// off it returns at once, allocating nothing.
func StartCall(ctx context.Context, c Call) End {
	tp := tracer.Load()
	m := metrics.Load()
	if tp == nil && m == nil {
		return noEnd
	}
	started := time.Now()
	var span trace.Span
	if tp != nil {
		_, span = (*tp).Start(ctx, "execute_tool "+c.Tool, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(started), trace.WithAttributes(callAttributes(c)...))
	}
	return func(res *tools.Result, err error) {
		o := outcomeOf(res, err)
		if m != nil {
			m.record(c.Tool, o, time.Since(started))
		}
		if span != nil {
			endSpan(span, o)
		}
	}
}

// callAttributes are the span attributes known before the call runs.
func callAttributes(c Call) []attribute.KeyValue {
	kv := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Tool),
		attribute.String("sandboxer.run.id", c.RunID),
		attribute.String("sandboxer.node.id", c.NodeID),
		attribute.Int("sandboxer.iteration", c.Iteration),
		attribute.Int("sandboxer.attempt", c.Attempt),
		attribute.Int("sandboxer.seq", c.Seq),
	}
	if c.Tool == tools.Bash.Name() {
		var in tools.BashInput
		if json.Unmarshal(c.Input, &in) == nil && in.Cmd != "" {
			kv = append(kv, attribute.StringSlice("process.command_args", append([]string{in.Cmd}, in.Args...)))
		}
	}
	return kv
}

// outcome is what the span and the metrics say of a call's end.
type outcome struct {
	code     string // "" for success
	message  string
	exitCode int // -1: none (not bash, or the command did not run to an exit)
	network  []egress.Decision
	receipt  *adapter.Receipt // bash: what the command cost and changed
}

func outcomeOf(res *tools.Result, err error) outcome {
	o := outcome{exitCode: -1}
	if err != nil {
		e := errs.As(err)
		o.code, o.message = string(e.Code), firstLine(err.Error(), maxStatusMessage)
		if n, ok := e.Details["exitCode"].(int); ok {
			o.exitCode = n
		}
		o.network, _ = e.Details["network"].([]egress.Decision)
		if r, ok := e.Details["receipt"].(adapter.Receipt); ok {
			o.receipt = &r
		}
		return o
	}
	if res == nil {
		return o
	}
	switch v := res.Value.(type) {
	case tools.BashResult:
		o.exitCode, o.network, o.receipt = v.ExitCode, v.Network, &v.Receipt
	case *tools.BashResult:
		o.exitCode, o.network, o.receipt = v.ExitCode, v.Network, &v.Receipt
	}
	return o
}

// maxStatusMessage bounds the span status's message: the error's first line (a failed command's
// output, which follows it, stays in the journal).
const maxStatusMessage = 512

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSuffix(s[:i], ":")
	}
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "")
	}
	return s
}

func endSpan(span trace.Span, o outcome) {
	if o.exitCode >= 0 {
		span.SetAttributes(attribute.Int("process.exit.code", o.exitCode))
	}
	if o.receipt != nil {
		span.SetAttributes(receiptAttributes(*o.receipt)...)
	}
	for _, d := range o.network {
		kv := []attribute.KeyValue{
			attribute.String("server.address", d.Host),
			attribute.Int("server.port", d.Port),
			attribute.Bool("sandboxer.egress.allowed", d.Allowed),
			attribute.Int64("sandboxer.egress.bytes_in", d.BytesIn),
			attribute.Int64("sandboxer.egress.bytes_out", d.BytesOut),
		}
		if d.Reason != "" {
			kv = append(kv, attribute.String("sandboxer.egress.reason", d.Reason))
		}
		span.AddEvent("egress", trace.WithAttributes(kv...))
	}
	if o.code != "" {
		span.SetAttributes(attribute.String("error.type", o.code))
		span.SetStatus(codes.Error, o.message)
	}
	span.End()
}

// receiptAttributes are a call's receipt (docs/receipts.md) as span attributes: the measurements
// the adapter had (a missing one is left out) and how many workspace paths were created, changed
// and deleted (the paths themselves stay in the journal).
func receiptAttributes(r adapter.Receipt) []attribute.KeyValue {
	kv := []attribute.KeyValue{
		attribute.Int64("sandboxer.receipt.wall_us", r.WallUs),
		attribute.Int64("sandboxer.receipt.stdout_bytes", r.StdoutBytes),
		attribute.Int64("sandboxer.receipt.stderr_bytes", r.StderrBytes),
	}
	for _, m := range []struct {
		key string
		v   *int64
	}{
		{"sandboxer.receipt.cpu_us", r.CPUUs},
		{"sandboxer.receipt.peak_memory_bytes", r.PeakMemoryBytes},
		{"sandboxer.receipt.processes", r.Processes},
		{"sandboxer.receipt.disk_read_bytes", r.DiskReadBytes},
		{"sandboxer.receipt.disk_write_bytes", r.DiskWriteBytes},
		{"sandboxer.receipt.net_sent_bytes", r.NetSentBytes},
		{"sandboxer.receipt.net_received_bytes", r.NetReceivedBytes},
	} {
		if m.v != nil {
			kv = append(kv, attribute.Int64(m.key, *m.v))
		}
	}
	if p := r.Paths; p != nil {
		kv = append(kv,
			attribute.Int("sandboxer.receipt.paths.created", len(p.Created)),
			attribute.Int("sandboxer.receipt.paths.changed", len(p.Changed)),
			attribute.Int("sandboxer.receipt.paths.deleted", len(p.Deleted)))
		if p.Skipped != "" {
			kv = append(kv, attribute.String("sandboxer.receipt.paths.skipped", p.Skipped))
		}
	}
	return kv
}
