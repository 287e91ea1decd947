package agent

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter/agent/ring"
)

// hub is what an agent shares between its clients: the background processes and the listeners
// on the sandbox's loopback.
type hub struct {
	reap *reaper

	mu        sync.Mutex
	procs     map[string]*bgProc
	order     []string // process ids, oldest first
	started   int      // processes started so far (ids)
	listeners map[int]*hubListener
	closed    bool
	sock      net.Listener // HubSocket, when this agent serves it
}

func newHub(rp *reaper) *hub {
	return &hub{reap: rp, procs: map[string]*bgProc{}, listeners: map[int]*hubListener{}}
}

// Agent is a sandbox agent: it serves clients (Serve) and, as a container's main process, the
// clients that exec'd agents relay to HubSocket (ListenHub).
type Agent struct{ h *hub }

// New returns an agent. init makes it PID 1 of a container (see ServeInit).
func New(init bool) *Agent {
	var rp *reaper
	if init {
		rp = startReaper()
	}
	return &Agent{h: newHub(rp)}
}

// Serve serves one client over r and w until r ends (see package Serve); background processes
// stay with the agent.
func (a *Agent) Serve(r io.Reader, w io.Writer) error { return a.h.serve(r, w) }

// ListenHub serves HubSocket; false when another agent serves it already, or HubDir is not the
// agent's own (made by another user, or open to others).
func (a *Agent) ListenHub() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	if err := os.Mkdir(HubDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return false
	}
	if ownDir(HubDir) != nil {
		return false
	}
	ln, err := net.Listen("unix", HubSocket)
	if err != nil {
		return false
	}
	a.h.mu.Lock()
	a.h.sock = ln
	a.h.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if ownPeer(c) == nil {
					a.h.serve(c, c)
				}
			}()
		}
	}()
	return true
}

// ownDir checks that dir is a directory of the agent's user that no one else can open.
func ownDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: %w", dir, errNotOwn)
	}
	return nil
}

// ownPeer checks that the process at the other end of c runs as the agent's user.
func ownPeer(c net.Conn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errNotOwn
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	uid := -1
	raw.Control(func(fd uintptr) { uid, err = peerUID(fd) })
	if err != nil {
		return err
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("peer uid %d: %w", uid, errNotOwn)
	}
	return nil
}

// Close kills the background processes, their trees, and ends the listeners. Idempotent.
func (a *Agent) Close() { a.h.close() }

// Relay connects to the agent serving HubSocket and relays r to it and its answers to w, until r
// ends or the hub goes. It returns false at once, having read nothing, when no agent of its own
// user serves HubSocket in HubDir.
func Relay(r io.Reader, w io.Writer) bool {
	if ownDir(HubDir) != nil {
		return false
	}
	c, err := net.Dial("unix", HubSocket)
	if err != nil {
		return false
	}
	defer c.Close()
	if ownPeer(c) != nil {
		return false
	}
	back := make(chan struct{})
	go func() {
		io.Copy(w, c)
		close(back)
	}()
	go func() {
		io.Copy(c, r)
		c.(*net.UnixConn).CloseWrite()
	}()
	<-back
	return true
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	procs := h.procs
	lns := h.listeners
	h.listeners = map[int]*hubListener{}
	sock := h.sock
	h.mu.Unlock()
	if sock != nil {
		sock.Close()
	}
	for _, l := range lns {
		l.ln.Close()
	}
	trees := map[string]bool{}
	for _, p := range procs {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Process.Kill()
		if p.tree != "" {
			trees[p.tree] = true
		}
	}
	if len(trees) > 0 {
		killMarked(trees, syscall.SIGKILL)
	}
}

// ---- requests ----

// result sends res as the answer to request id, in parts of at most MaxPayload bytes.
func (s *server) result(id uint32, res Result) {
	b, err := json.Marshal(res)
	if err != nil {
		b, _ = json.Marshal(Result{Error: err.Error(), Code: "invalid"})
	}
	for len(b) > MaxPayload {
		s.send(FrameResultPart, id, b[:MaxPayload])
		b = b[MaxPayload:]
	}
	s.send(FrameResult, id, b)
}

func failure(code string, format string, args ...any) Result {
	return Result{Code: code, Error: fmt.Sprintf(format, args...)}
}

