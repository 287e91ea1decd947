//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeConn returns a lineConn reading what the test writes to in, and writing to out.
func pipeConn(t *testing.T) (c *lineConn, in *os.File, out *bufio.Reader) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	f := pollable(r)
	require.NotNil(t, f, "a pipe is pollable")
	or, ow, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { or.Close(); ow.Close() })
	conn, err := (&lineTransport{in: f, out: ow}).Connect(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn.(*lineConn), w, bufio.NewReader(or)
}

func id(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	i, err := jsonrpc.MakeID(v)
	require.NoError(t, err)
	return i
}

func TestLineConnReadsMessages(t *testing.T) {
	t.Parallel()
	c, in, _ := pipeConn(t)
	ctx := context.Background()
	_, err := io.WriteString(in, strings.Join([]string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"cmd":"true"}}}`,
		``,
		`  {"jsonrpc":"2.0","method":"notifications/initialized"}  ` + "\r",
		`{"jsonrpc":"2.0","id":"s-1","result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"no such method"}}`,
		`{"jsonrpc":"2.0","id":9,"method":""}`,
	}, "\n")+"\n"+`{"jsonrpc":"2.0","id":10,"method":"ping"}`) // the last line has no newline
	require.NoError(t, err)
	require.NoError(t, in.Close())

	m, err := c.Read(ctx)
	require.NoError(t, err)
	req := m.(*jsonrpc.Request)
	assert.Equal(t, id(t, float64(7)), req.ID)
	assert.Equal(t, "tools/call", req.Method)
	assert.JSONEq(t, `{"name":"bash","arguments":{"cmd":"true"}}`, string(req.Params))

	m, err = c.Read(ctx)
	require.NoError(t, err)
	req = m.(*jsonrpc.Request)
	assert.False(t, req.IsCall(), "a notification has no id")
	assert.Equal(t, "notifications/initialized", req.Method)
	assert.Nil(t, req.Params)

	m, err = c.Read(ctx)
	require.NoError(t, err)
	resp := m.(*jsonrpc.Response)
	assert.Equal(t, id(t, "s-1"), resp.ID)
	assert.JSONEq(t, `{"ok":true}`, string(resp.Result))
	assert.NoError(t, resp.Error)

	m, err = c.Read(ctx)
	require.NoError(t, err)
	resp = m.(*jsonrpc.Response)
	var werr *jsonrpc.Error
	require.ErrorAs(t, resp.Error, &werr)
	assert.Equal(t, int64(-32601), werr.Code)
	assert.Equal(t, "no such method", werr.Message)

	m, err = c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "", m.(*jsonrpc.Request).Method, "an empty method is still a request")

	m, err = c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "ping", m.(*jsonrpc.Request).Method)

	_, err = c.Read(ctx)
	assert.ErrorIs(t, err, io.EOF)
}

func TestLineConnAnswersABatchAsOneArray(t *testing.T) {
	t.Parallel()
	c, in, out := pipeConn(t)
	ctx := context.Background()
	_, err := io.WriteString(in, `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"two","method":"b"}]`+"\n")
	require.NoError(t, err)
	var methods []string
	for range 3 {
		m, err := c.Read(ctx)
		require.NoError(t, err)
		methods = append(methods, m.(*jsonrpc.Request).Method)
	}
	assert.Equal(t, []string{"a", "n", "b"}, methods)

	// Answered out of order, with a message outside the batch in between: that one goes out at
	// once; the batch goes out as one array, in the batch's order, when its last call is answered.
	require.NoError(t, c.Write(ctx, &jsonrpc.Response{ID: id(t, "two"), Result: json.RawMessage(`{"b":2}`)}))
	require.NoError(t, c.Write(ctx, &jsonrpc.Request{Method: "notifications/progress"}))
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress"}`, line)
	require.NoError(t, c.Write(ctx, &jsonrpc.Response{ID: id(t, float64(1)), Result: json.RawMessage(`{"a":1}`)}))
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	assert.JSONEq(t, `[{"jsonrpc":"2.0","id":1,"result":{"a":1}},{"jsonrpc":"2.0","id":"two","result":{"b":2}}]`, line)

	// The ids are free again: the same ids in a later message are answered on their own.
	require.NoError(t, c.Write(ctx, &jsonrpc.Response{ID: id(t, float64(1)), Result: json.RawMessage(`{}`)}))
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, line)
}

