package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/telemetry"
	"github.com/sandboxer/sandboxer/journal"
	"github.com/sandboxer/sandboxer/tools"
)

// callTool runs one of the tools in a sandbox and answers its reply, the JSON object the CLI
// prints and MCP returns as structured content, with status 200 whether the tool succeeded or not
// (the call happened and is journaled; ok and error.code say how it went). The call's position in
// the journal comes from the Sandboxer-Run-Id, Sandboxer-Node-Id, Sandboxer-Iteration and
// Sandboxer-Attempt headers, its key from Idempotency-Key; with tokens, the run id is recorded as
// "TOKEN/RUN", so one token's runs never continue another's.
func (a *apiServer) callTool(w http.ResponseWriter, r *http.Request) error {
	tool := tools.Lookup(r.PathValue("tool"))
	if tool == nil {
		return errs.New(errs.NotFound, "", "", "no tool %q (want one of %v)", r.PathValue("tool"), toolNames())
	}
	input, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	if err := checkInput(input); err != nil {
		return errs.Wrap(errs.InvalidInput, "", "", err)
	}
	pos, err := toolPosition(r)
	if err != nil {
		return err
	}
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	tc := tools.NewContext(box.sb)
	tc.RunID, tc.NodeID, tc.Iteration, tc.Attempt = pos.RunID, pos.NodeID, pos.Iteration, pos.Attempt
	tc.AllowNetwork, tc.AllowHosts = box.s.AllowNetwork, box.s.AllowHosts
	tc.MaxOutputBytes, tc.Timeout = a.opt.Base.MaxOutputBytes, a.opt.Base.Timeout
	tc.NoPathDiff = a.opt.Base.NoPathDiff
	tc.IdempotencyKey = r.Header.Get("Idempotency-Key")
	// As over MCP, the reply does not wait for its journal row's completion: the row is
	// "running" meanwhile, and every row is completed before the server exits.
	cl := &caller{base: *tc, pos: pos, j: a.j, jw: a.jw, warn: a.opt.Log.Writer(), finishLater: true}
	writeJSON(w, http.StatusOK, cl.call(telemetry.FromHeader(r.Context(), r.Header), tool, input))
	return nil
}

// toolPosition reads a tool call's journal position from its headers.
func toolPosition(r *http.Request) (journal.Position, error) {
	p := journal.Position{RunID: DefaultRunID, NodeID: DefaultNodeID, Attempt: 1}
	if v := r.Header.Get("Sandboxer-Run-Id"); v != "" {
		p.RunID = v
	}
	if v := r.Header.Get("Sandboxer-Node-Id"); v != "" {
		p.NodeID = v
	}
	for _, h := range []struct {
		name string
		dst  *int
		min  int
	}{{"Sandboxer-Iteration", &p.Iteration, 0}, {"Sandboxer-Attempt", &p.Attempt, 1}} {
		if v := r.Header.Get(h.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < h.min {
				return p, badRequest("header %s: want an integer of at least %d, got %q", h.name, h.min, v)
			}
			*h.dst = n
		}
	}
	if name := principal(r).Name; name != "" {
		p.RunID = name + "/" + p.RunID
	}
	return p, nil
}

func commandOf(req api.ExecRequest, box *apiSandbox, background bool) (adapter.Command, error) {
	if len(req.Args) == 0 {
		return adapter.Command{}, badRequest("args must name a program: argv, never a joined string")
	}
	if req.TimeoutMs < 0 || req.MaxOutputBytes < 0 {
		return adapter.Command{}, badRequest("timeoutMs and maxOutputBytes must not be negative")
	}
	if req.Encoding != "" && req.Encoding != "utf8" && req.Encoding != "base64" {
		return adapter.Command{}, badRequest("encoding %q: want utf8 or base64", req.Encoding)
	}
	cmd := adapter.Command{Args: req.Args, Dir: req.Dir, Env: req.Env, Timeout: time.Duration(req.TimeoutMs) * time.Millisecond,
		MaxOutputBytes: req.MaxOutputBytes, AllowNetwork: box.s.AllowNetwork}
	switch {
	case req.Stdin != nil && req.StdinBase64 != nil:
		return cmd, badRequest("give stdin or stdinBase64, not both")
	case background && (req.Stdin != nil || req.StdinBase64 != nil):
		return cmd, badRequest("a process's stdin is written with POST .../processes/{pid}/stdin")
	case req.Stdin != nil:
		cmd.Stdin = strings.NewReader(*req.Stdin)
	case req.StdinBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*req.StdinBase64)
		if err != nil {
			return cmd, badRequest("stdinBase64: %v", err)
		}
		cmd.Stdin = strings.NewReader(string(b))
	}
	return cmd, nil
}