// request answers req (id is its frame's); what may wait runs in a goroutine of its own.
func (s *server) request(id uint32, req Request) {
	switch req.Op {
	case "dial":
		go s.dial(id, req.Port, req.Direct)
	case "listen":
		s.result(id, s.listen(id, req.Port, req.Direct))
	case "direct":
		go func() { s.result(id, s.setDirect(req)) }()
	case "start":
		s.result(id, s.hub.start(req.Start))
	case "list":
		s.result(id, s.hub.list())
	case "output", "wait":
		go func() { s.result(id, s.hub.output(req)) }()
	case "input":
		go func() { s.result(id, s.hub.input(req)) }()
	case "signal":
		s.result(id, s.hub.signal(req))
	default:
		s.result(id, failure("invalid", "unknown request %q", req.Op))
	}
}

// ---- streams ----

func validPort(port int) bool { return port >= 1 && port <= 65535 }

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// dialTimeout bounds a connection to the sandbox's loopback.
const dialTimeout = 10 * time.Second

// dial connects to the sandbox's loopback port and makes the connection stream id: a direct stream
// when asked (or the code "nodirect" if it cannot be made), else multiplexed.
func (s *server) dial(id uint32, port int, direct bool) {
	if !validPort(port) {
		s.result(id, failure("invalid", "port %d is outside 1..65535", port))
		return
	}
	c, err := net.DialTimeout("tcp", loopback(port), dialTimeout)
	if err != nil {
		code := "unavailable"
		if errors.Is(err, syscall.ECONNREFUSED) {
			code = "refused"
		}
		s.result(id, failure(code, "%v", err))
		return
	}
	if direct {
		err := errors.New("not set up")
		if t := s.directTo(); t != nil {
			err = t.pass(id, 0, c)
		}
		if err != nil {
			c.Close()
			s.result(id, failure("nodirect", "no direct stream: %v", err))
			return
		}
		// The connection went first: the client waits for it once it has the result.
		s.result(id, Result{})
		return
	}
	st := s.addStream(id, c)
	if st == nil {
		s.result(id, failure("unavailable", "the client is gone"))
		return
	}
	// The result goes first: the client makes its end of the stream when it reads it.
	s.result(id, Result{})
	st.run()
}

// addStream registers conn as stream id, or closes it when the client is gone.
func (s *server) addStream(id uint32, conn net.Conn) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		conn.Close()
		return nil
	}
	st := newStream(id, conn, s, func() {
		s.mu.Lock()
		delete(s.streams, id)
		s.mu.Unlock()
	})
	s.streams[id] = st
	return st
}

// endStreams ends the client's streams and listeners (its link is gone).
func (s *server) endStreams() {
	s.mu.Lock()
	s.ended = true
	streams := make([]*stream, 0, len(s.streams))
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	listens := s.listens
	s.listens = map[uint32]int{}
	spares := s.spares
	s.spares = map[*net.UnixConn]struct{}{}
	s.mu.Unlock()
	for _, st := range streams {
		st.abort(false)
	}
	for ux := range spares {
		ux.Close()
	}
	for id, port := range listens {
		s.hub.unsubscribe(port, s, id)
	}
}

// hubListener is a listener on the sandbox's loopback and the clients that asked for it, newest
// last: a connection goes to the newest (two sandboxer processes attached to one sandbox may both
// ask for the egress proxy's port).
type hubListener struct {
	ln   net.Listener
	subs []subscription
}

type subscription struct {
	s      *server
	id     uint32
	direct bool // its connections come as direct streams when they can
}

// listen subscribes the client to the sandbox's loopback port, listening there on first use.
func (s *server) listen(id uint32, port int, direct bool) Result {
	if !validPort(port) {
		return failure("invalid", "port %d is outside 1..65535", port)
	}
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return failure("unavailable", "the agent is stopping")
	}
	l := h.listeners[port]
	if l == nil {
		ln, err := net.Listen("tcp", loopback(port))
		if err != nil {
			code := "unavailable"
			if errors.Is(err, syscall.EADDRINUSE) {
				code = "inuse"
			}
			return failure(code, "%v", err)
		}
		l = &hubListener{ln: ln}
		h.listeners[port] = l
		go h.accept(port, l)
	}
	for _, sub := range l.subs {
		if sub.s == s {
			return failure("inuse", "port %d is already listened on by this client", port)
		}
	}
	l.subs = append(l.subs, subscription{s: s, id: id, direct: direct})
	s.mu.Lock()
	s.listens[id] = port
	s.mu.Unlock()
	return Result{}
}

