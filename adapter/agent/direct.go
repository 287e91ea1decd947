package agent

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Direct streams.
//
// A stream multiplexed over the agent's link shares that link with every call, and the link is
// often slow: the docker daemon's attach relays it, or a runtime's pipes. When the host and the
// sandbox share a file system, the agent instead hands the sandbox's TCP connection itself to the
// client: the client listens on a unix socket in a host directory that the adapter mounts
// read-only in the sandbox (SetDirect); for each stream (a dialled port, a connection accepted on
// a listener) the agent connects there and passes the connection's descriptor (SCM_RIGHTS). The
// client then reads and writes a socket of the sandbox's own network namespace, as the local
// adapter does: nothing copies the bytes in between.
//
// The host never connects to anything the sandbox can name or replace: the directory is read-only
// inside, the sandbox only connects out to it. Each connection opens with directMagic, the
// client's token (sent over the link, never written where the sandbox can read it) and the
// stream's ids, so that anything else that connects there is turned away; and a descriptor is
// taken only when it is a TCP socket. Since anything in the sandbox can connect, the header is
// read first, within directHeaderWait, and at most directPending connections are read at once:
// a connection without the token is closed as soon as its header is wrong or late, and one over
// the cap at once. After the token nothing is kept but what the client waits for: a stream's
// connection goes to its Dial or its listener's queue (acceptBacklog), a spare to the spares
// (2*directSpares); anything else is closed.
//
// A dial must not wait for a round trip over the slow link either: the agent keeps directSpares
// connections open to the client's socket, idle. Dial takes one and writes the port on it; the
// agent answers on it with a status byte and the connection's descriptor (or, for a failure, a
// message). Without a spare at hand, the dial is a request over the link.
//
// The first Dial or Listen sets the path up (request "direct": the agent connects once as a
// probe). When that fails (no shared directory: a remote daemon, a runtime that refuses host
// sockets) or a descriptor cannot be passed, the stream is multiplexed as before.

// DirectSandboxDir is where the docker and oci adapters mount the host directory of direct
// streams in the sandbox.
const DirectSandboxDir = "/run/sandboxer"

const (
	directMagic     = "SBD1"
	directTokenLen  = 16
	directHeaderLen = len(directMagic) + directTokenLen + 8
	// directWait bounds the wait for a stream's connection (and the probe's).
	directWait = 5 * time.Second
	// directHeaderWait bounds the reading of a connection's header, the first thing done with it.
	// The agent writes the whole header, with its descriptor, in one sendmsg as soon as it is
	// connected, so a real header is there when its connection is accepted; a second leaves a
	// loaded host ample room, and is as long as a connection that brings no header can hold one
	// of the pending slots (anything in the sandbox can connect: the socket's name is no secret).
	directHeaderWait = time.Second
	// directPending bounds the connections of a client (a sandbox's handle) whose header is being
	// read: one more is closed at once, unread. The agent's own are admitted in microseconds and
	// it opens a few at a time (its spares, a stream), so a flood costs the host at most this many
	// descriptors (and the descriptors they pass, at most 4 each, closed at once), never the
	// server's limit.
	directPending = 16
	// directSpares is how many idle connections the agent keeps open for dials.
	directSpares = 2
	// spareID marks a spare connection's header.
	spareID = ^uint32(0)
)

// Answers to a dial on a spare connection: one byte, then for a failure a 2-byte length and the
// message.
const (
	spareOK byte = iota
	spareRefused
	spareInvalid
	spareUnavailable
)

var spareCodes = map[byte]string{spareRefused: "refused", spareInvalid: "invalid", spareUnavailable: "unavailable"}

// errNoDirect says a stream could not use the direct path: the caller multiplexes it.
var errNoDirect = errors.New("no direct stream")

// SetDirect lets the client use direct streams through hostDir, which the sandbox sees at
// sandboxDir. It does no I/O: the path is set up at the first Dial or Listen. Call it before either.
func (c *Client) SetDirect(hostDir, sandboxDir string) {
	c.dmu.Lock()
	c.directDirs = [2]string{hostDir, sandboxDir}
	c.dmu.Unlock()
}

// DirectStreams reports whether the client's streams are direct (false until the first Dial or
// Listen has set them up) and, when they are multiplexed after SetDirect, why (nil: direct, or
// not tried yet).
func (c *Client) DirectStreams() (bool, error) {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	return c.direct != nil, c.directErr
}

// directLink is the client's side of the direct streams: its listening socket (owned: Close
// removes it) and the streams it waits for.
type directLink struct {
	c     *Client
	ln    *net.UnixListener
	path  string // the socket's, removed by close
	token []byte

	spares chan *net.UnixConn // the agent's idle connections for dials
	slots  chan struct{}      // one per connection being admitted (directPending)

	mu      sync.Mutex
	pending map[uint32]chan net.Conn // dial id (0: the probe) -> its connection
	closed  bool
}

