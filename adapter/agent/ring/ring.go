// Package ring keeps the output of a long-running process: two streams (stdout and stderr), each
// in a ring of at most a fixed number of bytes, and one offset that counts the bytes of both
// streams in the order they were written. A reader passes back the offset it was given and gets
// what came after it, with a count of the bytes the rings no longer hold; a flood therefore costs
// bounded memory and is never silent.
//
// The sandbox agent and every adapter use this one type, so it depends on the standard library
// only (the agent is compiled from embedded source).
package ring

import (
	"context"
	"errors"
	"sort"
	"sync"
)

// Stream names one of a process's two output streams.
type Stream int

const (
	Stdout Stream = 0
	Stderr Stream = 1
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("ring: write after close")

// Chunk is one read (see Buffer.Read).
type Chunk struct {
	// Stdout and Stderr are the bytes of each stream at offsets from the read's since to Offset
	// that the rings still held (fresh copies, the caller's to keep).
	Stdout []byte
	Stderr []byte
	// Offset is the end of what the read covered: pass it as since next time.
	Offset int64
	// Dropped counts the bytes from since to Offset that the rings no longer held.
	Dropped int64
	// Closed reports that the buffer was closed when the read was made: once a reader has read
	// up to Offset of a closed read, nothing more will come.
	Closed bool
}

// segment marks where, in the global order, a run of one stream's bytes begins: the stream's
// bytes from stream offset off (up to the next segment's off, or the stream's end) were written
// at global offsets from global on, contiguously.
type segment struct {
	global int64
	off    int64
}

// stream is one stream's ring and its segments.
type stream struct {
	buf   []byte // grows up to max, then wraps
	head  int    // index in buf of the oldest held byte
	n     int    // bytes held
	total int64  // bytes ever written to this stream
	segs  []segment
}

// Buffer is two bounded streams with one global offset. The zero value is not usable: call New.
// All methods are safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex
	max     int
	maxSegs int
	s       [2]stream
	end     int64 // bytes ever written, both streams
	last    Stream
	closed  bool
	notify  chan struct{} // closed and cleared by the next Write or Close
}

// New returns a buffer whose streams each hold at most size bytes (size >= 1). Memory grows with
// what is written, up to that bound.
//
// Besides the bytes, a buffer remembers where the writes switched from one stream to the other,
// at most size/64 switches per stream (at least 16): a process that alternates its streams in tiny
// writes loses its oldest bytes sooner than size, and those bytes count as dropped like any other.
func New(size int) *Buffer {
	if size < 1 {
		panic("ring: New with size < 1")
	}
	return &Buffer{max: size, maxSegs: max(16, size/64), last: -1}
}

// Write appends p to stream st (Stdout or Stderr), dropping the stream's oldest bytes beyond the
// bound, and wakes the waiters. It returns ErrClosed after Close.
func (b *Buffer) Write(st Stream, p []byte) (int, error) {
	if st != Stdout && st != Stderr {
		panic("ring: unknown stream")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	s := &b.s[st]
	if b.last != st || len(s.segs) == 0 {
		s.segs = append(s.segs, segment{global: b.end, off: s.total})
		b.last = st
	}
	s.write(p, b.max)
	b.end += int64(len(p))
	s.prune(b.maxSegs)
	b.wake()
	return len(p), nil
}

// Writer returns an io.Writer that writes to stream st.
func (b *Buffer) Writer(st Stream) *StreamWriter { return &StreamWriter{b: b, st: st} }

// StreamWriter is an io.Writer onto one stream of a Buffer.
type StreamWriter struct {
	b  *Buffer
	st Stream
}

func (w *StreamWriter) Write(p []byte) (int, error) { return w.b.Write(w.st, p) }

// Close marks the end of the output: later Writes fail, and waiters wake. Idempotent.
func (b *Buffer) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		b.wake()
	}
}

// End returns the global offset after the last byte written, and whether the buffer is closed.
func (b *Buffer) End() (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end, b.closed
}

// Read returns everything written after offset since (0: from the start; a negative since counts
// as 0; a since beyond the end returns nothing and the end as Offset).
func (b *Buffer) Read(since int64) Chunk { return b.ReadLimit(since, 0) }

// ReadLimit is Read covering at most limit offsets after since (limit <= 0: no bound), so that at
// most limit bytes come back. The offsets after since whose bytes are no longer held are skipped
// before the limit counts: a reader far behind gets the oldest held bytes, not a run of empty reads.
func (b *Buffer) ReadLimit(since int64, limit int) Chunk {
	b.mu.Lock()
	defer b.mu.Unlock()
	if since < 0 {
		since = 0
	}
	c := Chunk{Offset: b.end, Closed: b.closed}
	if since >= b.end {
		return c
	}
	from := b.firstHeld(since)
	upto := b.end
	if limit > 0 && upto-from > int64(limit) {
		upto = from + int64(limit)
	}
	c.Stdout = b.s[Stdout].slice(from, upto)
	c.Stderr = b.s[Stderr].slice(from, upto)
	c.Offset = upto
	c.Dropped = upto - since - int64(len(c.Stdout)) - int64(len(c.Stderr))
	return c
}