func (s *server) unlisten(id uint32) {
	s.mu.Lock()
	port, ok := s.listens[id]
	delete(s.listens, id)
	s.mu.Unlock()
	if ok {
		s.hub.unsubscribe(port, s, id)
	}
}

// unsubscribe removes one client's subscription; the last one closes the listener.
func (h *hub) unsubscribe(port int, s *server, id uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.listeners[port]
	if l == nil {
		return
	}
	for i, sub := range l.subs {
		if sub.s == s && sub.id == id {
			l.subs = append(l.subs[:i], l.subs[i+1:]...)
			break
		}
	}
	if len(l.subs) == 0 {
		delete(h.listeners, port)
		l.ln.Close()
	}
}

// accept hands each connection to the newest subscriber.
func (h *hub) accept(port int, l *hubListener) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		var sub subscription
		if n := len(l.subs); n > 0 {
			sub = l.subs[n-1]
		}
		h.mu.Unlock()
		if sub.s == nil || !sub.s.accepted1(sub, c) {
			c.Close()
		}
	}
}

// accepted1 makes c a new stream of this client and announces it on the subscription's listener:
// a direct stream when it asked for them and one can be made, else multiplexed.
func (s *server) accepted1(sub subscription, c net.Conn) bool {
	listener := sub.id
	s.mu.Lock()
	s.accepted++
	id := acceptedBit | s.accepted
	ended := s.ended
	t := s.direct
	s.mu.Unlock()
	if ended {
		return false
	}
	if sub.direct && t != nil {
		if t.pass(id, listener, c) == nil {
			return true
		}
	}
	st := s.addStream(id, c)
	if st == nil {
		return false
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], listener)
	if s.send(FrameAccept, id, b[:]) != nil {
		st.abort(false)
		return true
	}
	st.run()
	return true
}

// ---- background processes ----

type bgProc struct {
	id      string
	args    []string
	started time.Time
	cmd     *exec.Cmd
	tree    string
	out     *ring.Buffer

	inMu  sync.Mutex
	stdin *os.File // nil once closed

	done     chan struct{} // closed when it exited and its output is complete
	exitCode int
}

func (p *bgProc) state() ProcState {
	st := ProcState{ID: p.id, Args: p.args, Started: p.started.UnixNano(), Running: true}
	select {
	case <-p.done:
		st.Running, st.ExitCode = false, p.exitCode
	default:
	}
	return st
}

func (h *hub) start(st *Start) Result {
	if st == nil {
		return failure("invalid", "start without a process")
	}
	h.mu.Lock()
	running := 0
	for _, p := range h.procs {
		select {
		case <-p.done:
		default:
			running++
		}
	}
	h.mu.Unlock()
	if running >= MaxProcesses {
		return failure("limit", "the sandbox already runs %d background processes", running)
	}
	st.Stdin = true
	sp, refusal, err := spawn(*st, h.reap)
	switch {
	case refusal != "":
		return failure("wrap:"+refusal, "the command was refused: %s", refusal)
	case err != nil:
		return failure("failed", "%v", err)
	}
	p := &bgProc{args: st.Args, started: time.Now(), cmd: sp.cmd, tree: sp.tree, stdin: sp.stdin,
		out: ring.New(ringBytes), done: make(chan struct{})}
	h.mu.Lock()
	h.started++
	p.id = "p" + strconv.Itoa(h.started)
	h.procs[p.id] = p
	h.order = append(h.order, p.id)
	h.forgetExited()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		signalTree(p.cmd.Process.Pid, p.tree, syscall.SIGKILL)
	}
	go func() {
		p.exitCode = collect(p.cmd, p.tree, st.Wrap != nil, h.reap, sp.outR, sp.errR,
			func(b []byte) { p.out.Write(ring.Stdout, b) }, func(b []byte) { p.out.Write(ring.Stderr, b) })
		p.closeStdin()
		// Exited and, if too many are kept, the oldest exited forgotten, in one step: a list
		// made after a Wait never shows more than it should.
		h.mu.Lock()
		close(p.done)
		h.forgetExited()
		h.mu.Unlock()
		p.out.Close()
	}()
	if st.TimeoutMs > 0 {
		go func() {
			select {
			case <-p.done:
			case <-time.After(time.Duration(st.TimeoutMs) * time.Millisecond):
				signalTree(p.cmd.Process.Pid, p.tree, syscall.SIGKILL)
			}
		}()
	}
	return Result{Process: ptr(p.state())}
}

