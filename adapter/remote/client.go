package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

// client speaks the API to one server.
type client struct {
	base   string // http(s)://HOST:PORT, or http://unix for a unix socket
	token  string
	dial   func(ctx context.Context) (net.Conn, error) // a raw connection to the server (ports)
	host   string                                      // the Host header of raw connections
	http   *http.Client
	closer func()
}

func newClient(cfg Config) (*client, error) {
	c := &client{token: cfg.Token}
	// Buffers of 64 KiB: uploads and downloads of large files move in fewer, larger writes.
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second, TLSClientConfig: cfg.TLS, ForceAttemptHTTP2: false,
		WriteBufferSize: 64 << 10, ReadBufferSize: 64 << 10}
	if path, ok := strings.CutPrefix(cfg.URL, "unix:"); ok {
		var d net.Dialer
		c.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", path) }
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return c.dial(ctx) }
		c.base, c.host = "http://unix", "unix"
	} else {
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errs.New(errs.InvalidInput, "remote", "", "URL %q: want http://HOST:PORT, https://HOST:PORT or unix:PATH", cfg.URL)
		}
		c.base, c.host = strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/"), u.Host
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
		var d net.Dialer
		if u.Scheme == "https" {
			conf := cfg.TLS.Clone()
			if conf == nil {
				conf = &tls.Config{}
			}
			if conf.ServerName == "" {
				conf.ServerName = u.Hostname()
			}
			conf.NextProtos = []string{"http/1.1"}
			c.dial = func(ctx context.Context) (net.Conn, error) {
				return (&tls.Dialer{Config: conf}).DialContext(ctx, "tcp", addr)
			}
		} else {
			c.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
		}
	}
	c.http = &http.Client{Transport: tr}
	c.closer = tr.CloseIdleConnections
	return c, nil
}

// request makes a request of the API. body is JSON-encoded unless it is an io.Reader or nil.
func (c *client) request(ctx context.Context, method, path string, query url.Values, body any) (*http.Request, error) {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd, ctype = b, "application/octet-stream"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, errs.Wrap(errs.InvalidInput, "remote", "", err)
		}
		rd, ctype = bytes.NewReader(data), "application/json"
	}
	u := c.base + api.Version + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidInput, "remote", "", err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// do sends a request and returns the response of a success (2xx); a refusal is returned as its
// error (*errs.Error with the server's code) and, when it has one, the partial result.
func (c *client) do(req *http.Request) (*http.Response, *api.ExecResult, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, nil, ctxErr
		}
		return nil, nil, noAnswer(err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<24))
	var ref api.Refusal
	if json.Unmarshal(data, &ref) != nil || ref.Error == nil {
		return nil, nil, errs.New(errs.Internal, "remote", "", "%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	return nil, ref.Result, ref.Error.Err()
}

// call sends a JSON request and decodes a JSON answer into out (when not nil).
func (c *client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	req, err := c.request(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	resp, _, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return noAnswer(fmt.Errorf("reading the answer: %w", err))
	}
	return nil
}

// upgrade opens a raw connection to path with an upgrade to tcp (port forwarding): the answer
// must be 101, after which the connection carries the port's bytes.
func (c *client) upgrade(ctx context.Context, path string) (net.Conn, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, noAnswer(err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s%s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n", api.Version, path, c.host)
	if c.token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", c.token)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		conn.Close()
		return nil, noAnswer(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, noAnswer(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		conn.Close()
		var ref api.Refusal
		if json.Unmarshal(data, &ref) == nil && ref.Error != nil {
			return nil, ref.Error.Err()
		}
		return nil, errs.New(errs.Internal, "remote", "", "%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	return &bufferedConn{Conn: conn, r: br}, nil
}

// bufferedConn reads what the response's reader buffered past the 101 first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes a TCP or unix connection (a TLS one: not at all), as net.TCPConn does.
func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
