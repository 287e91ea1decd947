package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMCPMaxMessageBytes is the default limit of one incoming MCP message (a line of JSON), the
// SDK's own line limit.
const DefaultMCPMaxMessageBytes = mcp.DefaultMaxLineLength

// mcpTransport is the stdio transport of `sandboxer mcp`: a lineTransport whose messages are at
// most limit bytes. When the input is a pipe or a socket (how MCP clients start servers) the
// transport reads a polled duplicate of it, so that closing it ends a read in progress; anything
// else (a terminal, a file, a reader in a test) is copied into an in-process pipe by one goroutine
// for the session. done releases what the transport opened; call it after the server has stopped.
func mcpTransport(in io.Reader, out io.Writer, limit int) (t mcp.Transport, done func()) {
	if f := pollable(in); f != nil {
		return &lineTransport{in: f, out: out, limit: limit, drain: true}, func() { f.Close() }
	}
	r := pumped(in)
	return &lineTransport{in: r, out: out, limit: limit, drain: true}, func() { r.Close() }
}

// pumped returns a reader of in whose Close ends a Read in progress. The goroutine copying in
// ends at in's end or error, or at its first write after Close; a reader that never returns keeps
// it (as in the SDK's IOTransport: a blocking read of stdin cannot be interrupted portably).
func pumped(in io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, in)
		pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()
	return pr
}

// lineTransport carries JSON-RPC messages as lines of JSON (the MCP stdio framing: one message or
// batch per line, no embedded newlines), like the SDK's IOTransport, with less work per message:
// the Connection reads its lines itself, with no reader goroutine between it and the SDK, and
// decodes each envelope once, with encoding/json (the SDK's transport decodes each message three
// more times after framing it, with a decoder that allocates 32 KiB per value).
//
// What a line contains never ends the session: a line that is not a message the server can take
// is answered with a JSON-RPC error reply by the transport itself (see badMessage), and the next
// line is read. Only the input's end, a read error or a failed write of such a reply end it.
//
// in must return from Read when it is closed (a polled *os.File and an io.PipeReader do).
type lineTransport struct {
	in    io.ReadCloser
	out   io.Writer
	limit int // the longest message, in bytes, without its newline; 0 is DefaultMCPMaxMessageBytes
	// drain makes the input's end wait until every call read is answered: the SDK drops what is
	// unanswered when Read fails, so a client that writes its calls and closes its end (a pipe)
	// would get nothing. The framing's own tests read calls without answering them.
	drain bool
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.limit
	if limit <= 0 {
		limit = DefaultMCPMaxMessageBytes
	}
	return &lineConn{
		in:      t.in,
		r:       bufio.NewReaderSize(t.in, 64<<10),
		out:     t.out,
		limit:   limit,
		drain:   t.drain,
		answers: make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}, nil
}

// lineConn is the mcp.Connection of a lineTransport. Read is called by one goroutine at a time;
// Write and Close may be called concurrently with anything.
type lineConn struct {
	in    io.ReadCloser
	r     *bufio.Reader
	line  []byte // the line being read, reused
	limit int
	drain bool // see lineTransport

	queue []jsonrpc.Message // the rest of the batch last read

	writeMu sync.Mutex
	out     io.Writer

	batchMu sync.Mutex
	batches map[jsonrpc.ID]*lineBatch // incoming batch calls, by ID, until their batch is answered

	callsMu sync.Mutex
	calls   map[jsonrpc.ID]bool // ids of the calls read and not answered yet (an id used twice, once)
	answers chan struct{}       // a call was answered (buffered: one is enough to look again)
	closed  chan struct{}       // closed by Close: nothing more will be answered

	closeOnce sync.Once
	closeErr  error
}

// lineBatch collects the replies to the entries of one incoming batch: a batch is answered with
// one array once every call in it has its response (JSON-RPC 2.0, section 6). The replies to bad
// entries are in it from the start.
type lineBatch struct {
	pending int                // calls not answered yet
	index   map[jsonrpc.ID]int // call ID -> its slot
	replies []json.RawMessage  // encoded replies, in the batch's order
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *lineConn) SessionID() string { return "" }

// Read returns the next message. A line that is not a message is answered here and skipped. The
// error ends the connection, as in the SDK's transports: the input's end (io.EOF), a read error,
// or a failed write of an error reply.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			return c.counted(m), nil
		}
		line, over, err := c.readLine()
		if errors.Is(err, io.EOF) && c.drain {
			// The client said all it had to say: its calls are answered before the connection
			// ends (the SDK drops what is unanswered when Read fails), as a filter's would be.
			if err := c.awaitAnswers(ctx); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		if over {
			if err := c.reply(tooLong(line, c.limit)); err != nil {
				return nil, err
			}
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue // not a message; nothing to answer
		}
		if line[0] == '[' {
			if c.queue, err = c.readBatch(line); err != nil {
				return nil, err
			}
			continue
		}
		m, bad := decodeMessage(line)
		if bad != nil {
			if err := c.reply(bad); err != nil {
				return nil, err
			}
			continue
		}
		return c.counted(m), nil
	}
}

// drainLimit bounds how long the input's end waits for answers (see lineTransport.drain): longer
// than a call's longest timeout.
const drainLimit = 10 * time.Minute

