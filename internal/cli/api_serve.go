package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Defaults of `sandboxerd serve` (docs/api.md).
const (
	DefaultListen          = "127.0.0.1:7878"
	DefaultSandboxTTL      = time.Hour
	DefaultSandboxIdle     = 5 * time.Minute
	DefaultMaxSandboxTTL   = 24 * time.Hour
	DefaultMaxRequestBytes = 64 << 20
	DefaultMaxFileBytes    = 1 << 30
)

func newServeCmd(std Streams) *cobra.Command {
	var listen, tokens, certFile, keyFile, maxReq, maxFile string
	var ttl, idle, maxTTL time.Duration
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve sandboxes over an HTTP API (docs/api.md)",
		Long: `Serve the HTTP API of docs/api.md: sandboxes of every adapter created, used and deleted by
clients (the TypeScript and Python SDKs, the remote adapter, curl). The sandbox flags (--adapter,
--memory, --image, ...) are the defaults of the sandboxes a request makes; a request may ask for
another adapter, image and limits. Tool calls are recorded in the journal.

--listen is HOST:PORT or unix:PATH. A server on anything but loopback or a unix socket needs
--tokens and --tls-cert/--tls-key: it refuses to start otherwise. Sandboxes live until deleted,
their --ttl passes or they stay unused for --idle-timeout; when the server stops (SIGINT,
SIGTERM) it removes them all, and a server that starts removes what a crashed one left.`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			if !served(s.Adapter) {
				return usage(fmt.Errorf("--adapter %s: a server runs its sandboxes itself (want one of %v)", s.Adapter, servedAdapters()))
			}
			lg := log.New(std.Err, "sandboxerd serve: ", log.LstdFlags)
			opt := apiOptions{Base: s, TTL: ttl, Idle: idle, MaxTTL: maxTTL, Log: lg}
			if opt.MaxRequestBytes, err = parseSize(maxReq); err != nil || opt.MaxRequestBytes < 1<<10 {
				return usage(fmt.Errorf("--max-request-bytes %q: want a size of at least 1KiB", maxReq))
			}
			if opt.MaxFileBytes, err = parseSize(maxFile); err != nil || opt.MaxFileBytes < 1 {
				return usage(fmt.Errorf("--max-file-bytes %q: want a size like 1GiB", maxFile))
			}
			if ttl <= 0 || idle < 0 || maxTTL < 0 || (maxTTL > 0 && ttl > maxTTL) {
				return usage(fmt.Errorf("--ttl must be more than 0 and at most --max-ttl; --idle-timeout and --max-ttl not negative"))
			}
			if tokens != "" {
				if opt.Tokens, err = openTokens(tokens, lg); err != nil {
					return usage(err)
				}
			}
			ln, err := serveListener(listen, opt.Tokens != nil, certFile, keyFile)
			if err != nil {
				return usage(err)
			}
			m, stopMetrics, err := startMetrics(c, std)
			if err != nil {
				ln.Close()
				return err
			}
			defer stopMetrics()
			opt.Metrics = m
			return serveAPI(c.Context(), ln, opt, std)
		}),
	}
	addCommonFlags(c.Flags())
	f := c.Flags()
	addMetricsFlag(f)
	f.StringVar(&listen, "listen", DefaultListen, "HOST:PORT or unix:PATH to serve on (anything but loopback or a unix socket needs --tokens and TLS)")
	f.StringVar(&tokens, "tokens", "", "tokens file (hashes; `sandboxerd serve token add` writes it): callers must present one of its tokens")
	f.StringVar(&certFile, "tls-cert", "", "TLS certificate file (PEM)")
	f.StringVar(&keyFile, "tls-key", "", "TLS key file (PEM)")
	f.DurationVar(&ttl, "ttl", DefaultSandboxTTL, "lifetime of a sandbox whose create request gives none (extendable)")
	f.DurationVar(&idle, "idle-timeout", DefaultSandboxIdle, "a sandbox unused this long is removed (0: never); a request may set its own")
	f.DurationVar(&maxTTL, "max-ttl", DefaultMaxSandboxTTL, "the longest lifetime a request may ask (0: no maximum); a token may have a lower one")
	f.StringVar(&maxReq, "max-request-bytes", "64MiB", "largest JSON request body (tool inputs, exec with its stdin)")
	f.StringVar(&maxFile, "max-file-bytes", "1GiB", "largest file uploaded or downloaded")
	c.AddCommand(newServeTokenCmd(std))
	return c
}

