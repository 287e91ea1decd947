package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// drainGrace bounds how long the agent waits, after a process exited, for its output pipes to
// close: a background child that keeps them open must not hold the call.
const drainGrace = 500 * time.Millisecond

// Serve runs processes as r asks and answers on w until r ends; it then kills every process it
// started (with the trees named by their Start.Tree), its background processes included, and
// returns. Frames to w are written whole, each in one Write.
func Serve(r io.Reader, w io.Writer) error {
	h := newHub(nil)
	defer h.close()
	return h.serve(r, w)
}

// serve serves one client: its foreground calls, requests and streams. When r ends, what the
// client started in the foreground is killed and its streams and listeners end; background
// processes stay with the hub.
func (h *hub) serve(r io.Reader, w io.Writer) error {
	prewarmThreads(8)
	s := &server{w: w, procs: map[uint32]*proc{}, reap: h.reap, hub: h,
		streams: map[uint32]*stream{}, listens: map[uint32]int{}, spares: map[*net.UnixConn]struct{}{}}
	fr := &frameReader{r: r}
	for {
		f, err := fr.next()
		if err != nil {
			s.abandon()
			s.endStreams()
			// A client that goes away in the middle of a frame (its stdin writer was cut off
			// by Close) has ended its input like any other.
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return err
		}
		switch f.typ {
		case FrameStart:
			var st Start
			if err := json.Unmarshal(f.payload, &st); err != nil {
				s.send(FrameExit, f.id, exitPayload(Exit{Code: 126, Error: "bad start frame: " + err.Error()}))
				continue
			}
			s.start(f.id, st)
		case FrameKill:
			grace := time.Duration(0)
			if len(f.payload) == 4 {
				grace = time.Duration(binary.BigEndian.Uint32(f.payload)) * time.Millisecond
			}
			s.kill(f.id, grace)
		case FrameStdin, FrameStdinEOF:
			var chunk []byte
			if f.typ == FrameStdin {
				chunk = bytes.Clone(f.payload)
			}
			// The channel has room for twice the client's window, so this never blocks; the
			// lock keeps wait from closing it meanwhile. A process that is gone is skipped: the
			// client stops sending once it sees the exit.
			s.mu.Lock()
			if p := s.procs[f.id]; p != nil && p.stdin != nil {
				p.stdin <- stdinChunk{data: chunk, eof: f.typ == FrameStdinEOF}
			}
			s.mu.Unlock()
		case FrameRequest:
			var req Request
			if err := json.Unmarshal(f.payload, &req); err != nil {
				s.result(f.id, Result{Error: "bad request frame: " + err.Error(), Code: "invalid"})
				continue
			}
			s.request(f.id, req)
		case FrameData, FrameFin, FrameClose, FrameWindow:
			s.mu.Lock()
			st := s.streams[f.id]
			_, listening := s.listens[f.id]
			s.mu.Unlock()
			switch {
			case st != nil:
				st.deliver(f.typ, f.payload)
			case listening && f.typ == FrameClose:
				s.unlisten(f.id)
			}
		}
	}
}

