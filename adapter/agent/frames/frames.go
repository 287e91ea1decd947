// Package frames carries a stream whose length is not known in advance over a pipe that cannot
// tell its end from a cut (a command's stdin: a transport that fails closes it like one that is
// done). The stream is a run of chunks, each after its length (4 bytes, big-endian), and an
// empty chunk at its end. A Reader reports io.EOF only after that empty chunk: a stream that
// stops before it is io.ErrUnexpectedEOF, so a writer of files commits only what was sent whole.
package frames

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxChunk bounds one chunk's length; a longer header is a broken stream.
const MaxChunk = 1 << 20

// Encode returns the framed form of src: its content in chunks of at most MaxChunk bytes, then
// the end. A read error of src is returned as it is, without the end, so the far side sees a
// stream cut short. Sent reports the bytes of src encoded so far.
func Encode(src io.Reader) *Encoder {
	return &Encoder{src: src}
}

// Encoder is the reader Encode returns.
type Encoder struct {
	src  io.Reader
	buf  []byte // header and data of the chunk being handed out
	out  []byte // what of buf is still to hand out
	sent int64
	end  bool // the source is at its end: the empty chunk is next (or was sent)
	done bool
	err  error
}

// Read implements io.Reader.
func (e *Encoder) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		switch {
		case e.err != nil:
			return 0, e.err
		case e.done:
			return 0, io.EOF
		case e.end:
			e.done = true
			e.out = []byte{0, 0, 0, 0}
			continue
		}
		if e.buf == nil {
			size := MaxChunk // a source that knows its length (bytes.Reader) gets a buffer its size
			if l, ok := e.src.(interface{ Len() int }); ok {
				size = min(max(l.Len(), 512), MaxChunk)
			}
			e.buf = make([]byte, 4+size)
		}
		n, err := e.src.Read(e.buf[4:])
		if n > 0 {
			binary.BigEndian.PutUint32(e.buf, uint32(n))
			e.out = e.buf[:4+n]
			e.sent += int64(n)
		}
		switch {
		case err == io.EOF:
			e.end = true
		case err != nil:
			e.err = err
			e.out = nil // a chunk read with an error is not sent: the stream is cut here
			e.sent -= int64(n)
		}
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// Sent is the number of bytes of the source encoded so far.
func (e *Encoder) Sent() int64 { return e.sent }

// Err is the source's read error, if it had one.
func (e *Encoder) Err() error { return e.err }

// ErrChunk is a chunk header over MaxChunk.
var ErrChunk = errors.New("frames: chunk longer than the limit")

// Decode returns the content of the framed stream r.
func Decode(r io.Reader) io.Reader { return &decoder{r: r} }

type decoder struct {
	r    io.Reader
	left uint32
	done bool
	err  error
}

func (d *decoder) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.done {
		return 0, io.EOF
	}
	for d.left == 0 {
		var h [4]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil {
			d.err = unexpected(err)
			return 0, d.err
		}
		n := binary.BigEndian.Uint32(h[:])
		if n == 0 {
			d.done = true
			return 0, io.EOF
		}
		if n > MaxChunk {
			d.err = fmt.Errorf("%w: %d bytes", ErrChunk, n)
			return 0, d.err
		}
		d.left = n
	}
	if uint32(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= uint32(n)
	if err != nil && (err != io.EOF || d.left > 0) {
		d.err = unexpected(err)
		return n, d.err
	}
	return n, nil
}

// unexpected turns the end of the underlying stream inside the framing into a cut.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