func TestLineConnCloseEndsARead(t *testing.T) {
	t.Parallel()
	c, _, _ := pipeConn(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the read block
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, io.EOF)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the read")
	}
	assert.NoError(t, c.Close(), "Close twice")
}

// wireErrorReply is a JSON-RPC error reply as written by the transport.
type wireErrorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func readReply(t *testing.T, out *bufio.Reader) wireErrorReply {
	t.Helper()
	line, err := out.ReadBytes('\n')
	require.NoError(t, err)
	var r wireErrorReply
	require.NoError(t, json.Unmarshal(line, &r), "%s", line)
	assert.Equal(t, "2.0", r.JSONRPC, "%s", line)
	require.NotNil(t, r.ID, "the reply has an id member, null or not: %s", line)
	return r
}

const ping = `{"jsonrpc":"2.0","id":"next","method":"ping"}`

// Every line that is not a message gets its error reply, and the next line is read.
func TestLineConnAnswersWhatIsNotAMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		code int64
		id   string // the reply's id, as JSON
	}{
		{`not json`, -32700, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}`, -32700, `null`},
		{`[`, -32700, `null`},
		{"\xff\xfe{}", -32700, `null`},
		{"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"content\":\"a\xffb\"}}", -32700, `4`},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{\"a\":\"\xc3\"}}", -32700, `null`},
		{"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"\xed\xa0\x80\"}", -32700, `null`},
		{`"a string"`, -32600, `null`},
		{`3`, -32600, `null`},
		{`null`, -32600, `null`},
		{`{}`, -32600, `null`},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600, `1`},
		{`{"id":"a","method":"ping"}`, -32600, `"a"`},
		{`{"jsonrpc":"2.0","result":{}}`, -32600, `null`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, `null`},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, `null`},
		{`{"jsonrpc":"2.0","id":1e300,"method":"ping"}`, -32600, `null`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":3}`, -32600, `1`},
		{`{"jsonrpc":"2.0","id":"r","error":5}`, -32600, `null`},
		{`[]`, -32600, `null`},
	} {
		c, in, out := pipeConn(t)
		_, err := io.WriteString(in, tc.line+"\n"+ping+"\n")
		require.NoError(t, err)
		m, err := c.Read(context.Background())
		require.NoError(t, err, "%q", tc.line)
		assert.Equal(t, id(t, "next"), m.(*jsonrpc.Request).ID, "%q: the next line is read", tc.line)
		r := readReply(t, out)
		assert.Equal(t, tc.code, r.Error.Code, "%q: %s", tc.line, r.Error.Message)
		assert.JSONEq(t, tc.id, string(r.ID), "%q", tc.line)
		assert.NotEmpty(t, r.Error.Message, "%q", tc.line)
	}
}

// Ids the way clients write them: strings, integers, integers written as floats.
func TestLineConnIDs(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]any{`"x"`: "x", `7`: float64(7), `7.0`: float64(7), `-3`: float64(-3), `1e3`: float64(1000), `9007199254740992`: float64(1 << 53)} {
		m, bad := decodeMessage([]byte(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}`))
		require.Nil(t, bad, raw)
		assert.Equal(t, id(t, want), m.(*jsonrpc.Request).ID, raw)
	}
}

func TestLineConnMessageLimit(t *testing.T) {
	t.Parallel()
	c, in, out := pipeConn(t)
	c.limit = 100 << 10 // more than the read buffer, so the line arrives in pieces
	pad := strings.Repeat("x", 110<<10)
	go func() {
		io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", 90<<10)+`"}}`+"\n")
		io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"pad":"`+pad+`"}}`+"\n")
		io.WriteString(in, `{"jsonrpc":"2.0","method":"tools/call","params":{"pad":"`+pad+`"},"id":3}`+"\n")
		io.WriteString(in, `{"jsonrpc":"2.0","id":4,"result":{"pad":"`+pad+`"}}`+"\n")
		io.WriteString(in, ping+"\n")
		io.WriteString(in, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"`+pad) // and the input ends
		in.Close()
	}()
	m, err := c.Read(context.Background())
	require.NoError(t, err, "a line under the limit but over the buffer")
	assert.Len(t, m.(*jsonrpc.Request).Params, len(`{"pad":""}`)+90<<10)

	m, err = c.Read(context.Background())
	require.NoError(t, err, "the lines over the limit are answered and skipped")
	assert.Equal(t, id(t, "next"), m.(*jsonrpc.Request).ID)
	for _, want := range []string{`2`, `null`, `null`} {
		r := readReply(t, out)
		assert.EqualValues(t, -32600, r.Error.Code)
		assert.JSONEq(t, want, string(r.ID), "the id when it came before the cut, for a request")
		assert.JSONEq(t, `{"maxMessageBytes":102400}`, string(r.Error.Data))
		assert.Contains(t, r.Error.Message, "mcp-max-message-bytes")
	}

	_, err = c.Read(context.Background())
	assert.ErrorIs(t, err, io.EOF, "the last line, over the limit and without a newline, is answered, then the input ends")
	r := readReply(t, out)
	assert.JSONEq(t, `5`, string(r.ID))
}