// exec runs a command and waits for it. A non-zero exit is data (200, exitCode); a command that
// could not run or did not finish is an error, with the partial result of a timed-out one in
// "result". With "stream": true the answer is NDJSON: {"stream":"stdout","data":...} lines as the
// output comes, then {"result":{...}} or {"error":{...},"result":{...}}. A client that goes away
// cancels the command (its whole tree is killed).
func (a *apiServer) exec(w http.ResponseWriter, r *http.Request) error {
	var req api.ExecRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	cmd, err := commandOf(req, box, false)
	if err != nil {
		return err
	}
	if !req.Stream {
		res, err := box.sb.ExecuteCommand(r.Context(), cmd)
		if err != nil {
			var partial *api.ExecResult
			if errs.CodeOf(err) == errs.ProcessTimeout || errors.Is(err, context.Canceled) {
				r := api.ResultOf(res, req.Encoding, true)
				partial = &r
			}
			writeErrorWith(w, err, partial)
			return nil
		}
		writeJSON(w, http.StatusOK, api.ResultOf(res, req.Encoding, true))
		return nil
	}
	nd := newNDJSON(w)
	cmd.Stdout, cmd.Stderr = nd.stream("stdout", req.Encoding), nd.stream("stderr", req.Encoding)
	res, err := box.sb.ExecuteCommand(r.Context(), cmd)
	nd.flushStreams()
	result := api.ResultOf(res, req.Encoding, false)
	final := api.StreamLine{Result: &result}
	if err != nil {
		final.Error = errorReply(err).Error
	}
	nd.send(final)
	return nil
}

// ndjson writes a streamed answer: one JSON object per line, flushed as written.
type ndjson struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	streams []*ndStream
}

func newNDJSON(w http.ResponseWriter) *ndjson {
	return &ndjson{w: w, rc: http.NewResponseController(w)}
}

func (n *ndjson) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.started {
		n.started = true
		n.w.Header().Set("Content-Type", "application/x-ndjson")
		n.w.WriteHeader(http.StatusOK)
	}
	if _, err := n.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return n.rc.Flush()
}

// stream is a writer of one output stream: each write is a line {"stream":NAME,"data":...}. In
// utf8 encoding a character cut between two writes is held back until it is whole.
func (n *ndjson) stream(name, encoding string) io.Writer {
	s := &ndStream{n: n, name: name, encoding: encoding}
	n.streams = append(n.streams, s)
	return s
}

// flushStreams sends what the streams hold back (a cut character at the very end).
func (n *ndjson) flushStreams() {
	for _, s := range n.streams {
		if len(s.held) > 0 {
			n.send(api.StreamLine{Stream: s.name, Data: api.Encode(s.held, s.encoding)})
			s.held = nil
		}
	}
}

type ndStream struct {
	n        *ndjson
	name     string
	encoding string
	held     []byte
}