// counted returns m, counting it among the calls to answer when it is one.
func (c *lineConn) counted(m jsonrpc.Message) jsonrpc.Message {
	if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.callsMu.Lock()
		if c.calls == nil {
			c.calls = map[jsonrpc.ID]bool{}
		}
		c.calls[req.ID] = true
		c.callsMu.Unlock()
	}
	return m
}

// answered counts the response to call id.
func (c *lineConn) answered(id jsonrpc.ID) {
	c.callsMu.Lock()
	delete(c.calls, id)
	c.callsMu.Unlock()
	select {
	case c.answers <- struct{}{}:
	default:
	}
}

// awaitAnswers waits until every call read so far is answered, ctx ends, the connection is closed,
// the client stops reading (both its pipes closed: it went away, and its calls are cancelled), or
// drainLimit passed (a call the server never answers must not keep it alive).
func (c *lineConn) awaitAnswers(ctx context.Context) error {
	limit := time.After(drainLimit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c.callsMu.Lock()
		n := len(c.calls)
		c.callsMu.Unlock()
		if n == 0 || readerGone(c.out) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return nil
		case <-limit:
			return nil
		case <-tick.C:
		case <-c.answers:
		}
	}
}

// readLine reads up to the next newline (or the end of the input). A line longer than the limit
// is read to its newline without being kept: line is then its first limit bytes and over is true.
func (c *lineConn) readLine() (line []byte, over bool, err error) {
	if cap(c.line) > 1<<20 {
		c.line = nil // do not keep the buffer of a large message
	}
	c.line = c.line[:0]
	for {
		chunk, err := c.r.ReadSlice('\n')
		if !over {
			n := len(chunk)
			if err == nil {
				n-- // the newline
			}
			switch {
			case len(c.line)+n > c.limit:
				over = true
				c.line = append(c.line, chunk[:c.limit-len(c.line)]...)
			case err == nil && len(c.line) == 0:
				return chunk, false, nil // the common case: the whole line was in the buffer
			default:
				c.line = append(c.line, chunk...)
			}
		}
		switch {
		case err == nil:
			return c.line, over, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (over || len(bytes.TrimSpace(c.line)) > 0):
			return c.line, over, nil // a last line without its newline
		case errors.Is(err, os.ErrClosed), errors.Is(err, io.ErrClosedPipe):
			return nil, false, io.EOF // closed under the read: the connection is over
		default:
			return nil, false, err
		}
	}
}

// readBatch decodes a batch line and returns its messages. Bad entries are answered in the batch's
// reply array; a batch with no call to wait for is answered here.
func (c *lineConn) readBatch(line []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, c.reply(parseError(err))
	}
	if len(raws) == 0 {
		return nil, c.reply(invalid(jsonrpc.ID{}, "an empty batch"))
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &lineBatch{index: map[jsonrpc.ID]int{}}
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for _, raw := range raws {
		m, bad := decodeMessage(raw)
		if bad == nil {
			if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
				_, dup := b.index[req.ID]
				_, busy := c.batches[req.ID]
				switch {
				case dup:
					bad = invalid(jsonrpc.ID{}, "the batch has the id %s twice", idText(req.ID))
				case busy:
					bad = invalid(jsonrpc.ID{}, "the id %s is that of a call in progress", idText(req.ID))
				default:
					b.index[req.ID] = len(b.replies)
					b.replies = append(b.replies, nil)
					b.pending++
				}
			}
		}
		if bad != nil {
			b.replies = append(b.replies, bad.encode())
			continue
		}
		msgs = append(msgs, m)
	}
	if b.pending > 0 {
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*lineBatch{}
		}
		for id := range b.index {
			c.batches[id] = b
		}
	} else if len(b.replies) > 0 {
		if err := c.writeLine(joinBatch(b.replies)); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// reply writes the error reply to a bad message.
func (c *lineConn) reply(bad *badMessage) error {
	return c.writeLine(bad.encode())
}

// Write writes msg as one line; a response to a call of a batch waits for the rest of its batch.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encodeMessage(msg)
	if err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		defer c.answered(resp.ID)
		if batch, inBatch := c.answer(resp.ID, data); inBatch {
			if batch == nil {
				return nil
			}
			data = joinBatch(batch)
		}
	}
	return c.writeLine(data)
}

// writeLine writes data and a newline in one write.
func (c *lineConn) writeLine(data []byte) error {
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(data)
	return err
}

// answer files the encoded response to the call id under its batch. inBatch reports whether id is
// a call of a batch; batch is the batch's replies, in order, once this was the last one missing.
func (c *lineConn) answer(id jsonrpc.ID, data []byte) (batch []json.RawMessage, inBatch bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[id]
	if !ok {
		return nil, false
	}
	delete(c.batches, id)
	b.replies[b.index[id]] = data
	if b.pending--; b.pending > 0 {
		return nil, true
	}
	return b.replies, true
}

// joinBatch is the JSON array of replies.
func joinBatch(replies []json.RawMessage) []byte {
	n := 2 + len(replies)
	for _, r := range replies {
		n += len(r)
	}
	out := make([]byte, 0, n+1) // +1: writeLine's newline
	out = append(out, '[')
	for i, r := range replies {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']')
}

// Close closes the input, which ends a Read in progress. The output stays open: it is the
// process's standard output.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.in.Close()
	})
	return c.closeErr
}
