package cli

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/internal/inherited"
	"github.com/sandboxer/sandboxer/internal/oneshot"
	"github.com/sandboxer/sandboxer/internal/telemetry"
)

// DefaultServerIdle is how long the resident server waits for a call before it ends.
const DefaultServerIdle = 5 * time.Minute

// newServerCmd is the resident server the front (cmd/sandboxer) starts on first use: it runs
// the one-shot calls of the fronts of one environment (internal/oneshot) on their descriptors,
// keeps their journals open and their local sandboxes' helpers warm, and ends when idle.
func newServerCmd(std Streams) *cobra.Command {
	var dir, name, metricsListen string
	var idle time.Duration
	c := &cobra.Command{
		Use:    "server",
		Short:  "Serve the one-shot calls of the sandboxer front (started by the front; see docs/cli.md)",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			return runServer(c.Context(), dir, name, idle, metricsListen, std)
		}),
	}
	c.Flags().StringVar(&dir, "dir", "", "directory of the socket (the front's)")
	c.Flags().StringVar(&name, "name", "", "the server's name (the front's hash of engine and environment)")
	c.Flags().DurationVar(&idle, "idle", DefaultServerIdle, "end after this long without a call")
	c.Flags().StringVar(&metricsListen, flagMetricsListen, "", "serve Prometheus metrics on this loopback HOST:PORT or unix:PATH (the front's SANDBOXER_SERVER_METRICS_LISTEN)")
	return c
}

// runServer serves on DIR/NAME.sock, once it holds DIR/NAME.lock, until ctx ends, the server has
// been idle for idle, or its socket was removed. It says so on descriptor 3 when the front
// started it (oneshot.Ready, or oneshot.Busy when another server holds the lock).
//
// First of all it closes every descriptor its caller left it but that pipe (inherited.Close):
// the front's own caller's, which a server outliving the call must not hold. Then it checks the
// directory's path (oneshot.OpenServerDir, as the front did) and reaches its files only through
// the directory opened, never following a link.
func runServer(ctx context.Context, dir, name string, idle time.Duration, metricsListen string, std Streams) error {
	var keep []int
	// Descriptor 3 is the front's pipe. It is kept and wrapped only when it is one: an *os.File
	// of a descriptor that is not open would close whatever gets that number later.
	if st := (syscall.Stat_t{}); syscall.Fstat(3, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO {
		keep = append(keep, 3)
	}
	if err := inherited.Close(keep...); err != nil {
		return err
	}
	if !filepath.IsAbs(dir) || name == "" || filepath.Base(name) != name {
		return usage(errors.New("server: --dir (absolute) and --name are required"))
	}
	tell := func(string) {}
	if len(keep) > 0 {
		ready := os.NewFile(3, "ready")
		defer ready.Close()
		tell = func(s string) {
			ready.WriteString(s)
			ready.Close()
		}
	}
	d, err := oneshot.OpenServerDir(dir, os.Geteuid())
	if err != nil {
		return err
	}
	defer d.Close()
	lock, err := d.OpenFile(name+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		tell(oneshot.Busy)
		return nil
	}
	lock.Truncate(0)
	lock.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	key, err := writeKey(d, oneshot.KeyName(name))
	if err != nil {
		return err
	}
	sock := name + ".sock"
	d.Remove(sock) // a crashed server's: it held the lock
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: d.SocketPath(sock), Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false)
	mine, err := d.Lstat(sock)
	if err != nil {
		ln.Close()
		return err
	}
	same := func() bool { st, err := d.Lstat(sock); return err == nil && st.Dev == mine.Dev && st.Ino == mine.Ino }
	srv := &server{key: key, warm: newWarmth(), log: slog.New(slog.NewTextHandler(std.Err, nil)), last: time.Now()}
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	if metricsListen != "" {
		// A bad address or a port in use is logged: the server serves its calls without metrics.
		if ms, err := telemetry.ServeMetrics(metricsListen); err != nil {
			srv.log.Error("metrics", "err", err)
		} else {
			defer ms.Close()
			srv.warm.gauges(ms.Metrics)
			srv.log.Info("metrics", "listen", ms.Addr().String())
		}
	}
	tell(oneshot.Ready)
	// The server holds descriptors for every call and every sandbox (journals, helpers, agents'
	// links and direct streams): its soft RLIMIT_NOFILE is already raised to the hard limit (less
	// one) by Go's own start (package syscall, since Go 1.19, for every Go program on Linux; the
	// processes it starts get the original soft limit back), so it is only logged here.
	var files syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &files)
	srv.log.Info("serving", "socket", d.Name(sock), "pid", os.Getpid(), "idle", idle, "files", files.Cur)

	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		srv.accept(ln)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	why := ""
	for why == "" {
		select {
		case <-ctx.Done():
			why = "signal"
		case <-tick.C:
			if !same() {
				why = "socket removed"
			} else if srv.idleFor() >= idle {
				why = "idle"
			} else {
				srv.warm.expire(idle)
				srv.warm.checkpoint(ctx, time.Second)
			}
		}
	}
	srv.log.Info("ending", "why", why)
	if same() {
		d.Remove(sock)
		d.Remove(oneshot.KeyName(name))
	}
	ln.Close()
	<-accepting
	if why == "signal" {
		srv.cancel() // the calls end as an interrupted process's would
	}
	srv.calls.Wait()
	srv.cancel()
	srv.warm.close()
	return nil
}

