package remote

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

// unanswered is the cause of an error of a server that did not answer: no connection, a TLS
// failure, an answer cut short. Unreachable finds it.
type unanswered struct{ err error }

func (u *unanswered) Error() string { return u.err.Error() }
func (u *unanswered) Unwrap() error { return u.err }

// noAnswer is the error of a server that did not answer: errs.SandboxUnavailable, as a refusal
// of a sandbox the server does not have, but one Unreachable tells apart.
func noAnswer(err error) error {
	return errs.Wrap(errs.SandboxUnavailable, "remote", "", &unanswered{err})
}

// Unreachable reports whether err is of a server that did not answer (no connection, TLS, an
// answer cut short) rather than one of its refusals: both can be errs.SandboxUnavailable, but
// only a refusal says that a sandbox is gone.
func Unreachable(err error) bool {
	var u *unanswered
	return errors.As(err, &u)
}

// Health asks the server how it is (GET /v1/health, which needs no token): its version and
// the adapters it serves.
func Health(ctx context.Context, cfg Config) (api.Health, error) {
	var h api.Health
	err := once(cfg, func(c *client) error { return c.call(ctx, http.MethodGet, "/health", nil, nil, &h) })
	return h, err
}

// List returns the sandboxes the server has for cfg's token.
func List(ctx context.Context, cfg Config) ([]api.Sandbox, error) {
	var l api.SandboxList
	err := once(cfg, func(c *client) error { return c.call(ctx, http.MethodGet, "/sandboxes", nil, nil, &l) })
	return l.Sandboxes, err
}

// Remove deletes the server's sandbox id without attaching to it: errs.SandboxUnavailable
// (not Unreachable) when the server has none of that id for this token.
func Remove(ctx context.Context, cfg Config, id string) error {
	return once(cfg, func(c *client) error {
		return c.call(ctx, http.MethodDelete, "/sandboxes/"+url.PathEscape(id), nil, nil, nil)
	})
}

// once runs f with a client of cfg, closed after it.
func once(cfg Config, f func(c *client) error) error {
	c, err := newClient(cfg)
	if err != nil {
		return err
	}
	defer c.closer()
	return f(c)
}
