package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// A stream carries one TCP connection's bytes over the agent's link, both ways: a connection the
// agent dialled on the sandbox's loopback (Client.Dial) or accepted on a listener there
// (Client.Listen). Each side of the link has a local end, a net.Conn: the TCP connection in the
// agent, one end of a socketpair in the client (the other end is what the caller gets, a real
// socket with deadlines and half-close). The same type runs both sides.
//
// Flow control: a side sends at most StreamWindow bytes that the other has not acknowledged
// ('w' frames, sent once the bytes are written to the local end), so a slow reader holds its
// sender back instead of filling memory, and the link's reader never blocks on a stream.

// StreamWindow bounds the bytes of one stream in flight in each direction.
const StreamWindow = 1 << 20

// ackEvery batches acknowledgements: one per this many bytes written, or when the queue empties.
const ackEvery = 64 << 10

// sender writes a frame on the link (the client's or a connection's of the agent).
type sender interface {
	send(typ byte, id uint32, payload []byte) error
}

type stream struct {
	id   uint32
	conn net.Conn
	link sender
	gone func() // removes the stream from its side's table (called once, when it ends)

	mu      sync.Mutex
	queue   [][]byte // data to write to conn; a nil slice is the peer's end of data
	queued  int      // bytes in queue
	fin     bool     // the peer's end of data is queued
	wake    chan struct{}
	sent    int64
	acked   int64
	ackNote chan struct{}
	halves  int // directions finished (2: the stream is over)
	closed  chan struct{}
	once    sync.Once
}

func newStream(id uint32, conn net.Conn, link sender, gone func()) *stream {
	return &stream{
		id: id, conn: conn, link: link, gone: gone,
		wake:    make(chan struct{}, 1),
		ackNote: make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}
}

// run starts moving bytes: conn to the link, and the link's data (deliver) to conn.
func (s *stream) run() {
	go s.pumpOut()
	go s.writeIn()
}

// deliver hands the stream a frame of the link ('W', 'F', 'C' or 'w'); it never blocks. The
// payload is copied. False when the peer broke the protocol: data past the window (the stream is
// aborted) or after its end of data (dropped); the client then ends the link (Client.Violation).
func (s *stream) deliver(typ byte, payload []byte) bool {
	switch typ {
	case FrameData, FrameFin:
		var chunk []byte
		if typ == FrameData {
			if len(payload) == 0 {
				return true
			}
			chunk = bytes.Clone(payload)
		}
		s.mu.Lock()
		if s.fin {
			// Nothing comes after the peer's end of data: a broken or hostile peer's
			// frames are dropped (they would pile up with nobody to take them).
			s.mu.Unlock()
			return false
		}
		s.fin = typ == FrameFin
		s.queue = append(s.queue, chunk)
		s.queued += len(chunk)
		over := s.queued > StreamWindow
		s.mu.Unlock()
		if over {
			// The peer ignored the window: a broken or hostile peer loses its stream.
			s.abort(true)
			return false
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	case FrameClose:
		s.abort(false)
	case FrameWindow:
		if len(payload) == 4 {
			s.mu.Lock()
			s.acked += int64(binary.BigEndian.Uint32(payload))
			s.mu.Unlock()
			select {
			case s.ackNote <- struct{}{}:
			default:
			}
		}
	}
	return true
}

// pumpOut sends what conn reads, within the window, then the end of data.
func (s *stream) pumpOut() {
	buf := make([]byte, MaxPayload)
	for {
		n, err := s.conn.Read(buf)
		if n > 0 {
			if !s.waitWindow(n) {
				return
			}
			if s.link.send(FrameData, s.id, buf[:n]) != nil {
				s.abort(false)
				return
			}
			s.mu.Lock()
			s.sent += int64(n)
			s.mu.Unlock()
		}
		if err != nil {
			if isEOF(err) {
				if s.link.send(FrameFin, s.id, nil) != nil {
					s.abort(false)
					return
				}
				s.halfDone()
			} else {
				s.abort(true)
			}
			return
		}
	}
}

func (s *stream) waitWindow(n int) bool {
	for {
		s.mu.Lock()
		ok := s.sent-s.acked+int64(n) <= StreamWindow
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-s.ackNote:
		case <-s.closed:
			return false
		}
	}
}

// writeIn writes the peer's data to conn, acknowledging it, and half-closes conn at its end.
func (s *stream) writeIn() {
	var unacked uint32
	ack := func() {
		if unacked > 0 {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], unacked)
			s.link.send(FrameWindow, s.id, b[:])
			unacked = 0
		}
	}
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			ack()
			select {
			case <-s.wake:
				continue
			case <-s.closed:
				return
			}
		}
		chunk := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.queued -= len(chunk)
		s.mu.Unlock()
		if chunk == nil {
			ack()
			closeWrite(s.conn)
			s.halfDone()
			return
		}
		if _, err := s.conn.Write(chunk); err != nil {
			s.abort(true)
			return
		}
		unacked += uint32(len(chunk))
		if unacked >= ackEvery {
			ack()
		}
	}
}

// halfDone records one finished direction; after both, the stream is over.
func (s *stream) halfDone() {
	s.mu.Lock()
	s.halves++
	over := s.halves == 2
	s.mu.Unlock()
	if over {
		s.finish(false)
	}
}

// abort ends the stream at once, telling the peer when tell is set.
func (s *stream) abort(tell bool) { s.finish(tell) }

func (s *stream) finish(tell bool) {
	s.once.Do(func() {
		close(s.closed)
		s.conn.Close()
		if tell {
			s.link.send(FrameClose, s.id, nil)
		}
		s.gone()
	})
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

// socketPair returns the two ends of a connected pair of unix stream sockets: mine stays with a
// stream, theirs is handed to the caller.
func socketPair() (mine, theirs net.Conn, err error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "stream")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			if i == 0 {
				os.NewFile(uintptr(fds[1]), "stream").Close()
			}
			return nil, nil, err
		}
	}
	return conns[0], conns[1], nil
}
