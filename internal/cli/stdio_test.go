//go:build unix

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
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

func TestLineConnRejectsWhatIsNotAMessage(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		`not json`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":3}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`[]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	} {
		c, in, _ := pipeConn(t)
		_, err := io.WriteString(in, line+"\n")
		require.NoError(t, err)
		_, err = c.Read(context.Background())
		assert.Error(t, err, line)
		assert.NotErrorIs(t, err, io.EOF, line)
	}
}

func TestLineConnLineLimit(t *testing.T) {
	t.Parallel()
	c, in, _ := pipeConn(t)
	c.limit = 100 << 10 // more than the read buffer, so the line arrives in pieces
	go func() {
		io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", 90<<10)+`"}}`+"\n")
		io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"`+strings.Repeat("x", 110<<10)+`"}}`+"\n")
	}()
	m, err := c.Read(context.Background())
	require.NoError(t, err, "a line under the limit but over the buffer")
	assert.Len(t, m.(*jsonrpc.Request).Params, len(`{"pad":""}`)+90<<10)
	_, err = c.Read(context.Background())
	assert.ErrorIs(t, err, errLineTooLong)
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

func TestMCPTransportChoice(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	tr, done := mcpTransport(r, io.Discard)
	assert.IsType(t, &lineTransport{}, tr, "a pipe")
	done()

	tr, done = mcpTransport(strings.NewReader(""), io.Discard)
	assert.IsType(t, &mcp.IOTransport{}, tr, "a reader that is not a file")
	done()

	f, err := os.CreateTemp(t.TempDir(), "in")
	require.NoError(t, err)
	defer f.Close()
	tr, done = mcpTransport(f, io.Discard)
	assert.IsType(t, &mcp.IOTransport{}, tr, "a regular file")
	done()
}