// directPath returns the client's direct link, setting it up on first use; nil when streams are
// multiplexed.
func (c *Client) directPath(ctx context.Context) *directLink {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.direct != nil || c.directTried || c.directDirs[0] == "" {
		return c.direct
	}
	c.directTried = true
	d, err := c.openDirect(ctx)
	if err != nil {
		c.directErr = err
		return nil
	}
	c.direct = d
	// The link may have ended meanwhile (endAll has run without seeing c.direct).
	select {
	case <-c.done:
		d.close()
	default:
	}
	return d
}

func (c *Client) openDirect(ctx context.Context) (*directLink, error) {
	var name [4]byte
	token := make([]byte, directTokenLen)
	rand.Read(name[:])
	rand.Read(token)
	file := "c-" + hex.EncodeToString(name[:]) + ".sock"
	hostPath := filepath.Join(c.directDirs[0], file)
	ln, err := listenUnixIn(c.directDirs[0], file)
	if err != nil {
		return nil, err
	}
	// The sandbox's user (any uid) connects; the token, not the mode, keeps others out.
	if err := os.Chmod(hostPath, 0o666); err != nil {
		ln.Close()
		os.Remove(hostPath)
		return nil, err
	}
	d := &directLink{c: c, ln: ln, path: hostPath, token: token, pending: map[uint32]chan net.Conn{},
		spares: make(chan *net.UnixConn, 2*directSpares), slots: make(chan struct{}, directPending)}
	probe := d.expect(0)
	go d.serve()
	id, err := c.newID()
	if err == nil {
		_, err = c.request(ctx, id, Request{Op: "direct", Path: path.Join(c.directDirs[1], file), Token: token})
	}
	if err == nil {
		var conn net.Conn
		conn, err = d.await(ctx, 0, probe)
		if conn != nil {
			conn.Close()
		}
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// listenUnixIn listens on a unix socket named name in dir. A socket's path is limited to about
// 100 bytes; a longer one is reached through this process's descriptor of dir (Linux). The
// listener does not remove the socket when closed: the caller does, by its real path.
func listenUnixIn(dir, name string) (*net.UnixListener, error) {
	addr := filepath.Join(dir, name)
	if len(addr) > 100 && runtime.GOOS == "linux" {
		f, err := os.Open(dir)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		addr = "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) + "/" + name
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	return ln, nil
}

// expect registers the stream whose connection is to come.
func (d *directLink) expect(id uint32) chan net.Conn {
	ch := make(chan net.Conn, 1)
	d.mu.Lock()
	d.pending[id] = ch
	d.mu.Unlock()
	return ch
}

// forget drops a stream nobody waits for any more, and its connection if it came.
func (d *directLink) forget(id uint32, ch chan net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[id] == ch {
		delete(d.pending, id)
	}
	select {
	case conn := <-ch:
		conn.Close()
	default:
	}
}

// await waits for stream id's connection (the agent has made it when it answered).
func (d *directLink) await(ctx context.Context, id uint32, ch chan net.Conn) (net.Conn, error) {
	t := time.NewTimer(directWait)
	defer t.Stop()
	select {
	case conn := <-ch:
		return conn, nil
	case <-ctx.Done():
		d.forget(id, ch)
		return nil, ctx.Err()
	case <-d.c.done:
		d.forget(id, ch)
		return nil, d.c.err
	case <-t.C:
		d.forget(id, ch)
		return nil, errors.New("agent: the direct stream's connection did not arrive")
	}
}

// serve accepts the agent's connections until the link closes; a connection over directPending
// is closed at once.
func (d *directLink) serve() {
	var pause acceptPause
	for {
		conn, err := d.ln.AcceptUnix()
		if err != nil {
			if pause.wait(err) {
				continue
			}
			return
		}
		pause = 0
		select {
		case d.slots <- struct{}{}:
			go func() {
				defer func() { <-d.slots }()
				d.admit(conn)
			}()
		default:
			conn.Close()
		}
	}
}

// acceptPause paces an accept loop through failing accepts: a shortage of descriptors (EMFILE,
// ENFILE) or of memory (ENOBUFS, ENOMEM) lasts until something is closed, and a loop that ended
// on it would leave every later connection waiting in the backlog. So any error but the
// listener's close pauses the loop, 5 ms doubling up to 1 s as net/http's Serve does, and it
// accepts again. (internal/cli's server does the same; the agent's source compiles alone, so
// they do not share this.)
type acceptPause time.Duration

// wait pauses after err and reports whether to accept again: false when the listener is closed.
func (p *acceptPause) wait(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	*p = acceptPause(min(max(2*time.Duration(*p), 5*time.Millisecond), time.Second))
	time.Sleep(time.Duration(*p))
	return true
}

// admit reads a connection's header and hands the connection it carries (the probe: none) to its
// stream or listener.
func (d *directLink) admit(ux *net.UnixConn) {
	var h [directHeaderLen]byte
	ux.SetReadDeadline(time.Now().Add(directHeaderWait))
	n, conn, err := recvConn(ux, h[:])
	if err == nil && n < len(h) {
		_, err = io.ReadFull(ux, h[n:])
	}
	if err != nil || string(h[:len(directMagic)]) != directMagic ||
		subtle.ConstantTimeCompare(h[len(directMagic):len(directMagic)+directTokenLen], d.token) != 1 {
		ux.Close()
		if conn != nil {
			conn.Close()
		}
		return
	}
	ux.SetReadDeadline(time.Time{})
	id := binary.BigEndian.Uint32(h[directHeaderLen-8:])
	lid := binary.BigEndian.Uint32(h[directHeaderLen-4:])
	if id == spareID {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.closed && conn == nil {
			select {
			case d.spares <- ux:
				return
			default:
			}
		}
		ux.Close()
		if conn != nil {
			conn.Close()
		}
		return
	}
	if conn != nil {
		ux.Close()
	} else if id != 0 {
		ux.Close() // a stream without its connection
		return
	} else {
		conn = ux // the probe
	}
	if lid != 0 {
		d.c.mu.Lock()
		l := d.c.listeners[lid]
		d.c.mu.Unlock()
		if l == nil || !l.offer(conn) {
			conn.Close()
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ch := d.pending[id]
	delete(d.pending, id)
	if ch == nil || d.closed {
		conn.Close()
		return
	}
	ch <- conn // room for one: never blocks
}

// recvConn reads into b from ux, and the TCP connection whose descriptor came with the bytes, if
// any. A descriptor that is not a TCP socket is closed and is an error; so are extra descriptors.
func recvConn(ux *net.UnixConn, b []byte) (int, net.Conn, error) {
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, flags, _, err := ux.ReadMsgUnix(b, oob)
	var files []*os.File
	if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, m := range msgs {
			fds, _ := syscall.ParseUnixRights(&m)
			for _, fd := range fds {
				files = append(files, os.NewFile(uintptr(fd), "direct stream"))
			}
		}
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		return n, nil, err
	}
	if flags&syscall.MSG_CTRUNC != 0 || len(files) > 1 {
		return n, nil, errors.New("agent: too many descriptors on a direct stream")
	}
	if len(files) == 0 {
		return n, nil, nil
	}
	conn, err := net.FileConn(files[0])
	if err != nil {
		return n, nil, err
	}
	if _, ok := conn.(*net.TCPConn); !ok {
		conn.Close()
		return n, nil, errors.New("agent: a direct stream's descriptor is not a TCP connection")
	}
	return n, conn, nil
}

// close stops listening and removes the socket. Idempotent.
func (d *directLink) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.mu.Unlock()
	d.ln.Close()
	os.Remove(d.path)
	for {
		select {
		case conn := <-d.spares:
			conn.Close()
		default:
			return
		}
	}
}

// dialSpare dials port over one of the agent's spare connections; errNoDirect when none is at
// hand.
func (d *directLink) dialSpare(ctx context.Context, port int) (net.Conn, error) {
	var ux *net.UnixConn
	select {
	case ux = <-d.spares:
	default:
		return nil, errNoDirect
	}
	defer ux.Close()
	if dl, ok := ctx.Deadline(); ok {
		ux.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { ux.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(port))
	var status [1]byte
	var conn net.Conn
	_, err := ux.Write(b[:])
	if err == nil {
		_, conn, err = recvConn(ux, status[:])
	}
	if err == nil && status[0] == spareOK && conn == nil {
		err = errors.New("agent: a dial's answer came without its connection")
	}
	if err == nil && status[0] != spareOK {
		var n [2]byte
		if _, err = io.ReadFull(ux, n[:]); err == nil {
			msg := make([]byte, binary.BigEndian.Uint16(n[:]))
			if _, err = io.ReadFull(ux, msg); err == nil {
				code := spareCodes[status[0]]
				if code == "" {
					code = "unavailable"
				}
				return nil, &RequestError{Code: code, Msg: string(msg)}
			}
		}
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errNoDirect // the agent closed it (its client is ending): try the link
	}
	return conn, nil
}

// closeDirect ends the direct link with the client's link.
func (c *Client) closeDirect() {
	c.dmu.Lock()
	d := c.direct
	c.dmu.Unlock()
	if d != nil {
		d.close()
	}
}

// dialDirect is Dial over a direct stream; errNoDirect when the agent could not make it.
func (c *Client) dialDirect(ctx context.Context, d *directLink, port int) (net.Conn, error) {
	id, err := c.newID()
	if err != nil {
		return nil, err
	}
	ch := d.expect(id)
	if _, err := c.request(ctx, id, Request{Op: "dial", Port: port, Direct: true}); err != nil {
		d.forget(id, ch)
		var re *RequestError
		if errors.As(err, &re) && re.Code == "nodirect" {
			return nil, errNoDirect
		}
		return nil, err
	}
	return d.await(ctx, id, ch)
}

// ---- the agent's side ----

// directTarget is where the agent connects a client's direct streams.
type directTarget struct {
	path  string
	token []byte
}

// connect opens a connection to the client's socket with the header of stream id (or of a
// connection accepted on listener lid), passing pass's descriptor with it when pass is not nil.
// The caller keeps pass.
func (t *directTarget) connect(id, lid uint32, pass net.Conn) (*net.UnixConn, error) {
	c, err := net.DialTimeout("unix", t.path, directWait)
	if err != nil {
		return nil, err
	}
	ux := c.(*net.UnixConn)
	h := make([]byte, 0, directHeaderLen)
	h = append(h, directMagic...)
	h = append(h, t.token...)
	h = binary.BigEndian.AppendUint32(h, id)
	h = binary.BigEndian.AppendUint32(h, lid)
	ux.SetWriteDeadline(time.Now().Add(directWait))
	if err := sendConn(ux, h, pass); err != nil {
		ux.Close()
		return nil, err
	}
	ux.SetWriteDeadline(time.Time{})
	return ux, nil
}

// pass hands c to the client as stream id (or a connection accepted on listener lid). c is closed
// here once passed; on an error the caller keeps it.
func (t *directTarget) pass(id, lid uint32, c net.Conn) error {
	ux, err := t.connect(id, lid, c)
	if err != nil {
		return err
	}
	ux.Close()
	c.Close()
	return nil
}

// sendConn writes msg on ux with c's descriptor (none when c is nil).
func sendConn(ux *net.UnixConn, msg []byte, c net.Conn) error {
	if c == nil {
		_, err := ux.Write(msg)
		return err
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("the connection has no descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := raw.Control(func(fd uintptr) {
		_, _, werr = ux.WriteMsgUnix(msg, syscall.UnixRights(int(fd)), nil)
	}); err != nil {
		return err
	}
	return werr
}

// setDirect answers request "direct": a probe connection to the client's socket, then the
// client's streams may be direct.
func (s *server) setDirect(req Request) Result {
	if !path.IsAbs(req.Path) || len(req.Token) != directTokenLen {
		return failure("invalid", "direct: bad path or token")
	}
	t := &directTarget{path: req.Path, token: req.Token}
	c, err := t.connect(0, 0, nil)
	if err != nil {
		return failure("unavailable", "direct: %v", err)
	}
	c.Close()
	s.mu.Lock()
	first := s.direct == nil
	s.direct = t
	s.mu.Unlock()
	if first {
		for range directSpares {
			go s.spare(t)
		}
	}
	return Result{}
}

// directTo returns the client's direct target, nil when its streams are multiplexed.
func (s *server) directTo() *directTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.direct
}

// spare keeps one idle connection open to the client's socket, and serves the dial that comes on
// it; the next spare is opened once this one is taken and answered. It ends with the client's link.
func (s *server) spare(t *directTarget) {
	ux, err := t.connect(spareID, 0, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		ux.Close()
		return
	}
	s.spares[ux] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.spares, ux)
		s.mu.Unlock()
		ux.Close()
	}()
	var b [4]byte
	if _, err := io.ReadFull(ux, b[:]); err != nil {
		return
	}
	// The next spare is opened once this dial is answered: on two cores, opening it now would
	// delay the dial.
	defer func() { go s.spare(t) }()
	port := int(binary.BigEndian.Uint32(b[:]))
	fail := func(code byte, err error) {
		msg := err.Error()
		if len(msg) > 1<<10 {
			msg = msg[:1<<10]
		}
		out := []byte{code, 0, 0}
		binary.BigEndian.PutUint16(out[1:], uint16(len(msg)))
		ux.Write(append(out, msg...))
	}
	if !validPort(port) {
		fail(spareInvalid, fmt.Errorf("port %d is outside 1..65535", port))
		return
	}
	c, err := net.DialTimeout("tcp", loopback(port), dialTimeout)
	if err != nil {
		code := spareUnavailable
		if errors.Is(err, syscall.ECONNREFUSED) {
			code = spareRefused
		}
		fail(code, err)
		return
	}
	defer c.Close()
	sendConn(ux, []byte{spareOK}, c)
}