// A 100 MB message is skipped without being kept: what the connection allocates while it passes
// is bounded by the limit, not by the message.
func TestLineConnMessageLimitBoundsMemory(t *testing.T) { // not parallel: it measures the process's allocations
	c, in, out := pipeConn(t)
	c.limit = 1 << 20
	const total = 100 << 20
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() {
		io.WriteString(in, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write","arguments":{"path":"big","content":"`)
		for range total / len(chunk) {
			if _, err := in.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(in, `"}}}`+"\n"+ping+"\n")
	}()
	m, err := c.Read(context.Background())
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	assert.Equal(t, id(t, "next"), m.(*jsonrpc.Request).ID)
	r := readReply(t, out)
	assert.JSONEq(t, `9`, string(r.ID))
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB while a %d MiB message was skipped (limit %d KiB)", allocated>>10, total>>20, c.limit>>10)
	assert.Less(t, allocated, uint64(8<<20), "allocations bounded by the limit")
}

// A batch's entries are each answered, in the batch's one reply array: the good calls by the
// server, the bad entries by the transport.
func TestLineConnBatchWithBadEntries(t *testing.T) {
	t.Parallel()
	c, in, out := pipeConn(t)
	ctx := context.Background()
	_, err := io.WriteString(in, `[{"jsonrpc":"2.0","id":1,"method":"a"},5,{"jsonrpc":"2.0","method":"n"},`+
		`{"jsonrpc":"1.0","id":7,"method":"b"},{"jsonrpc":"2.0","id":1,"method":"dup"},{"jsonrpc":"2.0","id":"two","method":"c"}]`+"\n")
	require.NoError(t, err)
	var methods []string
	for range 3 {
		m, err := c.Read(ctx)
		require.NoError(t, err)
		methods = append(methods, m.(*jsonrpc.Request).Method)
	}
	assert.Equal(t, []string{"a", "n", "c"}, methods)
	require.NoError(t, c.Write(ctx, &jsonrpc.Response{ID: id(t, "two"), Result: json.RawMessage(`{"c":3}`)}))
	require.NoError(t, c.Write(ctx, &jsonrpc.Response{ID: id(t, float64(1)), Result: json.RawMessage(`{"a":1}`)}))
	line, err := out.ReadBytes('\n')
	require.NoError(t, err)
	var replies []wireErrorReply
	require.NoError(t, json.Unmarshal(line, &replies), "%s", line)
	require.Len(t, replies, 5, "%s", line)
	assert.JSONEq(t, `1`, string(replies[0].ID))
	for i, want := range map[int]string{1: `null`, 2: `7`, 3: `null`} {
		assert.EqualValues(t, -32600, replies[i].Error.Code, "entry %d", i)
		assert.JSONEq(t, want, string(replies[i].ID), "entry %d", i)
	}
	assert.JSONEq(t, `"two"`, string(replies[4].ID))

	// A batch of bad entries only is answered at once; one of notifications only, not at all.
	_, err = io.WriteString(in, `[{"jsonrpc":"2.0","method":"n1"}]`+"\n"+`[1,"x"]`+"\n"+ping+"\n")
	require.NoError(t, err)
	m, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "n1", m.(*jsonrpc.Request).Method)
	m, err = c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "ping", m.(*jsonrpc.Request).Method)
	line, err = out.ReadBytes('\n')
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(line, &replies), "%s", line)
	require.Len(t, replies, 2)
	for _, r := range replies {
		assert.EqualValues(t, -32600, r.Error.Code)
		assert.JSONEq(t, `null`, string(r.ID))
	}
}