// ringBytes bounds each output stream a background process keeps.
const ringBytes = 1 << 20

func ptr[T any](v T) *T { return &v }

// forgetExited drops the oldest exited processes beyond MaxProcesses (h.mu held).
func (h *hub) forgetExited() {
	exited := 0
	for _, id := range h.order {
		if p := h.procs[id]; p != nil && isDone(p.done) {
			exited++
		}
	}
	for i := 0; exited > MaxProcesses && i < len(h.order); {
		id := h.order[i]
		if isDone(h.procs[id].done) {
			delete(h.procs, id)
			h.order = append(h.order[:i], h.order[i+1:]...)
			exited--
			continue
		}
		i++
	}
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (h *hub) proc(id string) (*bgProc, Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.procs[id]; p != nil {
		return p, Result{}
	}
	return nil, failure("notfound", "no process %q in this sandbox", id)
}

func (h *hub) list() Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	res := Result{Processes: []ProcState{}}
	for _, id := range h.order {
		res.Processes = append(res.Processes, h.procs[id].state())
	}
	return res
}

// maxWait bounds a request's wait ("output", "wait").
const maxWait = 10 * time.Minute

// output reads a process's output after req.Since, first waiting up to req.WaitMs for something
// after it ("output") or for the exit ("wait").
func (h *hub) output(req Request) Result {
	p, fail := h.proc(req.Process)
	if p == nil {
		return fail
	}
	if req.WaitMs > 0 {
		wait := min(time.Duration(req.WaitMs)*time.Millisecond, maxWait)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		if req.Op == "wait" {
			select {
			case <-p.done:
			case <-ctx.Done():
			}
		} else {
			p.out.Wait(ctx, req.Since)
		}
		cancel()
	}
	// The state first: a reader that sees the process exited has all its output in this read.
	st := p.state()
	c := p.out.ReadLimit(req.Since, req.Limit)
	return Result{Process: &st, Output: &ProcOutput{Stdout: c.Stdout, Stderr: c.Stderr, Offset: c.Offset, Dropped: c.Dropped, State: st}}
}

// inputTimeout bounds a write to a background process's stdin.
const inputTimeout = 30 * time.Second

func (h *hub) input(req Request) Result {
	p, fail := h.proc(req.Process)
	if p == nil {
		return fail
	}
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if p.stdin == nil {
		if len(req.Data) == 0 {
			return Result{} // closing it again, or after the exit
		}
		return failure("invalid", "the stdin of process %s is closed", p.id)
	}
	if len(req.Data) > 0 {
		// A process that does not read its stdin must not hold the request forever.
		p.stdin.SetWriteDeadline(time.Now().Add(inputTimeout))
		if _, err := p.stdin.Write(req.Data); err != nil {
			p.stdin.Close()
			p.stdin = nil
			return failure("invalid", "writing to process %s: %v", p.id, err)
		}
	}
	if req.EOF {
		p.stdin.Close()
		p.stdin = nil
	}
	return Result{}
}

func (p *bgProc) closeStdin() {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if p.stdin != nil {
		p.stdin.Close()
		p.stdin = nil
	}
}

// signals are the names Request.Signal may give.
var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
}

func (h *hub) signal(req Request) Result {
	sig, ok := signals[req.Signal]
	if !ok {
		return failure("invalid", "unknown signal %q", req.Signal)
	}
	p, fail := h.proc(req.Process)
	if p == nil {
		return fail
	}
	if !isDone(p.done) {
		signalTree(p.cmd.Process.Pid, p.tree, sig)
	}
	return Result{Process: ptr(p.state())}
}
