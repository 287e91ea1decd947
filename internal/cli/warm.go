package cli

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/internal/telemetry"
	"github.com/sandboxer/sandboxer/journal"
)

// warmth is what the resident server (sandboxer server) keeps between the calls it runs: the
// journals open, and a local sandbox per workspace and configuration with its isolation helpers
// running. A journal or a sandbox is used by the calls of this server only; the files they work
// on are the same as a process of its own would use.
type warmth struct {
	mu       sync.Mutex
	journals map[string]*warmJournal
	idle     map[string]*idleSandbox
	closed   bool
}

func newWarmth() *warmth {
	return &warmth{journals: map[string]*warmJournal{}, idle: map[string]*idleSandbox{}}
}

// warmJournal is an open journal and the file it opened.
type warmJournal struct {
	j     *journal.Journal
	file  os.FileInfo
	users int
	gone  bool      // replaced: closed when its last user is done
	dirty bool      // used since its last checkpoint
	last  time.Time // the end of its last use
}

// release ends one use of wj, and closes a replaced journal with its last use (w.mu held).
func (wj *warmJournal) release() {
	if wj.users--; wj.users == 0 && wj.gone {
		wj.j.Close()
	}
}

// journal returns the open journal of path, opening it if need be (and again when the file was
// removed or replaced since), and the release that ends this use of it.
func (w *warmth) journal(ctx context.Context, path string, opts journal.Options) (*journal.Journal, func(), error) {
	key := fmt.Sprintf("%s\x00%d\x00%s", path, opts.MaxFieldBytes, journal.KeyID(opts.Key)) // one per signing key
	w.mu.Lock()
	defer w.mu.Unlock()
	wj := w.journals[key]
	if wj != nil {
		if fi, err := os.Stat(path); err != nil || !os.SameFile(fi, wj.file) {
			wj.gone = true
			delete(w.journals, key)
			if wj.users == 0 {
				wj.j.Close()
			}
			wj = nil
		}
	}
	if wj == nil {
		if w.closed {
			return nil, nil, fmt.Errorf("journal %s: the server is ending", path)
		}
		j, err := journal.Open(ctx, path, opts)
		if err != nil {
			return nil, nil, err
		}
		fi, err := os.Stat(path)
		if err != nil {
			j.Close()
			return nil, nil, err
		}
		wj = &warmJournal{j: j, file: fi}
		w.journals[key] = wj
	}
	wj.users++
	var once sync.Once
	return wj.j, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			wj.dirty, wj.last = true, time.Now()
			wj.release()
		})
	}, nil
}

// checkpoint checkpoints the journals no call has used for d since they were last used, so that
// each file alone holds every row soon after the last call (a CI job that keeps journal.db as an
// artifact), without paying the checkpoint's file syncs at every call.
func (w *warmth) checkpoint(ctx context.Context, d time.Duration) {
	w.mu.Lock()
	var due []*warmJournal
	for _, wj := range w.journals {
		if wj.dirty && wj.users == 0 && time.Since(wj.last) >= d {
			wj.dirty = false
			wj.users++ // not closed while it checkpoints
			due = append(due, wj)
		}
	}
	w.mu.Unlock()
	for _, wj := range due {
		_ = wj.j.Checkpoint(ctx)
		w.mu.Lock()
		wj.release()
		w.mu.Unlock()
	}
}

// idleSandbox is a local sandbox between two calls: being recycled until ready is closed.
type idleSandbox struct {
	sb    *local.Sandbox
	dir   os.FileInfo // the workspace it was made for
	ready chan struct{}
	ok    bool // recycled: ready for the next call
	since time.Time
}

// takeLocal returns the idle sandbox kept for key, waiting for its recycling, or nil. A sandbox
// whose workspace directory was removed or replaced since is stopped instead.
func (w *warmth) takeLocal(key string, workspace os.FileInfo) *local.Sandbox {
	w.mu.Lock()
	e := w.idle[key]
	delete(w.idle, key)
	w.mu.Unlock()
	if e == nil {
		return nil
	}
	<-e.ready
	if !e.ok {
		return nil
	}
	if workspace == nil || e.dir == nil || !os.SameFile(workspace, e.dir) {
		stopSandbox(e.sb)
		return nil
	}
	return e.sb
}

// putLocal keeps sb for the next call of key once it is recycled (local.Sandbox.Recycle), and
// stops it when it cannot be, or when a sandbox is kept for key already.
func (w *warmth) putLocal(key string, workspace os.FileInfo, sb *local.Sandbox) {
	e := &idleSandbox{sb: sb, dir: workspace, ready: make(chan struct{}), since: time.Now()}
	w.mu.Lock()
	if w.closed || w.idle[key] != nil {
		w.mu.Unlock()
		stopSandbox(sb)
		return
	}
	w.idle[key] = e
	w.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e.ok = sb.Recycle(ctx) == nil
		if !e.ok {
			stopSandbox(sb)
		}
		close(e.ready)
	}()
}

// expire stops the sandboxes idle for d or longer (all of them when d is 0).
func (w *warmth) expire(d time.Duration) {
	w.mu.Lock()
	var old []*idleSandbox
	for key, e := range w.idle {
		if time.Since(e.since) >= d {
			old = append(old, e)
			delete(w.idle, key)
		}
	}
	w.mu.Unlock()
	for _, e := range old {
		<-e.ready
		if e.ok {
			stopSandbox(e.sb)
		}
	}
}

// close stops every idle sandbox and closes every journal (with no call running).
func (w *warmth) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.expire(0)
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, wj := range w.journals {
		wj.j.Close()
		delete(w.journals, key)
	}
}

// gauges adds the warm pool's sizes to m (idle sandboxes and open journals).
func (w *warmth) gauges(m *telemetry.Metrics) {
	size := func(n func() int) func() float64 {
		return func() float64 {
			w.mu.Lock()
			defer w.mu.Unlock()
			return float64(n())
		}
	}
	m.Gauge(telemetry.MetricPoolSandboxes, "Sandboxes kept ready in a pool, by pool.", map[string]string{"pool": "warm"}, size(func() int { return len(w.idle) }))
	m.Gauge(telemetry.MetricPoolJournals, "Journals the resident server keeps open.", nil, size(func() int { return len(w.journals) }))
}

func stopSandbox(sb *local.Sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = sb.Stop(ctx)
}