// A response whose request's id could not be read carries "id": null (the SDK's encoder leaves
// the member out).
func TestLineConnWritesNullID(t *testing.T) {
	t.Parallel()
	c, _, out := pipeConn(t)
	require.NoError(t, c.Write(context.Background(), &jsonrpc.Response{Error: fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: -32600, Message: "x"})}))
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"wrapped: x"}}`, line)
}

func TestPeekID(t *testing.T) {
	t.Parallel()
	for seen, want := range map[string]any{
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"a":"xx`: float64(12),
		` { "id" : "s\"1" , "params": [1,{"b":"]"}], "x":`:                 `s"1`,
		`{"method":"m","params":{"id":3},"id":4}`:                          float64(4),
		`{"method":"m","params":{"a":"xx`:                                  nil,
		`{"id":12`:                                                         nil, // the number may go on
		`{"id":1,"result":{"a":"xx`:                                        nil, // a response
		`{"id":true,"method":"m"`:                                          nil,
		`[{"id":1`:                                                         nil,
		``:                                                                 nil,
	} {
		assert.Equal(t, id(t, want), peekID([]byte(seen)), seen)
	}
}

// The transport is the same for every input: a pipe is read through a polled duplicate, anything
// else through an in-process pipe; either way Close ends a read in progress.
func TestMCPTransportChoice(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	tr, done := mcpTransport(r, io.Discard, 0)
	require.IsType(t, &lineTransport{}, tr, "a pipe")
	assert.IsType(t, &os.File{}, tr.(*lineTransport).in)
	done()

	blocked, unblock := io.Pipe() // a reader that is not a file, with nothing to read yet
	defer unblock.Close()
	tr, done = mcpTransport(blocked, io.Discard, 0)
	require.IsType(t, &lineTransport{}, tr, "a reader that is not a file")
	conn, err := tr.Connect(context.Background())
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		read <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, conn.Close())
	select {
	case err := <-read:
		assert.ErrorIs(t, err, io.EOF)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the read")
	}
	done()

	f, err := os.CreateTemp(t.TempDir(), "in")
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("oops\n" + ping + "\n")
	require.NoError(t, err)
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	var out bytes.Buffer
	tr, done = mcpTransport(f, &out, 0)
	defer done()
	conn, err = tr.Connect(context.Background())
	require.NoError(t, err)
	m, err := conn.Read(context.Background())
	require.NoError(t, err, "a regular file, with the same answers")
	assert.Equal(t, "ping", m.(*jsonrpc.Request).Method)
	assert.Contains(t, out.String(), `"code":-32700`)
	// The input ends once the call read is answered (not before: its answer would be dropped).
	ended := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		ended <- err
	}()
	select {
	case err := <-ended:
		t.Fatalf("the input ended with a call unanswered: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	id := m.(*jsonrpc.Request).ID
	require.NoError(t, conn.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}))
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, io.EOF)
	case <-time.After(10 * time.Second):
		t.Fatal("the input did not end once its call was answered")
	}
}

// cycle reads line over and over.
type cycle struct {
	line []byte
	off  int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.line[c.off:])
		n += k
		c.off = (c.off + k) % len(c.line)
	}
	return n, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// BenchmarkStdioTransport reads a tools/call message and writes its response, through the line
// transport and, as the baseline, through the SDK's IOTransport.
//
//	go test -run '^$' -bench StdioTransport -count 5 ./internal/cli/
func BenchmarkStdioTransport(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"bash","arguments":{"cmd":"/bin/true"},"_meta":{"progressToken":3}}}` + "\n")
	result := json.RawMessage(`{"content":[{"type":"text","text":""}],"structuredContent":{"ok":true,"output":"","stdout":"","stderr":"","exitCode":0,"truncated":false}}`)
	for _, tc := range []struct {
		name string
		t    func() mcp.Transport
	}{
		{"line", func() mcp.Transport {
			return &lineTransport{in: io.NopCloser(&cycle{line: line}), out: io.Discard}
		}},
		{"sdk-io", func() mcp.Transport {
			return &mcp.IOTransport{Reader: io.NopCloser(&cycle{line: line}), Writer: nopWriteCloser{io.Discard}}
		}},
	} {
		b.Run("transport="+tc.name, func(b *testing.B) {
			ctx := context.Background()
			conn, err := tc.t().Connect(ctx)
			require.NoError(b, err)
			defer conn.Close()
			b.ReportAllocs()
			for b.Loop() {
				m, err := conn.Read(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := conn.Write(ctx, &jsonrpc.Response{ID: m.(*jsonrpc.Request).ID, Result: result}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