// server is the resident server's state.
type server struct {
	key    string          // oneshot.Request.Key
	ctx    context.Context // cancelled when the server ends: its calls are cancelled
	cancel context.CancelFunc
	warm   *warmth
	log    *slog.Logger
	calls  sync.WaitGroup

	mu     sync.Mutex
	active int
	last   time.Time // the end of the last call
}

func (srv *server) idleFor() time.Duration {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.active > 0 {
		return 0
	}
	return time.Since(srv.last)
}

// accept serves ln until it is closed. A failing accept never ends it: a shortage of descriptors
// (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM) lasts until something is closed, and a loop that
// ended on it would leave every later call waiting in the backlog until the server ended as
// idle. It pauses instead, 5 ms doubling up to 1 s as net/http's Serve does, and accepts again.
func (srv *server) accept(ln *net.UnixListener) {
	var pause time.Duration
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if pause == 0 {
				srv.log.Error("accept failed; trying again, pausing 5ms doubling up to 1s", "err", err)
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		if pause != 0 {
			srv.log.Info("accepting again")
			pause = 0
		}
		srv.mu.Lock()
		srv.active++
		srv.calls.Add(1)
		srv.mu.Unlock()
		go func() {
			defer func() {
				srv.mu.Lock()
				srv.active--
				srv.last = time.Now()
				srv.mu.Unlock()
				srv.calls.Done()
			}()
			srv.handle(conn)
		}()
	}
}

// handle runs one call: the peer must be this user in this server's namespaces.
func (srv *server) handle(conn *net.UnixConn) {
	defer conn.Close()
	if err := checkPeer(conn); err != nil {
		srv.log.Warn("refused", "err", err)
		conn.Write(oneshot.Reply(oneshot.Refused, 0))
		return
	}
	req, err := readRequest(conn)
	if err != nil {
		srv.log.Warn("bad request", "err", err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(req.Key), []byte(srv.key)) != 1 {
		srv.log.Warn("refused", "err", "the request's key is not this server's")
		conn.Write(oneshot.Reply(oneshot.Refused, 0))
		return
	}
	if _, err := conn.Write(oneshot.Reply(oneshot.Accepted, 0)); err != nil {
		return
	}
	files, err := readStdio(conn)
	if err != nil {
		srv.log.Warn("no stdio after the request", "err", err)
		return
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	ctx, cancel := context.WithCancel(srv.ctx)
	defer cancel()
	go func() {
		// The front sends nothing more: a read that returns means it is gone (interrupted).
		var b [1]byte
		conn.Read(b[:])
		cancel()
	}()
	inv := invocation{env: sandboxerEnv(req.Env), caller: append([]string{}, req.Env...), dir: req.Dir, warm: srv.warm}
	code := runCall(withInvocation(ctx, inv), req.Args, Streams{In: files[0], Out: files[1], Err: files[2]})
	conn.Write(oneshot.Reply(oneshot.Exit, uint32(code)))
}

// writeKey writes a new random key to the file key of d (this user's only), replacing the last
// server's.
func writeKey(d *oneshot.ServerDir, key string) (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	k := hex.EncodeToString(b)
	tmp := key + ".new"
	d.Remove(tmp)
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(k)
	if err = errors.Join(err, f.Close()); err == nil {
		err = d.Rename(tmp, key)
	}
	return k, err
}

// runCall runs a command line; a panic ends the call (exit status 1), not the server. A
// caller's stdout that is a pipe closed early (sandboxer log | head) ends the call as SIGPIPE ends
// a process of its own: silently, with status 141.
func runCall(ctx context.Context, args []string, std Streams) (code int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &pipeOut{w: std.Out, broken: cancel}
	std.Out = out
	std.Err = &quietErr{w: std.Err, out: out}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(std.Err, "sandboxer: internal error: %v\n%s", r, debug.Stack())
			code = 1
		}
		if out.isBroken() {
			code = 128 + int(syscall.SIGPIPE)
		}
	}()
	return run(ctx, args, std)
}