func (s *ndStream) Write(p []byte) (int, error) {
	b := append(s.held, p...)
	s.held = nil
	if s.encoding != "base64" {
		// Hold back an incomplete character at the end (at most 3 bytes).
		for i := 1; i <= 3 && i <= len(b); i++ {
			c := b[len(b)-i]
			if utf8.RuneStart(c) {
				if !utf8.FullRune(b[len(b)-i:]) {
					s.held = append([]byte(nil), b[len(b)-i:]...)
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	if len(b) > 0 {
		// A client gone away is the request's context's business: the command is cancelled.
		s.n.send(api.StreamLine{Stream: s.name, Data: api.Encode(b, s.encoding)})
	}
	return len(p), nil
}

func starter(box *apiSandbox) (adapter.Starter, error) {
	st, ok := box.sb.(adapter.Starter)
	if !ok {
		return nil, errs.New(errs.InvalidInput, "", "", "the %s adapter has no background processes", box.s.Adapter)
	}
	return st, nil
}

func (a *apiServer) startProcess(w http.ResponseWriter, r *http.Request) error {
	var req api.ExecRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Stream {
		return badRequest("stream: read a process's output with GET .../processes/{pid}/output?follow=true")
	}
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	st, err := starter(box)
	if err != nil {
		return err
	}
	cmd, err := commandOf(req, box, true)
	if err != nil {
		return err
	}
	p, err := st.Start(r.Context(), cmd)
	if err != nil {
		return err
	}
	ps, err := p.State(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ps)
	return nil
}

func (a *apiServer) listProcesses(w http.ResponseWriter, r *http.Request) error {
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	st, err := starter(box)
	if err != nil {
		return err
	}
	list, err := st.Processes(r.Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []adapter.ProcessState{}
	}
	writeJSON(w, http.StatusOK, api.ProcessList{Processes: list})
	return nil
}

// process finds the request's sandbox and process; release ends the use of the sandbox.
func (a *apiServer) process(r *http.Request) (adapter.Process, func(), error) {
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	st, err := starter(box)
	if err == nil {
		var p adapter.Process
		if p, err = st.Process(r.Context(), r.PathValue("pid")); err == nil {
			return p, release, nil
		}
	}
	release()
	return nil, nil, err
}

// writeState answers the process's state now.
func writeState(w http.ResponseWriter, r *http.Request, p adapter.Process) error {
	ps, err := p.State(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ps)
	return nil
}

func (a *apiServer) getProcess(w http.ResponseWriter, r *http.Request) error {
	p, release, err := a.process(r)
	if err != nil {
		return err
	}
	defer release()
	return writeState(w, r, p)
}

// processOutput answers the output after ?since=OFFSET (at most ?limit= bytes), or with
// ?follow=true streams it as NDJSON chunks until the process exits (or the client goes away).
func (a *apiServer) processOutput(w http.ResponseWriter, r *http.Request) error {
	since, err := queryInt(r, "since", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	encoding := r.URL.Query().Get("encoding")
	if encoding == "" {
		encoding = "utf8"
	}
	if encoding != "utf8" && encoding != "base64" {
		return badRequest("encoding %q: want utf8 or base64", encoding)
	}
	follow := r.URL.Query().Get("follow") == "true"
	p, release, err := a.process(r)
	if err != nil {
		return err
	}
	defer release()
	read := func() (adapter.ProcessOutput, error) {
		if l, ok := p.(adapter.OutputLimiter); ok && limit > 0 {
			return l.OutputLimit(r.Context(), since, int(limit))
		}
		return p.Output(r.Context(), since)
	}
	chunk := func(o adapter.ProcessOutput) api.ProcessChunk {
		return api.ProcessChunk{Stdout: api.Encode(o.Stdout, encoding), Stderr: api.Encode(o.Stderr, encoding), Offset: o.Offset,
			Dropped: o.Dropped, State: o.State, Encoding: encoding}
	}
	if !follow {
		o, err := read()
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, chunk(o))
		return nil
	}
	nd := newNDJSON(w)
	wait := 10 * time.Millisecond
	for {
		o, err := read()
		if err != nil {
			nd.send(api.ProcessChunk{Error: errorReply(err).Error})
			return nil
		}
		if o.Offset != since || o.Dropped > 0 || !o.State.Running {
			if nd.send(chunk(o)) != nil {
				return nil
			}
			wait = 10 * time.Millisecond
		}
		since = o.Offset
		if !o.State.Running {
			return nil
		}
		select {
		case <-r.Context().Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
}

// processStdin copies the request body (of any size, as it comes) to the process's stdin; with
// ?close=true it then closes it.
func (a *apiServer) processStdin(w http.ResponseWriter, r *http.Request) error {
	p, release, err := a.process(r)
	if err != nil {
		return err
	}
	defer release()
	buf := make([]byte, 64<<10)
	br := bufio.NewReaderSize(r.Body, len(buf))
	var n int64
	for {
		k, rerr := br.Read(buf)
		if k > 0 {
			if err := p.Write(r.Context(), buf[:k]); err != nil {
				return err
			}
			n += int64(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return errs.Wrap(errs.InvalidInput, "", "", rerr)
		}
	}
	if r.URL.Query().Get("close") == "true" {
		if err := p.CloseStdin(r.Context()); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, api.StdinWritten{Written: n})
	return nil
}

func (a *apiServer) processSignal(w http.ResponseWriter, r *http.Request) error {
	var req api.SignalRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Signal == "" {
		req.Signal = "TERM"
	}
	p, release, err := a.process(r)
	if err != nil {
		return err
	}
	defer release()
	if err := p.Signal(r.Context(), req.Signal); err != nil {
		return err
	}
	return writeState(w, r, p)
}

// processWait waits for the process to exit, at most ?timeoutMs= (then it answers its state,
// still running).
func (a *apiServer) processWait(w http.ResponseWriter, r *http.Request) error {
	ms, err := queryInt(r, "timeoutMs", 0)
	if err != nil {
		return err
	}
	p, release, err := a.process(r)
	if err != nil {
		return err
	}
	defer release()
	ctx := r.Context()
	if ms > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	ps, err := p.Wait(ctx)
	if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
		ps, err = p.State(r.Context())
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ps)
	return nil
}

// dialPort connects the client to a port on the sandbox's loopback: the request asks to upgrade
// to "tcp" (Connection: Upgrade, Upgrade: tcp); the answer is 101 Switching Protocols and then
// the connection carries the port's bytes both ways until either side closes.
func (a *apiServer) dialPort(w http.ResponseWriter, r *http.Request) error {
	port, err := portOf(r.PathValue("port"))
	if err != nil {
		return err
	}
	if err := wantsUpgrade(r); err != nil {
		return err
	}
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	pf, ok := box.sb.(adapter.PortForwarder)
	if !ok {
		return errs.New(errs.InvalidInput, "", "", "the %s adapter has no ports", box.s.Adapter)
	}
	conn, err := pf.DialPort(r.Context(), port)
	if err != nil {
		return err
	}
	defer conn.Close()
	return splice(w, conn)
}

func portOf(v string) (int, error) {
	port, err := strconv.Atoi(v)
	if err != nil || port < 1 || port > 65535 {
		return 0, badRequest("port %q: want 1..65535", v)
	}
	return port, nil
}

func wantsUpgrade(r *http.Request) error {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "tcp") {
		return badRequest("a port is reached by upgrading the request: send Connection: Upgrade and Upgrade: tcp")
	}
	return nil
}

// splice answers 101 and copies bytes both ways between the client's connection and conn until
// both directions end.
func splice(w http.ResponseWriter, conn net.Conn) error {
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return errs.Wrap(errs.Internal, "", "", err) // HTTP/2: no upgrade
	}
	defer client.Close()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	if err := brw.Flush(); err != nil {
		return nil
	}
	done := make(chan struct{}, 2)
	go func() {
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			conn.Write(b)
		}
		io.Copy(conn, client)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		io.Copy(client, conn)
		if cw, ok := client.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	return nil
}

// listen listens on a port of the sandbox's loopback (adapter.PortListener): the connections
// commands make to it are taken one at a time with GET .../listeners/{lid}/accept, until DELETE
// .../listeners/{lid} or the sandbox's end.
func (a *apiServer) listen(w http.ResponseWriter, r *http.Request) error {
	var req api.ListenRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	pl, ok := box.sb.(adapter.PortListener)
	if !ok {
		return errs.New(errs.InvalidInput, "", "", "the %s adapter has no ports", box.s.Adapter)
	}
	ln, err := pl.ListenPort(r.Context(), req.Port)
	if err != nil {
		return err
	}
	box.mu.Lock()
	box.nextListener++
	id := "l" + strconv.Itoa(box.nextListener)
	if box.listeners == nil {
		box.listeners = map[string]net.Listener{}
	}
	box.listeners[id] = ln
	box.mu.Unlock()
	writeJSON(w, http.StatusCreated, api.Listener{ID: id, Port: req.Port})
	return nil
}

func (box *apiSandbox) listener(id string) (net.Listener, error) {
	box.mu.Lock()
	defer box.mu.Unlock()
	ln := box.listeners[id]
	if ln == nil {
		return nil, errs.New(errs.NotFound, "", "", "no listener %q", id)
	}
	return ln, nil
}

// accept waits for the next connection to the listener and hands it to the client (101, then
// its bytes). A client that goes away before one comes leaves the listener as it was.
func (a *apiServer) accept(w http.ResponseWriter, r *http.Request) error {
	if err := wantsUpgrade(r); err != nil {
		return err
	}
	box, release, err := a.reg.acquireRunning(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	ln, err := box.listener(r.PathValue("lid"))
	if err != nil {
		return err
	}
	type accepted struct {
		conn net.Conn
		err  error
	}
	// One Accept at a time per listener: a connection accepted for a client that went away is
	// handed to the next one.
	box.acceptMu.Lock()
	defer box.acceptMu.Unlock()
	conn := box.pending
	box.pending = nil
	if conn == nil {
		got := make(chan accepted, 1)
		go func() {
			c, err := ln.Accept()
			got <- accepted{c, err}
		}()
		select {
		case g := <-got:
			if g.err != nil {
				return errs.Wrap(errs.SandboxUnavailable, "", "", g.err)
			}
			conn = g.conn
		case <-r.Context().Done():
			go func() {
				if g := <-got; g.conn != nil {
					box.acceptMu.Lock()
					if box.pending != nil {
						g.conn.Close()
					} else {
						box.pending = g.conn
					}
					box.acceptMu.Unlock()
				}
			}()
			return r.Context().Err()
		}
	}
	defer conn.Close()
	return splice(w, conn)
}

func (a *apiServer) closeListener(w http.ResponseWriter, r *http.Request) error {
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	box.mu.Lock()
	ln := box.listeners[r.PathValue("lid")]
	delete(box.listeners, r.PathValue("lid"))
	box.mu.Unlock()
	if ln == nil {
		return errs.New(errs.NotFound, "", "", "no listener %q", r.PathValue("lid"))
	}
	ln.Close()
	w.WriteHeader(http.StatusNoContent)
	return nil
}
