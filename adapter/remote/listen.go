package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

var _ adapter.PortListener = (*Sandbox)(nil)

// ListenPort listens on 127.0.0.1:port inside the sandbox, through the server: each Accept is one
// upgraded request that the server answers when a command connects.
func (s *Sandbox) ListenPort(ctx context.Context, port int) (net.Listener, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if port < 1 || port > 65535 {
		return nil, errs.New(errs.InvalidInput, "listen", "", "port %d: want 1..65535", port)
	}
	var l api.Listener
	if err := s.c.call(ctx, http.MethodPost, s.path("/listeners"), nil, api.ListenRequest{Port: port}, &l); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(s.ctx) // the sandbox's Stop ends it too
	return &listener{s: s, info: l, ctx: lctx, cancel: cancel}, nil
}

type listener struct {
	s      *Sandbox
	info   api.Listener
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	if l.ctx.Err() != nil {
		return nil, net.ErrClosed
	}
	conn, err := l.s.c.upgrade(l.ctx, l.s.path("/listeners/"+url.PathEscape(l.info.ID)+"/accept"))
	if err != nil {
		if l.ctx.Err() != nil || errors.Is(err, errs.SandboxUnavailable) || errors.Is(err, errs.NotFound) {
			return nil, errors.Join(net.ErrClosed, err)
		}
		return nil, err
	}
	return conn, nil
}

// Close stops listening in the sandbox. Idempotent.
func (l *listener) Close() error {
	var err error
	l.once.Do(func() {
		l.cancel()
		if l.s.check() == nil {
			err = l.s.c.call(context.Background(), http.MethodDelete, l.s.path("/listeners/"+url.PathEscape(l.info.ID)), nil, nil, nil)
		}
	})
	return err
}

func (l *listener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: l.info.Port}
}
