package filesync

import (
	"context"
	"sync"

	"github.com/sandboxer/sandboxer/adapter"
)

// bulkBatch bounds the bytes of one BulkWriter.WriteFiles call during Hydrate.
const bulkBatch = 16 << 20

// writer writes hydrated files into the sandbox with a few workers, in batches through the
// sandbox's BulkWriter when it has one, else file by file.
type writer struct {
	ctx     context.Context
	cancel  context.CancelFunc
	sb      adapter.Sandbox
	bulk    adapter.BulkWriter
	jobs    chan []adapter.File
	wg      sync.WaitGroup
	mu      sync.Mutex
	written []string
	err     error
	batch   []adapter.File
	bytes   int
}

func newWriter(ctx context.Context, sb adapter.Sandbox, workers int) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{ctx: ctx, cancel: cancel, sb: sb, jobs: make(chan []adapter.File, workers)}
	w.bulk, _ = sb.(adapter.BulkWriter)
	for range workers {
		w.wg.Add(1)
		go w.run()
	}
	return w
}

func (w *writer) run() {
	defer w.wg.Done()
	for files := range w.jobs {
		if w.ctx.Err() != nil {
			continue
		}
		var err error
		if w.bulk != nil {
			err = w.bulk.WriteFiles(w.ctx, files)
		} else {
			err = w.sb.WriteFile(w.ctx, files[0].Path, files[0].Data)
		}
		w.mu.Lock()
		if err != nil {
			if w.err == nil {
				w.err = err
			}
			w.cancel()
		} else {
			for _, f := range files {
				w.written = append(w.written, f.Path)
			}
		}
		w.mu.Unlock()
	}
}

// write queues one file; content is copied. It returns the first error of any worker.
func (w *writer) write(p string, content []byte) error {
	if err := w.failed(); err != nil {
		return err
	}
	f := adapter.File{Path: p, Data: append(make([]byte, 0, len(content)), content...)}
	if w.bulk == nil {
		return w.send([]adapter.File{f})
	}
	w.batch = append(w.batch, f)
	w.bytes += len(content)
	if w.bytes >= bulkBatch || len(w.batch) >= 4096 {
		b := w.batch
		w.batch, w.bytes = nil, 0
		return w.send(b)
	}
	return nil
}

func (w *writer) send(files []adapter.File) error {
	select {
	case w.jobs <- files:
		return nil
	case <-w.ctx.Done():
		if err := w.failed(); err != nil {
			return err
		}
		return w.ctx.Err()
	}
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// close writes what is queued and returns the paths written and the first error.
func (w *writer) close() ([]string, error) {
	var err error
	if len(w.batch) > 0 {
		err = w.send(w.batch)
		w.batch = nil
	}
	close(w.jobs)
	w.wg.Wait()
	w.cancel()
	if e := w.failed(); e != nil {
		err = e
	}
	return w.written, err
}
