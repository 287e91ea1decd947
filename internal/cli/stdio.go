package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTransport is the stdio transport of `sandboxer mcp`. When the input is a pipe or a socket (how
// MCP clients start servers) it is a lineTransport over a polled duplicate of the input;
// otherwise (a terminal, a file, a reader in a test) the SDK's IOTransport. done releases what the
// transport opened; call it after the server has stopped.
func mcpTransport(in io.Reader, out io.Writer) (t mcp.Transport, done func()) {
	if f := pollable(in); f != nil {
		return &lineTransport{in: f, out: out}, func() { f.Close() }
	}
	return &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}, func() {}
}

// lineTransport carries JSON-RPC messages as lines of JSON (the MCP stdio framing: one message or
// batch per line, no embedded newlines), like the SDK's IOTransport, with less work per message:
// the Connection reads its lines itself, with no reader goroutine between it and the SDK, and
// decodes each envelope once, with encoding/json (the SDK's transport decodes each message three
// more times after framing it, with a decoder that allocates 32 KiB per value). Lines are limited
// to mcp.DefaultMaxLineLength bytes, as in the SDK.
//
// in must return from Read when it is closed (a polled *os.File does).
type lineTransport struct {
	in  io.ReadCloser
	out io.Writer
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	return &lineConn{
		in:    t.in,
		r:     bufio.NewReaderSize(t.in, 64<<10),
		out:   t.out,
		limit: mcp.DefaultMaxLineLength,
	}, nil
}

// lineConn is the mcp.Connection of a lineTransport. Read is called by one goroutine at a time;
// Write and Close may be called concurrently with anything.
type lineConn struct {
	in    io.ReadCloser
	r     *bufio.Reader
	line  []byte // the line being read, reused
	limit int

	queue []jsonrpc.Message // the rest of the batch last read

	writeMu sync.Mutex
	out     io.Writer

	batchMu sync.Mutex
	batches map[jsonrpc.ID]*lineBatch // incoming batch calls, by ID, until their batch is answered

	closeOnce sync.Once
	closeErr  error
}

// lineBatch collects the responses to the calls of one incoming batch: a batch is answered with one
// array once every call in it has its response (JSON-RPC 2.0, section 6).
type lineBatch struct {
	pending   int
	index     map[jsonrpc.ID]int
	responses []*jsonrpc.Response
}

var errLineTooLong = fmt.Errorf("mcp: a message is longer than %d bytes", mcp.DefaultMaxLineLength)

// SessionID implements mcp.Connection: stdio has no session id.
func (c *lineConn) SessionID() string { return "" }

// Read returns the next message. An error ends the connection, as in the SDK's transports: the
// input's end (io.EOF), a read error, a line over the limit, or a line that is not a JSON-RPC
// message or batch.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '[' {
			return decodeMessage(line)
		}
		msgs, err := c.readBatch(line)
		if err != nil {
			return nil, err
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// readLine reads up to the next newline (or the end of the input) into c.line.
func (c *lineConn) readLine() ([]byte, error) {
	if cap(c.line) > 1<<20 {
		c.line = nil // do not keep the buffer of a large message
	}
	c.line = c.line[:0]
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(c.line)+len(chunk) > c.limit {
			return nil, errLineTooLong
		}
		if err == nil && len(c.line) == 0 {
			return chunk, nil // the common case: the whole line was in the buffer
		}
		c.line = append(c.line, chunk...)
		switch {
		case err == nil:
			return c.line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(c.line)) > 0:
			return c.line, nil // a last line without its newline
		case errors.Is(err, os.ErrClosed):
			return nil, io.EOF // closed under the read: the connection is over
		default:
			return nil, err
		}
	}
}

// readBatch decodes a batch line and records its calls, so that Write answers them together.
func (c *lineConn) readBatch(line []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, fmt.Errorf("mcp: reading a batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("mcp: empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &lineBatch{index: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := b.index[req.ID]; dup {
				return nil, fmt.Errorf("mcp: batch has the id %v twice", req.ID.Raw())
			}
			b.index[req.ID] = len(b.responses)
			b.responses = append(b.responses, nil)
		}
		msgs = append(msgs, m)
	}
	if b.pending = len(b.responses); b.pending > 0 {
		c.batchMu.Lock()
		defer c.batchMu.Unlock()
		for id := range b.index {
			if _, ok := c.batches[id]; ok {
				return nil, fmt.Errorf("mcp: batch reuses the id %v of a call in progress", id.Raw())
			}
		}
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*lineBatch{}
		}
		for id := range b.index {
			c.batches[id] = b
		}
	}
	return msgs, nil
}

// decodeMessage decodes one JSON-RPC 2.0 message: a request or notification when it has a
// "method" member, otherwise a response (which must have an id). Member names match exactly.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, fmt.Errorf("mcp: reading a message: %w", err)
	}
	var version string
	if err := json.Unmarshal(members["jsonrpc"], &version); err != nil || version != "2.0" {
		return nil, fmt.Errorf("mcp: reading a message: jsonrpc is %s, not \"2.0\"", members["jsonrpc"])
	}
	var rawID any
	if raw, ok := members["id"]; ok {
		if err := json.Unmarshal(raw, &rawID); err != nil {
			return nil, fmt.Errorf("mcp: reading a message: id: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, fmt.Errorf("mcp: reading a message: %w", err)
	}
	if rawMethod, ok := members["method"]; ok {
		var method string
		if err := json.Unmarshal(rawMethod, &method); err != nil {
			return nil, fmt.Errorf("mcp: reading a message: method: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: members["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("mcp: reading a message: neither a request (no method) nor a response (no id)")
	}
	resp := &jsonrpc.Response{ID: id, Result: members["result"]}
	if raw, ok := members["error"]; ok && !bytes.Equal(raw, []byte("null")) {
		var werr jsonrpc.Error
		if err := json.Unmarshal(raw, &werr); err != nil {
			return nil, fmt.Errorf("mcp: reading a message: error: %w", err)
		}
		resp.Error = &werr
	}
	return resp, nil
}

// Write writes msg as one line; a response to a call of a batch waits for the rest of its batch.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if batch, inBatch := c.answer(resp); inBatch {
			if batch == nil {
				return nil
			}
			raws := make([]json.RawMessage, len(batch))
			for i, r := range batch {
				if raws[i], err = jsonrpc.EncodeMessage(r); err != nil {
					return fmt.Errorf("mcp: writing a batch: %w", err)
				}
			}
			if data, err = json.Marshal(raws); err != nil {
				return fmt.Errorf("mcp: writing a batch: %w", err)
			}
		}
	}
	if data == nil {
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return fmt.Errorf("mcp: writing a message: %w", err)
		}
	}
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.out.Write(data)
	return err
}

// answer files resp under its batch. inBatch reports whether resp answers a batch call; batch is
// the batch's responses, in order, once resp was the last one missing.
func (c *lineConn) answer(resp *jsonrpc.Response) (batch []*jsonrpc.Response, inBatch bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, resp.ID)
	b.responses[b.index[resp.ID]] = resp
	if b.pending--; b.pending > 0 {
		return nil, true
	}
	return b.responses, true
}

// Close closes the input, which ends a Read in progress. The output stays open: it is the
// process's standard output.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.in.Close() })
	return c.closeErr
}
