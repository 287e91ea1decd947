package agent

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrClosed is returned (wrapped) by Run when the stream to the agent ended: the agent exited, the
// container stopped, or the connection broke.
var ErrClosed = errors.New("agent stream closed")

// Client sends calls to one agent over a stream. It is safe for concurrent use; calls run
// concurrently in the agent.
type Client struct {
	closer io.Closer

	wmu  sync.Mutex
	w    io.Writer
	wbuf []byte

	mu        sync.Mutex
	calls     map[uint32]*call
	results   map[uint32]*pendingResult
	held      int // bytes of the results being received (at most MaxResultsHeld)
	streams   map[uint32]*stream
	listeners map[uint32]*listener
	next      uint32
	err       error
	done      chan struct{}

	dmu         sync.Mutex
	directDirs  [2]string // host directory, the same in the sandbox (SetDirect)
	directTried bool
	direct      *directLink // nil: streams are multiplexed
	directErr   error       // why the direct path could not be set up
}

type call struct {
	exit chan Exit // receives the exit frame

	mu             sync.Mutex
	stdout, stderr io.Writer
	finished       bool  // no more output is written once set
	acked          int64 // stdin bytes the agent has consumed
	ackedChunks    int64 // stdin frames the agent has consumed (one ack each)
	ackNote        chan struct{}
}

// NewClient starts reading the agent's frames from r; calls are written to w. Close closes c.
func NewClient(r io.Reader, w io.Writer, c io.Closer) *Client {
	cl := &Client{closer: c, w: w, calls: map[uint32]*call{}, results: map[uint32]*pendingResult{},
		streams: map[uint32]*stream{}, listeners: map[uint32]*listener{}, done: make(chan struct{})}
	go cl.read(r)
	return cl
}

// Done is closed when the stream has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close closes the stream; the agent kills what it still runs.
func (c *Client) Close() error {
	if c.closer == nil {
		return nil
	}
	return c.closer.Close()
}

// read dispatches the agent's frames until the stream ends or a frame breaks the protocol.
func (c *Client) read(r io.Reader) {
	fr := &frameReader{r: r}
	var err error
	for err == nil {
		var f frame
		if f, err = fr.next(); err == nil {
			err = c.dispatch(f)
		}
	}
	c.end(err)
}

// dispatch hands f to its call, request, stream or listener; an error is a protocol violation.
func (c *Client) dispatch(f frame) error {
	switch f.typ {
	case FrameStdout, FrameStderr, FrameAck, FrameExit:
	default:
		return c.other(f)
	}
	// The payload is checked before the call is looked up: a frame the client cannot take is
	// refused whoever it is addressed to.
	var e Exit
	switch f.typ {
	case FrameAck:
		if len(f.payload) != 4 {
			return violation("ack of %d bytes", len(f.payload))
		}
	case FrameExit:
		if err := json.Unmarshal(f.payload, &e); err != nil {
			return violation("bad exit frame: %v", err)
		}
	}
	c.mu.Lock()
	cl := c.calls[f.id]
	if f.typ == FrameExit {
		delete(c.calls, f.id)
	}
	c.mu.Unlock()
	if cl == nil {
		return nil // a call given up (or never made): what comes for it is dropped
	}
	switch f.typ {
	case FrameStdout, FrameStderr:
		// Output goes straight to the call's writers (the adapters' capped buffers, see
		// agentproc.Execute): the client holds none of it, however much comes.
		cl.mu.Lock()
		if !cl.finished {
			w := cl.stdout
			if f.typ == FrameStderr {
				w = cl.stderr
			}
			if w != nil {
				w.Write(f.payload)
			}
		}
		cl.mu.Unlock()
	case FrameAck:
		cl.mu.Lock()
		cl.acked += int64(binary.BigEndian.Uint32(f.payload))
		cl.ackedChunks++
		cl.mu.Unlock()
		select {
		case cl.ackNote <- struct{}{}:
		default:
		}
	case FrameExit:
		cl.exit <- e
	}
	return nil
}

