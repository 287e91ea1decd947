package adapter

import "unicode/utf8"

// CappedBuffer is an io.Writer that keeps the first Limit bytes written to it and counts the rest.
// It never fails a write, so a producer is never blocked or killed by a full buffer: memory stays
// bounded however much is written. Not safe for concurrent use.
type CappedBuffer struct {
	limit   int
	buf     []byte
	dropped int64
}

// NewCappedBuffer returns a buffer keeping at most limit bytes.
func NewCappedBuffer(limit int) *CappedBuffer {
	return &CappedBuffer{limit: limit}
}

func (b *CappedBuffer) Write(p []byte) (int, error) {
	room := b.limit - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	b.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// Result returns the kept bytes, whether anything was dropped, and how many bytes were dropped.
// When the stream was cut, the cut is moved back to a UTF-8 boundary: a character split by the
// limit is dropped whole (and counted). Output that was never cut is returned as written, even
// when it is not UTF-8.
func (b *CappedBuffer) Result() (data []byte, truncated bool, dropped int64) {
	if b.dropped == 0 {
		return b.buf, false, 0
	}
	keep := utf8Boundary(b.buf)
	return b.buf[:keep], true, b.dropped + int64(len(b.buf)-keep)
}

// utf8Boundary returns the length of p without a trailing, incomplete UTF-8 sequence.
func utf8Boundary(p []byte) int {
	// Look back at most utf8.UTFMax-1 bytes for the start of the last sequence.
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		c := p[i]
		if c < utf8.RuneSelf { // ASCII: the sequence before it is complete or garbage
			return len(p)
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(p[i:]) {
				return len(p)
			}
			return i
		}
	}
	return len(p)
}

// Capture caps a stream into a CappedBuffer and returns its fields in the Result layout.
func Capture(r *Result, stdout, stderr *CappedBuffer) {
	r.Stdout, r.StdoutTruncated, r.StdoutDropped = stdout.Result()
	r.Stderr, r.StderrTruncated, r.StderrDropped = stderr.Result()
	r.Receipt.StdoutBytes = int64(len(r.Stdout)) + r.StdoutDropped
	r.Receipt.StderrBytes = int64(len(r.Stderr)) + r.StderrDropped
	r.Receipt.WallUs = r.Duration.Microseconds()
}
