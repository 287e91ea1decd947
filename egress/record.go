package egress

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Decision is what the proxy decided for one request (one CONNECT tunnel, or one plain HTTP
// request), with the bytes that crossed it: the tool result's `network` entries.
type Decision struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Allowed bool   `json:"allowed"`
	// BytesIn counts bytes from the destination to the sandbox (the response body, or everything
	// the tunnel carried inward); BytesOut the other way (the request body, or the tunnel's
	// outward bytes). Headers of plain HTTP requests are not counted.
	BytesIn  int64 `json:"bytesIn"`
	BytesOut int64 `json:"bytesOut"`
	// Reason says why a request was refused or failed ("not in the allowlist", "resolves to a
	// loopback address", "dial: ..."); empty for a request that went through.
	Reason string `json:"reason,omitempty"`
}

// Mark is a position in a proxy's record: Since(mark) returns the decisions made after it.
type Mark uint64

// maxRecords bounds the record: older decisions are dropped (and Since reports how many).
const maxRecords = 4096

// maxRecordedHost bounds the host kept per decision.
const maxRecordedHost = MaxHostLength + 3

// entry is one decision under way or done.
type entry struct {
	seq      uint64
	host     string
	port     int
	mu       sync.Mutex
	allowed  bool
	reason   string
	bytesIn  atomic.Int64
	bytesOut atomic.Int64
	done     chan struct{}
}

func (e *entry) decision() Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Decision{Host: e.host, Port: e.port, Allowed: e.allowed, Reason: e.reason,
		BytesIn: e.bytesIn.Load(), BytesOut: e.bytesOut.Load()}
}

// refuse turns an allowed host into a refusal (its address is one the proxy never dials).
func (e *entry) refuse(reason string) {
	e.mu.Lock()
	e.allowed, e.reason = false, reason
	e.mu.Unlock()
}

// fail records why an allowed request did not get through (dial error, bad gateway).
func (e *entry) fail(reason string) {
	e.mu.Lock()
	if e.reason == "" {
		e.reason = reason
	}
	e.mu.Unlock()
}

func (e *entry) finish() {
	select {
	case <-e.done:
	default:
		close(e.done)
	}
}

// record keeps the last maxRecords decisions in order.
type record struct {
	mu      sync.Mutex
	next    uint64
	entries []*entry // ring: entries[seq % maxRecords]
}

func (r *record) add(host string, port int, allowed bool, reason string) *entry {
	if len(host) > maxRecordedHost { // bounded memory: a refused host can be any text
		host = host[:maxRecordedHost] + "..."
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = make([]*entry, maxRecords)
	}
	e := &entry{seq: r.next, host: host, port: port, allowed: allowed, reason: reason, done: make(chan struct{})}
	if !allowed {
		close(e.done)
	}
	r.entries[r.next%maxRecords] = e
	r.next++
	return e
}

func (r *record) mark() Mark {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Mark(r.next)
}

// since returns the entries from m on that are still kept, and how many were dropped.
func (r *record) since(m Mark) (es []*entry, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := uint64(m)
	if r.next > maxRecords && from < r.next-maxRecords {
		dropped = int(r.next - maxRecords - from)
		from = r.next - maxRecords
	}
	for s := from; s < r.next; s++ {
		es = append(es, r.entries[s%maxRecords])
	}
	return es, dropped
}

// Mark returns the current position of the record; take it before a command runs.
func (p *Proxy) Mark() Mark { return p.rec.mark() }

// Since returns the decisions made after m, in the order they were made. Requests still under
// way are waited for until they end, ctx is done or grace has passed (a command that has exited
// closed its connections, but the proxy may still be copying their last bytes); after that their
// bytes so far are reported. A long-running background process's open tunnel is reported with
// the bytes so far. When more than the record's 4096 decisions were made since m, the oldest are
// left out and dropped counts them.
func (p *Proxy) Since(ctx context.Context, m Mark, grace time.Duration) (ds []Decision, dropped int) {
	es, dropped := p.rec.since(m)
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
	wait:
		for _, e := range es {
			select {
			case <-e.done:
			case <-ctx.Done():
				break wait
			case <-t.C:
				break wait
			}
		}
	}
	ds = make([]Decision, 0, len(es))
	for _, e := range es {
		ds = append(ds, e.decision())
	}
	return ds, dropped
}