// violation is the error of a frame that breaks the protocol.
func violation(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// end ends the link with err, once (a later error is dropped): every call, request, stream and
// listener fails from now on with c.err. A protocol violation also closes the stream, so that
// nothing more of it is read and the agent, its input ended, kills what it runs for this client.
func (c *Client) end(err error) {
	violated := errors.Is(err, ErrProtocol)
	switch {
	case violated:
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		err = ErrClosed
	default:
		err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.mu.Unlock()
	close(c.done)
	c.endAll()
	if violated {
		c.Close()
	}
}

// Violation returns the error (wrapping ErrProtocol and ErrClosed) of the frame that broke the
// protocol and ended the stream, or nil while the stream works or when it ended otherwise (the
// agent exited, the container stopped). An adapter does not start another agent for a sandbox
// whose agent broke the protocol: its calls fail with SANDBOX_UNAVAILABLE.
func (c *Client) Violation() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(c.err, ErrProtocol) {
		return c.err
	}
	return nil
}

func (c *Client) send(typ byte, id uint32, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = appendFrame(c.wbuf[:0], typ, id, payload)
	if _, err := c.w.Write(c.wbuf); err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return nil
}

// Spec is one process to run.
type Spec struct {
	Start
	Stdin          io.Reader // nil: /dev/null
	Stdout, Stderr io.Writer // nil: discarded
	// KillGrace, when positive, makes Run ask the agent itself to kill the call's tree when ctx
	// ends (SIGTERM, then SIGKILL after KillGrace) before onCancel runs.
	KillGrace time.Duration
}

// Run runs spec and returns its exit. Output is written to spec's writers from the client's
// reading goroutine (one at a time), never after Run returned.
//
// When ctx ends first, onCancel runs (it is expected to kill the process tree, for example with
// another call) and Run waits up to grace for the exit before it gives up on the process; it then
// returns ctx.Err() with the exit when one arrived (Exit.Code -1 otherwise). When the stream ends,
// Run returns an error wrapping ErrClosed.
func (c *Client) Run(ctx context.Context, spec Spec, onCancel func(), grace time.Duration) (Exit, error) {
	spec.Start.Stdin = spec.Stdin != nil
	payload, err := json.Marshal(spec.Start)
	if err != nil {
		return Exit{}, err
	}
	cl := &call{exit: make(chan Exit, 1), stdout: spec.Stdout, stderr: spec.Stderr, ackNote: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return Exit{}, err
	}
	c.next++
	id := c.next
	c.calls[id] = cl
	c.mu.Unlock()
	finish := func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
		cl.mu.Lock()
		cl.finished = true
		cl.mu.Unlock()
	}
	defer finish()
	if err := c.send(FrameStart, id, payload); err != nil {
		return Exit{}, err
	}
	stop := make(chan struct{})
	defer close(stop)
	if spec.Stdin != nil {
		go c.feed(id, cl, spec.Stdin, stop)
	}
	select {
	case e := <-cl.exit:
		return e, nil
	case <-c.done:
		return Exit{}, c.err
	case <-ctx.Done():
	}
	if spec.KillGrace > 0 {
		var g [4]byte
		binary.BigEndian.PutUint32(g[:], uint32(spec.KillGrace/time.Millisecond))
		c.send(FrameKill, id, g[:])
	}
	if onCancel != nil {
		onCancel()
	}
	select {
	case e := <-cl.exit:
		return e, ctx.Err()
	case <-c.done:
		return Exit{Code: -1}, ctx.Err()
	case <-time.After(grace):
		return Exit{Code: -1}, ctx.Err()
	}
}

// windowChunks bounds the stdin frames in flight: the agent queues them in a channel of twice as
// many, which must never fill, however small the frames are.
const windowChunks = Window / MaxPayload

// feed sends r as stdin frames, keeping at most Window bytes and windowChunks frames
// unacknowledged, then the end of stdin. It stops early when the call is over.
func (c *Client) feed(id uint32, cl *call, r io.Reader, stop <-chan struct{}) {
	buf := make([]byte, MaxPayload)
	var sent, sentChunks int64
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			for {
				cl.mu.Lock()
				inflight, chunks := sent-cl.acked, sentChunks-cl.ackedChunks
				cl.mu.Unlock()
				if inflight+int64(n) <= Window && chunks < windowChunks {
					break
				}
				select {
				case <-cl.ackNote:
				case <-stop:
					return
				case <-c.done:
					return
				}
			}
			select {
			case <-stop:
				return
			default:
			}
			if c.send(FrameStdin, id, buf[:n]) != nil {
				return
			}
			sent += int64(n)
			sentChunks++
		}
		if rerr != nil {
			c.send(FrameStdinEOF, id, nil)
			return
		}
	}
}
