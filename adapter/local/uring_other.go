//go:build !linux || sandboxer_portable

package local

import "sync/atomic"

// There is no io_uring: ReadTree reads every file with plain system calls (readPlain).

type ring struct{}

// uringOff means nothing here (no ring to turn off); the tests that set it build everywhere.
var uringOff atomic.Bool

func newRing(uint32) *ring { return nil }

func (r *ring) close() {}

// readBatch is never called without a ring; it reads the files one by one.
func (w *treeWorker) readBatch(b []treeFile) error { return w.readEach(b) }