func newServeTokenCmd(std Streams) *cobra.Command {
	tok := &cobra.Command{Use: "token", Short: "Manage the tokens file of `sandboxerd serve`"}
	var file, maxMem string
	var t token
	var maxTTL time.Duration
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Make a token, add its hash to --tokens and print it (it is stored nowhere)",
		Args:  exactArgs(1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			if file == "" {
				return usage(errors.New("--tokens FILE is required"))
			}
			t.Name = args[0]
			if maxMem != "" {
				n, err := parseSize(maxMem)
				if err != nil {
					return usage(fmt.Errorf("--max-memory: %w", err))
				}
				t.MaxMemoryBytes = n
			}
			t.MaxTTLSeconds = int64(maxTTL / time.Second)
			secret, err := addToken(file, t)
			if err != nil {
				return usage(err)
			}
			fmt.Fprintln(std.Out, secret)
			return nil
		}),
	}
	add.Flags().StringVar(&file, "tokens", "", "the tokens file (created 0600 when missing)")
	add.Flags().StringArrayVar(&t.Adapters, "adapter", nil, "an adapter the token may use (repeatable; default every adapter)")
	add.Flags().IntVar(&t.MaxSandboxes, "max-sandboxes", 0, "sandboxes the token may have at once (0: no quota)")
	add.Flags().StringVar(&maxMem, "max-memory", "", "memory its sandboxes may ask together (like 16GiB; default no quota)")
	add.Flags().DurationVar(&maxTTL, "max-ttl", 0, "the longest lifetime its sandboxes may ask (0: the server's)")
	tok.AddCommand(add)
	return tok
}

// serveListener opens the listener of --listen, refusing an address that is neither loopback nor
// a unix socket unless the server has tokens and TLS.
func serveListener(listen string, tokens bool, certFile, keyFile string) (net.Listener, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	var ln net.Listener
	if path, ok := strings.CutPrefix(listen, "unix:"); ok {
		if !filepath.IsAbs(path) {
			return nil, fmt.Errorf("--listen %q: the socket's path must be absolute", listen)
		}
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(path) // a stale socket of a server that is gone (a live one holds the state lock)
		}
		var err error
		if ln, err = net.Listen("unix", path); err != nil {
			return nil, err
		}
		if err := os.Chmod(path, 0o600); err != nil {
			ln.Close()
			return nil, err
		}
	} else {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("--listen %q: want HOST:PORT or unix:PATH", listen)
		}
		ip := net.ParseIP(host)
		loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
		if !loopback && (!tokens || certFile == "") {
			return nil, fmt.Errorf("--listen %q is not loopback: a server others can reach needs --tokens and --tls-cert/--tls-key", listen)
		}
		if ln, err = net.Listen("tcp", listen); err != nil {
			return nil, err
		}
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("TLS: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	}
	return ln, nil
}

// serveAPI serves on ln until ctx ends, then stops accepting, lets calls in progress end (10 s)
// and removes every sandbox.
func serveAPI(ctx context.Context, ln net.Listener, opt apiOptions, std Streams) error {
	a, err := newAPIServer(ctx, opt)
	if err != nil {
		ln.Close()
		return err
	}
	defer a.Close()
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second, ErrorLog: opt.Log,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	fmt.Fprintf(std.Err, "sandboxerd serve: listening on %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return a.Close()
}
