package snapshot

import (
	"context"
	"sync"
)

// batches groups items for the workers: an item larger than streamOver alone (it is streamed),
// the others in runs of at most batchFiles items or batchBytes bytes.
func batches[T any](items []T, size func(T) int64) [][]T {
	var jobs [][]T
	var cur []T
	var curBytes int64
	for _, it := range items {
		if size(it) > streamOver {
			jobs = append(jobs, []T{it})
			continue
		}
		cur = append(cur, it)
		curBytes += size(it)
		if len(cur) >= batchFiles || curBytes >= batchBytes {
			jobs = append(jobs, cur)
			cur, curBytes = nil, 0
		}
	}
	if len(cur) > 0 {
		jobs = append(jobs, cur)
	}
	return jobs
}

// runJobs calls fn for every job on up to workers goroutines. The first error cancels the
// context the others run under and is returned; else the context's own error, if any.
func runJobs[T any](ctx context.Context, workers int, jobs []T, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan T)
	for range min(workers, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range next {
				if err := fn(ctx, job); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
