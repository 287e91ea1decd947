package agent

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"sync"
)

// RequestError is a Result's error: Code classifies it (see Result).
type RequestError struct {
	Code string
	Msg  string
}

func (e *RequestError) Error() string { return e.Msg }

type pendingResult struct {
	buf []byte
	ch  chan []byte // the whole result
}

// other handles the frames of requests, streams and listeners; an error is a protocol violation.
func (c *Client) other(f frame) error {
	switch f.typ {
	case FrameResult, FrameResultPart:
		c.mu.Lock()
		p := c.results[f.id]
		if p == nil {
			c.mu.Unlock()
			return nil // a request given up: its answer is dropped as it comes
		}
		if len(p.buf)+len(f.payload) > MaxResult {
			c.mu.Unlock()
			return violation("a result of more than %d bytes", MaxResult)
		}
		if c.held+len(f.payload) > MaxResultsHeld {
			c.mu.Unlock()
			return violation("more than %d bytes of unfinished results", MaxResultsHeld)
		}
		p.buf = append(p.buf, f.payload...)
		c.held += len(f.payload)
		if f.typ == FrameResult {
			delete(c.results, f.id)
			c.held -= len(p.buf)
		}
		c.mu.Unlock()
		if f.typ == FrameResult {
			p.ch <- p.buf
		}
	case FrameData, FrameFin, FrameClose, FrameWindow:
		if f.typ == FrameWindow && len(f.payload) != 4 {
			return violation("window frame of %d bytes", len(f.payload))
		}
		c.mu.Lock()
		st := c.streams[f.id]
		c.mu.Unlock()
		if st != nil && !st.deliver(f.typ, f.payload) {
			return violation("stream %d: data past its window (%d bytes) or its end", f.id, StreamWindow)
		}
	case FrameAccept:
		if len(f.payload) != 4 {
			return violation("accept frame of %d bytes", len(f.payload))
		}
		if f.id&acceptedBit == 0 {
			return violation("accepted connection with id %d, not the agent's (top bit clear)", f.id)
		}
		c.mu.Lock()
		_, taken := c.streams[f.id]
		c.mu.Unlock()
		if taken {
			return violation("accepted connection with id %d, a stream's already", f.id)
		}
		c.accepted(f.id, binary.BigEndian.Uint32(f.payload))
	default:
		return violation("frame type %q", f.typ)
	}
	return nil
}

// endAll ends the streams and listeners when the link is gone; pending requests see c.done.
func (c *Client) endAll() {
	c.mu.Lock()
	streams := make([]*stream, 0, len(c.streams))
	for _, st := range c.streams {
		streams = append(streams, st)
	}
	lns := c.listeners
	c.listeners = map[uint32]*listener{}
	c.mu.Unlock()
	c.closeDirect()
	for _, st := range streams {
		st.abort(false)
	}
	for _, l := range lns {
		l.end()
	}
}

// id returns a new call id, or the link's error.
func (c *Client) newID() (uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.next++
	return c.next, nil
}

// Request sends req and waits for its result. A Result with an error is a *RequestError.
func (c *Client) Request(ctx context.Context, req Request) (Result, error) {
	id, err := c.newID()
	if err != nil {
		return Result{}, err
	}
	return c.request(ctx, id, req)
}

func (c *Client) request(ctx context.Context, id uint32, req Request) (Result, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return Result{}, err
	}
	p := &pendingResult{ch: make(chan []byte, 1)}
	c.mu.Lock()
	c.results[id] = p
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if c.results[id] == p {
			c.held -= len(p.buf)
			delete(c.results, id)
		}
		c.mu.Unlock()
	}
	if err := c.send(FrameRequest, id, payload); err != nil {
		forget()
		return Result{}, err
	}
	var b []byte
	select {
	case b = <-p.ch:
	case <-c.done:
		forget()
		return Result{}, c.err
	case <-ctx.Done():
		forget()
		return Result{}, ctx.Err()
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		err = violation("bad result: %v", err)
		c.end(err)
		c.mu.Lock()
		err = c.err
		c.mu.Unlock()
		return Result{}, err
	}
	if res.Error != "" || res.Code != "" {
		return res, &RequestError{Code: res.Code, Msg: res.Error}
	}
	return res, nil
}

