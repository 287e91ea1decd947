package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

var _ interface {
	adapter.PortForwarder
	adapter.PortListener
	adapter.Warmer
} = (*Sandbox)(nil)

// Warm starts the isolation helper for commands with or without the network in the background
// (see adapter.Warmer); without isolation there is nothing to start.
func (s *Sandbox) Warm(allowNetwork bool) {
	if s.iso == nil || s.checkOpen("exec") != nil {
		return
	}
	go s.iso.warm(allowNetwork)
}

// DialPort connects to 127.0.0.1:port in the sandbox's network: with a network namespace (the
// network off), the helper connects inside it and hands the socket over, so the connection costs
// nothing per byte; without one, commands share the host's loopback and the dial is the host's.
func (s *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	f, err := s.portSocket(ctx, "dial", port)
	if err != nil {
		return nil, err
	}
	var c net.Conn
	if f == nil {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	} else {
		c, err = net.FileConn(f)
		f.Close()
	}
	if err != nil {
		return nil, portErr("dial", port, err)
	}
	return s.ports.conn(c)
}

// ListenPort listens on 127.0.0.1:port in the sandbox's network (see DialPort): the listening
// socket is made inside the network namespace and accepted from here.
func (s *Sandbox) ListenPort(ctx context.Context, port int) (net.Listener, error) {
	f, err := s.portSocket(ctx, "listen", port)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	if f == nil {
		var lc net.ListenConfig
		ln, err = lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	} else {
		ln, err = net.FileListener(f)
		f.Close()
	}
	if err != nil {
		return nil, portErr("listen", port, err)
	}
	return s.ports.listener(ln)
}

// portSocket checks the port and the sandbox and, when commands run in a network namespace of
// their own, makes the socket there (nil: use the host's network).
func (s *Sandbox) portSocket(ctx context.Context, op string, port int) (*os.File, error) {
	if port < 1 || port > 65535 {
		return nil, errs.New(errs.InvalidInput, op, "", "port %d is outside 1..65535", port)
	}
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	if s.iso == nil {
		return nil, nil
	}
	f, err := s.iso.socket(ctx, op, port)
	if err != nil {
		return nil, portErr(op, port, err)
	}
	return f, nil
}

func portErr(op string, port int, err error) error {
	var e *errs.Error
	switch {
	case errors.As(err, &e):
		return err
	case errors.Is(err, syscall.ECONNREFUSED):
		return errs.Wrap(errs.NotFound, op, "", fmt.Errorf("nothing listens on port %d in the sandbox: %w", port, err))
	case errors.Is(err, syscall.EADDRINUSE):
		return errs.Wrap(errs.InvalidInput, op, "", fmt.Errorf("port %d is taken in the sandbox: %w", port, err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return errs.Wrap(errs.SandboxUnavailable, op, "", err)
}

// portSet holds the connections and listeners the sandbox handed out, so that Stop ends them:
// a socket made in the sandbox's network namespace keeps the namespace alive while it is open.
type portSet struct {
	mu     sync.Mutex
	closed bool
	open   map[io.Closer]struct{}
}

// track registers c, or closes it and fails when the set is closed already.
func (p *portSet) track(c io.Closer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return errs.New(errs.SandboxUnavailable, "port", "", "sandbox is stopped")
	}
	if p.open == nil {
		p.open = map[io.Closer]struct{}{}
	}
	p.open[c] = struct{}{}
	return nil
}

func (p *portSet) forget(c io.Closer) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

func (p *portSet) conn(c net.Conn) (net.Conn, error) {
	if err := p.track(c); err != nil {
		return nil, err
	}
	return &portConn{Conn: c, set: p}, nil
}

func (p *portSet) listener(ln net.Listener) (net.Listener, error) {
	if err := p.track(ln); err != nil {
		return nil, err
	}
	return &portListener{Listener: ln, set: p}, nil
}

// close ends every connection and listener handed out; later ones fail.
func (p *portSet) close() {
	p.mu.Lock()
	p.closed = true
	open := p.open
	p.open = nil
	p.mu.Unlock()
	for c := range open {
		c.Close()
	}
}

// portConn is a connection of the set; CloseWrite half-closes it (the forwarder's end of one
// direction).
type portConn struct {
	net.Conn
	set *portSet
}

func (c *portConn) Close() error {
	c.set.forget(c.Conn)
	return c.Conn.Close()
}

func (c *portConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

type portListener struct {
	net.Listener
	set *portSet
}

func (l *portListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.set.conn(c)
}

func (l *portListener) Close() error {
	l.set.forget(l.Listener)
	return l.Listener.Close()
}

// count is the number of connections and listeners open.
func (p *portSet) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open)
}