// prewarmThreads makes the runtime create n OS threads now and keep them idle. A command that
// exhausts the container's pids limit (a fork bomb) must not leave the agent unable to create the
// thread it needs to wait for a process or to answer: the Go runtime cannot survive a failed
// thread creation.
func prewarmThreads(n int) {
	var locked, release sync.WaitGroup
	locked.Add(n)
	release.Add(1)
	for range n {
		go func() {
			runtime.LockOSThread()
			locked.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	release.Done()
}

type server struct {
	wmu sync.Mutex
	w   io.Writer
	buf []byte

	mu       sync.Mutex
	procs    map[uint32]*proc
	streams  map[uint32]*stream
	listens  map[uint32]int             // listen request id -> port
	accepted uint32                     // streams of accepted connections numbered so far
	ended    bool                       // the client is gone: no new streams
	direct   *directTarget              // where its direct streams connect (see SetDirect); nil: multiplexed
	spares   map[*net.UnixConn]struct{} // idle direct connections kept for dials

	reap *reaper // PID 1 of a container: reaps orphans (see ServeInit)
	hub  *hub
}

type stdinChunk struct {
	data []byte
	eof  bool
}

type proc struct {
	cmd     *exec.Cmd
	tree    string
	wrapped bool // kill the tree when the process exits
	stdin   chan stdinChunk
	killing bool
}

// send writes one frame. A failed write is reported but otherwise ignored: the client is gone and
// the read loop will see its input end.
func (s *server) send(typ byte, id uint32, payload []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.buf = appendFrame(s.buf[:0], typ, id, payload)
	_, err := s.w.Write(s.buf)
	return err
}

func exitPayload(e Exit) []byte {
	b, _ := json.Marshal(e)
	return b
}

// start runs st as call id; its output and exit are reported from goroutines.
func (s *server) start(id uint32, st Start) {
	fail := func(err error) {
		s.send(FrameStderr, id, []byte("sandboxer-agent: "+err.Error()+"\n"))
		s.send(FrameExit, id, exitPayload(Exit{Code: 126, Error: err.Error()}))
	}
	sp, refusal, err := spawn(st, s.reap)
	switch {
	case refusal != "":
		s.send(FrameStderr, id, []byte("sandboxer:"+st.Wrap.Nonce+":"+refusal+"\n"))
		s.send(FrameExit, id, exitPayload(Exit{Code: 199}))
		return
	case err != nil:
		fail(err)
		return
	}
	p := &proc{cmd: sp.cmd, tree: sp.tree, wrapped: st.Wrap != nil}
	if sp.stdin != nil {
		p.stdin = make(chan stdinChunk, 2*Window/MaxPayload+4)
	}
	s.mu.Lock()
	s.procs[id] = p
	s.mu.Unlock()
	if sp.stdin != nil {
		go s.feed(id, p.stdin, sp.stdin)
	}
	go s.wait(id, p, sp.outR, sp.errR)
}

// spawned is a started process and the parent's ends of its pipes.
type spawned struct {
	cmd        *exec.Cmd
	tree       string
	outR, errR *os.File
	stdin      *os.File // nil unless Start.Stdin
}

// spawn starts st's process with pipes for its output (and stdin if asked). refusal is Wrap's
// failure code when the wrapper refused the command before starting it.
func spawn(st Start, rp *reaper) (sp spawned, refusal string, err error) {
	if len(st.Args) == 0 {
		return sp, "", errors.New("empty command")
	}
	cmd := exec.Command(st.Args[0], st.Args[1:]...)
	cmd.Dir = st.Dir
	if len(st.Env) > 0 {
		cmd.Env = append(os.Environ(), st.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: runAs}
	tree := st.Tree
	if w := st.Wrap; w != nil {
		env := cmd.Environ()
		var dir, prog, code string
		asCommands(func() { dir, prog, code = locate(w, st.Args[0], lastEnv(env, "PATH")) })
		if code != "" {
			return sp, code, nil
		}
		cmd.Path, cmd.Err, cmd.Dir = prog, nil, dir
		cmd.Env = append(env, "SANDBOXER_EXEC_ID="+w.ID)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: runAs}
		tree = w.ID
	}
	var files []*os.File // every pipe end, closed on failure
	pipe := func() (r, w *os.File) {
		if err == nil {
			if r, w, err = os.Pipe(); err == nil {
				files = append(files, r, w)
			}
		}
		return r, w
	}
	outR, outW := pipe()
	errR, errW := pipe()
	var inR, inW *os.File
	if st.Stdin {
		inR, inW = pipe()
	}
	if err == nil {
		cmd.Stdout, cmd.Stderr = outW, errW
		if inR != nil {
			cmd.Stdin = inR
		}
		if rp != nil {
			rp.start(func() int {
				if err = cmd.Start(); err != nil {
					return 0
				}
				return cmd.Process.Pid
			})
		} else {
			err = cmd.Start()
		}
	}
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return sp, "", err
	}
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	return spawned{cmd: cmd, tree: tree, outR: outR, errR: errR, stdin: inW}, "", nil
}

// locate is the directory and program of a wrapped command, or why it is refused (a Wrap failure
// code).
func locate(w *Wrap, name, pathEnv string) (dir, prog, code string) {
	dir, code = jail(w.Root, w.Dir)
	if code != "" {
		return "", "", code
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", "", failNotFound
	}
	prog, ok := lookExec(name, dir, pathEnv)
	if !ok {
		return "", "", failNoExec
	}
	return dir, prog, ""
}

// feed writes stdin chunks to the process and acknowledges each, written or not (a process that
// closed its stdin or exited discards the rest).
func (s *server) feed(id uint32, in <-chan stdinChunk, w *os.File) {
	var ack [4]byte
	broken := false
	for c := range in {
		if c.eof {
			w.Close()
			broken = true
			continue
		}
		if !broken {
			if _, err := w.Write(c.data); err != nil {
				broken = true
				w.Close()
			}
		}
		binary.BigEndian.PutUint32(ack[:], uint32(len(c.data)))
		s.send(FrameAck, id, ack[:])
	}
	if !broken {
		w.Close()
	}
}

// wait streams the process's output, waits for it, and reports its exit as the call's last frame.
func (s *server) wait(id uint32, p *proc, outR, errR *os.File) {
	code := collect(p.cmd, p.tree, p.wrapped, s.reap, outR, errR,
		func(b []byte) { s.send(FrameStdout, id, b) }, func(b []byte) { s.send(FrameStderr, id, b) })
	s.mu.Lock()
	delete(s.procs, id)
	if p.stdin != nil {
		close(p.stdin)
	}
	s.mu.Unlock()
	s.send(FrameExit, id, exitPayload(Exit{Code: code}))
}

// collect copies a started process's output to out and errOut (from two goroutines) until it
// exits and its pipes drain (or drainGrace passes), kills what a wrapped command left behind,
// and returns the exit code. It closes outR and errR.
func collect(cmd *exec.Cmd, tree string, wrapped bool, rp *reaper, outR, errR *os.File, out, errOut func([]byte)) int {
	var streams sync.WaitGroup
	streams.Add(2)
	go pump(out, outR, &streams)
	go pump(errOut, errR, &streams)
	werr := cmd.Wait()
	if rp != nil {
		rp.done(cmd.Process.Pid)
	}
	if wrapped {
		// Nothing the command started outlives it or keeps its output open.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		killMarked(map[string]bool{tree: true}, syscall.SIGKILL)
	}
	drained := make(chan struct{})
	go func() { streams.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		// Something the process left behind still holds the pipes: stop reading them.
		outR.SetReadDeadline(time.Now())
		errR.SetReadDeadline(time.Now())
		<-drained
	}
	outR.Close()
	errR.Close()
	return exitCode(cmd.ProcessState, werr)
}

func pump(write func([]byte), r *os.File, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, MaxPayload)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// exitCode is the status a daemon exec would report: the exit status, or 128+N for signal N.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 126
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// kill ends call id's tree: SIGTERM to its process group and its marked processes, then after
// grace SIGKILL. It needs no new process, so it works in a container out of pids.
func (s *server) kill(id uint32, grace time.Duration) {
	s.mu.Lock()
	p := s.procs[id]
	if p == nil || p.killing {
		s.mu.Unlock()
		return
	}
	p.killing = true
	pid := p.cmd.Process.Pid
	s.mu.Unlock()
	signalTree(pid, p.tree, syscall.SIGTERM)
	go func() {
		time.Sleep(grace)
		signalTree(pid, p.tree, syscall.SIGKILL)
	}()
}

// signalTree sends sig to process pid, its process group and the processes marked with tree.
func signalTree(pid int, tree string, sig syscall.Signal) {
	syscall.Kill(-pid, sig)
	syscall.Kill(pid, sig)
	if tree != "" {
		killMarked(map[string]bool{tree: true}, sig)
	}
}

// abandon kills every running process: its process group and every process that carries its
// tree's marker.
func (s *server) abandon() {
	s.mu.Lock()
	trees := map[string]bool{}
	for _, p := range s.procs {
		if p.cmd.Process != nil {
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			p.cmd.Process.Kill()
		}
		if p.tree != "" {
			trees[p.tree] = true
		}
	}
	s.mu.Unlock()
	if len(trees) > 0 {
		killMarked(trees, syscall.SIGKILL)
	}
}

// killMarked sends sig to every process (and its group) whose environment carries
// SANDBOXER_EXEC_ID=T or SANDBOXER_WRAPPER=T for a tree T.
func killMarked(trees map[string]bool, sig syscall.Signal) {
	d, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range d {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		var env []byte
		asCommands(func() { env, err = os.ReadFile("/proc/" + e.Name() + "/environ") })
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			k, v, ok := bytes.Cut(kv, []byte{'='})
			if ok && (string(k) == "SANDBOXER_EXEC_ID" || string(k) == "SANDBOXER_WRAPPER") && trees[string(v)] {
				syscall.Kill(-pid, sig)
				syscall.Kill(pid, sig)
				break
			}
		}
	}
}