// streamGone returns the function that removes stream id from the client's table.
func (c *Client) streamGone(id uint32) func() {
	return func() {
		c.mu.Lock()
		delete(c.streams, id)
		c.mu.Unlock()
	}
}

// Dial connects to 127.0.0.1:port in the sandbox. The connection is a unix socket: a direct stream
// (see SetDirect) or one end of a socketpair whose other end the client relays over the link to
// the agent's TCP connection. Either way it has deadlines and CloseWrite.
func (c *Client) Dial(ctx context.Context, port int) (net.Conn, error) {
	if d := c.directPath(ctx); d != nil {
		conn, err := d.dialSpare(ctx, port)
		if errors.Is(err, errNoDirect) {
			conn, err = c.dialDirect(ctx, d, port)
		}
		if !errors.Is(err, errNoDirect) {
			return conn, err
		}
	}
	id, err := c.newID()
	if err != nil {
		return nil, err
	}
	mine, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	st := newStream(id, mine, c, c.streamGone(id))
	c.mu.Lock()
	c.streams[id] = st
	c.mu.Unlock()
	if _, err := c.request(ctx, id, Request{Op: "dial", Port: port}); err != nil {
		// Tell the agent in case its connection was made after all.
		st.abort(ctx.Err() != nil)
		theirs.Close()
		return nil, err
	}
	st.run()
	return theirs, nil
}

// listener is the client's side of a listener in the sandbox.
type listener struct {
	c    *Client
	id   uint32
	port int
	ch   chan net.Conn

	mu     sync.Mutex
	closed bool
	quit   chan struct{}
}

// acceptBacklog bounds the accepted connections waiting for Accept.
const acceptBacklog = 128

// Listen listens on 127.0.0.1:port in the sandbox. Each connection a process makes there becomes a
// connection returned by Accept (a unix socket relayed as Dial's). Close stops it.
func (c *Client) Listen(ctx context.Context, port int) (net.Listener, error) {
	id, err := c.newID()
	if err != nil {
		return nil, err
	}
	l := &listener{c: c, id: id, port: port, ch: make(chan net.Conn, acceptBacklog), quit: make(chan struct{})}
	c.mu.Lock()
	c.listeners[id] = l
	c.mu.Unlock()
	direct := c.directPath(ctx) != nil
	if _, err := c.request(ctx, id, Request{Op: "listen", Port: port, Direct: direct}); err != nil {
		c.mu.Lock()
		delete(c.listeners, id)
		c.mu.Unlock()
		if ctx.Err() != nil {
			c.send(FrameClose, id, nil)
		}
		return nil, err
	}
	return l, nil
}

// accepted makes the agent's new connection stream id a connection of listener lid.
func (c *Client) accepted(id, lid uint32) {
	c.mu.Lock()
	l := c.listeners[lid]
	c.mu.Unlock()
	if l == nil {
		c.send(FrameClose, id, nil)
		return
	}
	mine, theirs, err := socketPair()
	if err != nil {
		c.send(FrameClose, id, nil)
		return
	}
	st := newStream(id, mine, c, c.streamGone(id))
	c.mu.Lock()
	c.streams[id] = st
	c.mu.Unlock()
	if !l.offer(theirs) {
		theirs.Close()
		st.abort(true)
		return
	}
	st.run()
}

func (l *listener) offer(conn net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	select {
	case l.ch <- conn:
		return true
	default:
		return false // nobody accepts: the connection is refused
	}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.ch:
		return conn, nil
	case <-l.quit:
		return nil, net.ErrClosed
	}
}

// end closes the listener here: Accept fails, waiting connections are closed.
func (l *listener) end() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.closed = true
	close(l.quit)
	for {
		select {
		case conn := <-l.ch:
			conn.Close()
		default:
			return true
		}
	}
}

// Close stops listening in the sandbox. Idempotent.
func (l *listener) Close() error {
	if l.end() {
		l.c.mu.Lock()
		delete(l.c.listeners, l.id)
		l.c.mu.Unlock()
		l.c.send(FrameClose, l.id, nil)
	}
	return nil
}

func (l *listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: l.port} }
