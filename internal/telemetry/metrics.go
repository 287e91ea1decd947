package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The metric names (docs/observability.md).
const (
	MetricCalls           = "sandboxer_tool_calls_total"
	MetricCallDuration    = "sandboxer_tool_call_duration_seconds"
	MetricEgressDecisions = "sandboxer_egress_decisions_total"
	MetricSandboxes       = "sandboxer_sandboxes"
	MetricPoolSandboxes   = "sandboxer_pool_sandboxes"
	MetricPoolJournals    = "sandboxer_pool_journals"
)

// CodeOK is the code label of a call that succeeded.
const CodeOK = "OK"

// Metrics are the metrics of one process, on a registry of their own (no Go runtime or process
// collectors unless added).
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	egress   *prometheus.CounterVec
}

// metrics is the process's Metrics while they are served; nil otherwise.
var metrics atomic.Pointer[Metrics]

func newMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCalls,
			Help: "Tool calls that ended, by tool and code (OK, or the error code: TOOL_COMMAND_FAILED, PROCESS_TIMEOUT, ...).",
		}, []string{"tool", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricCallDuration,
			Help:    "Wall time of tool calls, by tool, in seconds.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"tool"}),
		egress: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricEgressDecisions,
			Help: "Decisions of the sandboxes' egress proxies reported by tool calls: decision allowed or refused.",
		}, []string{"decision"}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.egress)
	// Both decisions and the success code are there from the start: a query for them is 0, not empty.
	m.egress.WithLabelValues("allowed")
	m.egress.WithLabelValues("refused")
	return m
}

// record counts one call.
func (m *Metrics) record(tool string, o outcome, d time.Duration) {
	code := o.code
	if code == "" {
		code = CodeOK
	}
	m.calls.WithLabelValues(tool, code).Inc()
	m.duration.WithLabelValues(tool).Observe(d.Seconds())
	for _, dec := range o.network {
		if dec.Allowed {
			m.egress.WithLabelValues("allowed").Inc()
		} else {
			m.egress.WithLabelValues("refused").Inc()
		}
	}
}

// Gauge adds a gauge read at each scrape: f is called then (it must be quick and safe from any
// goroutine). labels may be nil. A second gauge of the same name and labels is an error.
func (m *Metrics) Gauge(name, help string, labels map[string]string, f func() float64) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
}

// Server serves the process's metrics; Close stops it and turns the metrics off.
type Server struct {
	*Metrics
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	path string // the unix socket's, removed by Close
}

// Addr is the address served on (the port chosen for 127.0.0.1:0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving and recording.
func (s *Server) Close() error {
	metrics.CompareAndSwap(s.Metrics, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	if s.path != "" {
		os.Remove(s.path)
	}
	return err
}

// ServeMetrics serves the process's metrics in the Prometheus text format at /metrics (and /)
// on listen: HOST:PORT with a loopback HOST (127.0.0.1, [::1], localhost), or unix:PATH (an
// absolute path; the socket is made 0600). Any other address is refused: the endpoint has no
// authentication. From then on every tool call of the process is counted.
func ServeMetrics(listen string) (*Server, error) {
	ln, path, err := metricsListener(listen)
	if err != nil {
		return nil, err
	}
	m := newMetrics()
	if !metrics.CompareAndSwap(nil, m) {
		ln.Close()
		if path != "" {
			os.Remove(path)
		}
		return nil, errors.New("metrics are already served by this process")
	}
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.Handle("/{$}", h)
	s := &Server{Metrics: m, ln: ln, path: path, done: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// metricsListener listens on listen, which must be loopback or a unix socket.
func metricsListener(listen string) (ln net.Listener, path string, err error) {
	bad := func(why string) error {
		return fmt.Errorf("--metrics-listen %q: %s: metrics are served without authentication, on a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT) or unix:PATH only", listen, why)
	}
	if p, ok := strings.CutPrefix(listen, "unix:"); ok {
		if !filepath.IsAbs(p) {
			return nil, "", bad("the socket's path must be absolute")
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(p) // a stale socket of a process that is gone
		}
		if ln, err = net.Listen("unix", p); err != nil {
			return nil, "", err
		}
		if err := os.Chmod(p, 0o600); err != nil {
			ln.Close()
			return nil, "", err
		}
		return ln, p, nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, "", bad("want HOST:PORT or unix:PATH")
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return nil, "", bad("not a loopback address")
		}
	}
	ln, err = net.Listen("tcp", listen)
	return ln, "", err
}