// pipeOut is a call's stdout: a write that finds the pipe closed (EPIPE) cancels the call.
type pipeOut struct {
	w      io.Writer
	broken context.CancelFunc
	mu     sync.Mutex
	closed bool
}

func (p *pipeOut) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.broken()
	}
	return n, err
}

func (p *pipeOut) isBroken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// quietErr is a call's stderr, silent once its stdout broke (what follows is about that).
type quietErr struct {
	w   io.Writer
	out *pipeOut
}

// Fd is the descriptor under it, if any, for the terminal checks of progress output.
func (q *quietErr) Fd() uintptr {
	if f, ok := q.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

func (q *quietErr) Write(b []byte) (int, error) {
	if q.out.isBroken() {
		return len(b), nil
	}
	return q.w.Write(b)
}

// checkPeer accepts a peer of this user in this server's user, mount and PID namespaces: a
// command in a sandbox (which may run as this user) is in namespaces of its own.
func checkPeer(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err = errors.Join(cerr, err); err != nil {
		return err
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("peer uid %d is not this server's %d", cred.Uid, os.Geteuid())
	}
	for _, ns := range []string{"user", "mnt", "pid"} {
		own, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return err
		}
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(int(cred.Pid)) + "/ns/" + ns)
		if err != nil || theirs != own {
			return fmt.Errorf("peer pid %d is not in this server's %s namespace (%s, %v)", cred.Pid, ns, theirs, err)
		}
	}
	return nil
}

// readRequest reads a request. It comes without descriptors (a front sends its stdio once the
// call is accepted: readStdio); any sent with it are dropped by the kernel, as the reads leave no
// room for them.
func readRequest(conn *net.UnixConn) (oneshot.Request, error) {
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	header := make([]byte, oneshot.HeaderLen)
	if _, err := io.ReadFull(conn, header); err != nil {
		return oneshot.Request{}, err
	}
	size, err := oneshot.BodyLen(header)
	if err != nil {
		return oneshot.Request{}, err
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(conn, body); err != nil {
		return oneshot.Request{}, err
	}
	return oneshot.Parse(body)
}

// readStdio reads the front's oneshot.Stdio byte and the three descriptors attached to it.
func readStdio(conn *net.UnixConn) ([]*os.File, error) {
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	var b [1]byte
	oob := make([]byte, syscall.CmsgSpace(3*4))
	n, oobn, flags, _, err := conn.ReadMsgUnix(b[:], oob)
	var files []*os.File
	if oobn > 0 {
		var perr error
		files, perr = rights(oob[:oobn])
		err = errors.Join(err, perr)
	}
	switch {
	case err != nil:
	case n != 1 || b[0] != oneshot.Stdio:
		err = errors.New("not the front's stdio")
	case flags&syscall.MSG_CTRUNC != 0 || len(files) != 3:
		err = fmt.Errorf("want 3 descriptors, got %d", len(files))
	}
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	return files, nil
}

// rights turns the SCM_RIGHTS of a control message into files.
func rights(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "fd"+strconv.Itoa(len(files))))
		}
	}
	return files, nil
}
