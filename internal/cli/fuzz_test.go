package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/tools"
)

// fuzzLimit is the message limit in the fuzz target: small, so that the fuzzer reaches it.
const fuzzLimit = 256

// fuzzSeeds are the cases of the transport's tests, as whole inputs.
var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"cmd":"echo","args":["hi"]}}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write","arguments":{"path":"a","content":"x"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read","arguments":{"path":"a"}}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":"p","method":"ping"}`,
	"not json\n" + `{"jsonrpc":"2.0","id":"p","method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping"` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n",
	"\xff\xfe{}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"write\",\"arguments\":{\"path\":\"u\",\"content\":\"\xff\"}}}\n",
	`"a string"` + "\n3\nnull\n{}\n[]\n[\n",
	`{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n" + `{"id":"a","method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":"r","error":5}` + "\n" + `{"jsonrpc":"2.0","id":"r","result":{}}` + "\n",
	`{"jsonrpc":"2.0","id":true,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":3}` + "\n",
	"\n\n  \r\n\t\n",
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},5,{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"1.0","id":7,"method":"b"},{"jsonrpc":"2.0","id":1,"method":"dup"}]` + "\n",
	`[1,"x"]` + "\n" + `[{"jsonrpc":"2.0","method":"n1"}]` + "\n",
	`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write","arguments":{"path":"big","content":"` + strings.Repeat("x", fuzzLimit) + `"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":"next","method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","method":"tools/call","params":{"pad":"` + strings.Repeat("y", fuzzLimit) + `"},"id":3}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"cmd":"sleep","args":["5"]}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":3}}` + "\n",
}

// FuzzMCPStdio feeds arbitrary bytes to `sandboxer mcp`'s server (the built-in tools over a memory
// sandbox) through its stdio transport, and checks that the session goes on until the input ends;
// that every line written is a JSON-RPC response (or an array of them); that every line over the
// limit and every line that is not JSON has its error reply; and that every call with an id of its
// own is answered (the input is held open until they are: at its end, the calls still running are
// cancelled, and the SDK writes nothing more).
//
// Coverage varies from run to run (the server is concurrent), so the fuzzer finds many inputs
// "interesting": -fuzzminimizetime keeps it from spending its time minimizing them.
//
//	go test -run '^$' -fuzz FuzzMCPStdio -fuzztime 30s -fuzzminimizetime 10x -parallel 1 ./internal/cli/
func FuzzMCPStdio(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		sb, err := memory.New(memory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Stop(context.Background())
		tc := tools.NewContext(sb)
		tc.Timeout = time.Second
		srv := newMCPServer(&caller{base: *tc, warn: io.Discard})
		out := &syncBuffer{wrote: make(chan struct{}, 1)}
		inR, inW := io.Pipe()
		defer inW.Close()
		tr, done := mcpTransport(inR, out, fuzzLimit)
		defer done()
		ran := make(chan error, 1)
		go func() { ran <- srv.Run(context.Background(), tr) }()

		// The input, then a ping whose answer says that every line before it was read.
		calls := expectedCalls(input)
		last := "last"
		for bytes.Contains(input, []byte(last)) {
			last += "-"
		}
		calls[`"`+last+`"`] = true
		go func() {
			inW.Write(input)
			fmt.Fprintf(inW, "\n{\"jsonrpc\":\"2.0\",\"id\":%q,\"method\":\"ping\"}\n", last)
		}()
		deadline := time.After(20 * time.Second)
		for !answersAll(t, out.Bytes(), calls) {
			select {
			case <-out.wrote:
			case err := <-ran:
				t.Fatalf("the session ended before the input did: %v", err)
			case <-deadline:
				t.Fatalf("calls %v not answered\noutput:\n%s", calls, out.Bytes())
			}
		}
		inW.Close()
		select {
		case err := <-ran:
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("the session ended with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the session did not end at the end of the input")
		}
		checkReplies(t, input, out.Bytes())
	})
}

// expectedCalls are the ids (as JSON) of the calls in input whose id no other message has; none
// when input has a call that is never answered until cancelled (subscriptions/listen).
func expectedCalls(input []byte) map[string]bool {
	if bytes.Contains(input, []byte("subscriptions/listen")) {
		return map[string]bool{}
	}
	count := map[string]int{}
	add := func(raw []byte) {
		if m, bad := decodeMessage(raw); bad == nil {
			if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
				count[idText(req.ID)]++
			}
		}
	}
	for line := range bytes.Lines(input) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		trimmed := bytes.TrimSpace(line)
		if len(line) > fuzzLimit || len(trimmed) == 0 {
			continue
		}
		var batch []json.RawMessage
		if trimmed[0] == '[' && json.Unmarshal(trimmed, &batch) == nil {
			for _, raw := range batch {
				add(raw)
			}
			continue
		}
		add(trimmed)
	}
	calls := map[string]bool{}
	for id, n := range count {
		if n == 1 {
			calls[id] = true
		}
	}
	return calls
}

// answersAll reports whether output has a response to each of calls.
func answersAll(t *testing.T, output []byte, calls map[string]bool) bool {
	answered := replies(t, output).answered
	for id := range calls {
		if !answered[id] {
			return false
		}
	}
	return true
}

// replyStats sums up the server's output.
type replyStats struct {
	parseErrors, overLimit int             // replies with null id and -32700; replies saying the limit
	answered               map[string]bool // ids of responses, as JSON
}

// replies checks that every line of output is a response or a batch of them, and sums them up. A
// last line without its newline is not read yet.
func replies(t *testing.T, output []byte) replyStats {
	st := replyStats{answered: map[string]bool{}}
	check := func(raw json.RawMessage) {
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("a reply is not a response: %s: %v", raw, err)
		}
		if r.JSONRPC != "2.0" || r.ID == nil || (r.Result == nil) == (r.Error == nil) {
			t.Fatalf("a reply is not a JSON-RPC 2.0 response: %s", raw)
		}
		st.answered[string(r.ID)] = true
		if r.Error != nil && r.Error.Code == jsonrpc.CodeParseError && string(r.ID) == "null" {
			st.parseErrors++
		}
		if r.Error != nil && bytes.Contains(r.Error.Data, []byte("maxMessageBytes")) {
			st.overLimit++
		}
	}
	for line := range bytes.Lines(output) {
		line, whole := bytes.CutSuffix(line, []byte("\n"))
		if !whole {
			break
		}
		if len(line) > 0 && line[0] == '[' {
			var batch []json.RawMessage
			if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
				t.Fatalf("a reply is not a batch of responses: %s", line)
			}
			for _, r := range batch {
				check(r)
			}
			continue
		}
		check(line)
	}
	return st
}

// checkReplies checks the server's whole output against its input: an error reply for every line
// over the limit and for every line that is not JSON.
func checkReplies(t *testing.T, input, output []byte) {
	st := replies(t, output)
	var parseErrors, overLimit int
	for line := range bytes.Lines(input) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		trimmed := bytes.TrimSpace(line)
		switch {
		case len(line) > fuzzLimit:
			overLimit++
		case len(trimmed) > 0 && !json.Valid(trimmed):
			parseErrors++
		}
	}
	if st.overLimit != overLimit {
		t.Fatalf("%d lines over the limit, %d replies saying so\noutput:\n%s", overLimit, st.overLimit, output)
	}
	if st.parseErrors < parseErrors {
		t.Fatalf("%d lines are not JSON, %d parse error replies\noutput:\n%s", parseErrors, st.parseErrors, output)
	}
}

// syncBuffer is a bytes.Buffer safe for the transport's writers, which signals each write on wrote.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
