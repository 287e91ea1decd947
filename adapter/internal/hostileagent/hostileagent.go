// Package hostileagent stands in for a sandbox agent in tests of the host's side of the agent
// protocol: a peer that speaks the wire format over two real pipes and sends what the test makes
// it send, which no honest agent would.
package hostileagent

import (
	"encoding/binary"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// Peer is the agent's end of a client's two pipes.
type Peer struct {
	In  *os.File // the client's frames
	Out *os.File // to the client
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// New returns a client whose agent is the returned peer. Closing the client closes its ends of
// both pipes, as the adapters' closers do; the test's cleanup closes everything.
func New(t testing.TB) (*agent.Client, *Peer) {
	t.Helper()
	cr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := agent.NewClient(cr, cw, closerFunc(func() error {
		cw.Close()
		return cr.Close()
	}))
	t.Cleanup(func() {
		c.Close()
		pw.Close()
		pr.Close()
	})
	return c, &Peer{In: pr, Out: pw}
}

// Frame encodes one frame.
func Frame(typ byte, id uint32, payload []byte) []byte {
	b := []byte{typ}
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// Read returns the client's next frame; it fails the test when the client's stream ended.
func (p *Peer) Read(t testing.TB) (byte, uint32, []byte) {
	t.Helper()
	var h [9]byte
	if _, err := io.ReadFull(p.In, h[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(h[5:]))
	if _, err := io.ReadFull(p.In, b); err != nil {
		t.Fatal(err)
	}
	return h[0], binary.BigEndian.Uint32(h[1:5]), b
}

// Send writes one frame; the error is the pipe's (the client closed it).
func (p *Peer) Send(typ byte, id uint32, payload []byte) error {
	_, err := p.Out.Write(Frame(typ, id, payload))
	return err
}

// Flood sends frames of typ with full payloads until total bytes went or the client closed the
// pipe, from one buffer (the test process allocates nothing for it); it returns the bytes sent
// and the write's error.
func (p *Peer) Flood(typ byte, id uint32, total int64) (int64, error) {
	f := Frame(typ, id, make([]byte, agent.MaxPayload))
	var sent int64
	for sent < total {
		n, err := p.Out.Write(f)
		sent += int64(n)
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// Allocated runs f and returns the bytes the process allocated meanwhile: cumulative, so what
// the heap held at any moment of f is at most this (plus what was there before). Tests that use
// it must not run in parallel with others.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
