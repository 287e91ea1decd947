package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
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
// started (with the trees named by their Start.Tree) and returns. Frames to w are written whole,
// each in one Write.
func Serve(r io.Reader, w io.Writer) error {
	return serve(r, w, nil)
}

func serve(r io.Reader, w io.Writer, rp *reaper) error {
	prewarmThreads(8)
	s := &server{w: w, procs: map[uint32]*proc{}, reap: rp}
	fr := &frameReader{r: r}
	for {
		f, err := fr.next()
		if err != nil {
			s.abandon()
			if errors.Is(err, io.EOF) {
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

	mu    sync.Mutex
	procs map[uint32]*proc

	reap *reaper // PID 1 of a container: reaps orphans (see ServeInit)
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

// send writes one frame. A failed write is ignored: the client is gone and the read loop will
// see its input end.
func (s *server) send(typ byte, id uint32, payload []byte) {
	s.wmu.Lock()
	s.buf = appendFrame(s.buf[:0], typ, id, payload)
	s.w.Write(s.buf)
	s.wmu.Unlock()
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
	if len(st.Args) == 0 {
		fail(errors.New("empty command"))
		return
	}
	cmd := exec.Command(st.Args[0], st.Args[1:]...)
	cmd.Dir = st.Dir
	if len(st.Env) > 0 {
		cmd.Env = append(os.Environ(), st.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tree := st.Tree
	if w := st.Wrap; w != nil {
		refuse := func(code string) {
			s.send(FrameStderr, id, []byte("sandboxer:"+w.Nonce+":"+code+"\n"))
			s.send(FrameExit, id, exitPayload(Exit{Code: 199}))
		}
		dir, code := jail(w.Root, w.Dir)
		if code != "" {
			refuse(code)
			return
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			refuse(failNotFound)
			return
		}
		env := cmd.Environ()
		prog, ok := lookExec(st.Args[0], dir, lastEnv(env, "PATH"))
		if !ok {
			refuse(failNoExec)
			return
		}
		cmd.Path, cmd.Err, cmd.Dir = prog, nil, dir
		cmd.Env = append(env, "SANDBOXER_EXEC_ID="+w.ID)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		tree = w.ID
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		fail(err)
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		fail(err)
		return
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	p := &proc{cmd: cmd, tree: tree, wrapped: st.Wrap != nil}
	var inW *os.File
	if st.Stdin {
		var inR *os.File
		inR, inW, err = os.Pipe()
		if err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			fail(err)
			return
		}
		cmd.Stdin = inR
		defer inR.Close()
		p.stdin = make(chan stdinChunk, 2*Window/MaxPayload+4)
	}
	if s.reap != nil {
		s.reap.start(func() int {
			if err = cmd.Start(); err != nil {
				return 0
			}
			return cmd.Process.Pid
		})
	} else {
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		fail(err)
		return
	}
	s.mu.Lock()
	s.procs[id] = p
	s.mu.Unlock()
	if inW != nil {
		go s.feed(id, p.stdin, inW)
	}
	go s.wait(id, p, outR, errR)
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
	var streams sync.WaitGroup
	streams.Add(2)
	go s.pump(id, FrameStdout, outR, &streams)
	go s.pump(id, FrameStderr, errR, &streams)
	werr := p.cmd.Wait()
	if s.reap != nil {
		s.reap.done(p.cmd.Process.Pid)
	}
	if p.wrapped {
		// Nothing the command started outlives it or keeps its output open.
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		killMarked(map[string]bool{p.tree: true}, syscall.SIGKILL)
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
	s.mu.Lock()
	delete(s.procs, id)
	if p.stdin != nil {
		close(p.stdin)
	}
	s.mu.Unlock()
	s.send(FrameExit, id, exitPayload(Exit{Code: exitCode(p.cmd.ProcessState, werr)}))
}

func (s *server) pump(id uint32, typ byte, r *os.File, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, MaxPayload)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.send(typ, id, buf[:n])
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
	signal := func(sig syscall.Signal) {
		syscall.Kill(-pid, sig)
		syscall.Kill(pid, sig)
		if p.tree != "" {
			killMarked(map[string]bool{p.tree: true}, sig)
		}
	}
	signal(syscall.SIGTERM)
	go func() {
		time.Sleep(grace)
		signal(syscall.SIGKILL)
	}()
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
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
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