// Wait blocks until the buffer holds bytes after offset since or is closed (nil), or ctx ends
// (ctx's error).
func (b *Buffer) Wait(ctx context.Context, since int64) error {
	for {
		b.mu.Lock()
		if b.end > since || b.closed {
			b.mu.Unlock()
			return nil
		}
		ch := b.changed()
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Changed returns a channel that is closed by the next Write or Close (at once if the buffer is
// already closed): read, then select on it, then read again.
func (b *Buffer) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed()
}

func (b *Buffer) changed() chan struct{} {
	if b.notify == nil {
		b.notify = make(chan struct{})
		if b.closed {
			close(b.notify)
		}
	}
	return b.notify
}

func (b *Buffer) wake() {
	if b.notify != nil {
		close(b.notify)
		b.notify = nil
	}
}

// firstHeld is the smallest global offset >= since of a byte still held, or end when none is.
func (b *Buffer) firstHeld(since int64) int64 {
	lo := b.end
	for i := range b.s {
		s := &b.s[i]
		if off := max(s.offsetAt(since), s.total-int64(s.n)); off < s.total {
			lo = min(lo, s.globalOf(off))
		}
	}
	return lo
}

// write appends p to the ring, keeping at most limit bytes.
func (s *stream) write(p []byte, limit int) {
	s.total += int64(len(p))
	if len(p) >= limit {
		s.grow(limit)
		copy(s.buf, p[len(p)-limit:])
		s.head, s.n = 0, limit
		return
	}
	if need := s.n + len(p); need > len(s.buf) && len(s.buf) < limit {
		s.grow(min(limit, max(2*len(s.buf), need, 4096)))
	}
	size := len(s.buf)
	at := (s.head + s.n) % size
	k := copy(s.buf[at:], p)
	copy(s.buf, p[k:])
	if over := s.n + len(p) - size; over > 0 {
		s.head = (s.head + over) % size
		s.n = size
	} else {
		s.n += len(p)
	}
}

// grow makes buf size bytes, with the held bytes first.
func (s *stream) grow(size int) {
	if size <= len(s.buf) {
		return
	}
	nb := make([]byte, size)
	s.copyOut(nb, 0, s.n)
	s.buf, s.head = nb, 0
}

// copyOut copies n held bytes starting i bytes after the oldest held one into dst.
func (s *stream) copyOut(dst []byte, i, n int) {
	if n == 0 {
		return
	}
	size := len(s.buf)
	at := (s.head + i) % size
	k := copy(dst[:n], s.buf[at:min(size, at+n)])
	copy(dst[k:n], s.buf)
}

// prune forgets segments whose bytes are all gone, and, past maxSegs segments, the oldest
// segments together with their bytes.
func (s *stream) prune(maxSegs int) {
	heldStart := s.total - int64(s.n)
	if len(s.segs) > maxSegs {
		cut := s.segs[len(s.segs)-maxSegs].off
		if cut > heldStart {
			drop := int(cut - heldStart)
			s.head = (s.head + drop) % len(s.buf)
			s.n -= drop
			heldStart = cut
		}
	}
	i := 0
	for i+1 < len(s.segs) && s.segs[i+1].off <= heldStart {
		i++
	}
	if i > 0 {
		// Shift in place once the dead prefix is large, so the slice does not creep forever.
		if i > len(s.segs)/2 {
			s.segs = append(s.segs[:0], s.segs[i:]...)
		} else {
			s.segs = s.segs[i:]
		}
	}
}

// segEnd is the stream offset where segment i ends.
func (s *stream) segEnd(i int) int64 {
	if i+1 < len(s.segs) {
		return s.segs[i+1].off
	}
	return s.total
}

// globalOf is the global offset of the stream byte at stream offset off (which must be written).
func (s *stream) globalOf(off int64) int64 {
	i := sort.Search(len(s.segs), func(i int) bool { return s.segEnd(i) > off }) // first holding off
	return s.segs[i].global + (off - s.segs[i].off)
}

// offsetAt is the stream offset of this stream's first byte at global offset >= g.
func (s *stream) offsetAt(g int64) int64 {
	i := sort.Search(len(s.segs), func(i int) bool {
		return s.segs[i].global+(s.segEnd(i)-s.segs[i].off) > g
	})
	if i == len(s.segs) {
		return s.total
	}
	if g <= s.segs[i].global {
		return s.segs[i].off
	}
	return s.segs[i].off + (g - s.segs[i].global)
}

// slice copies the held bytes of this stream written at global offsets in [from, upto).
func (s *stream) slice(from, upto int64) []byte {
	lo := max(s.offsetAt(from), s.total-int64(s.n))
	hi := s.offsetAt(upto)
	if hi <= lo {
		return nil
	}
	out := make([]byte, hi-lo)
	s.copyOut(out, int(lo-(s.total-int64(s.n))), int(hi-lo))
	return out
}
