package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// badMessage is a line (or batch entry) that is not a message the server can take, with the
// JSON-RPC error reply the transport gives it:
//
//	-32700 parse error: not JSON, or not valid UTF-8;
//	-32600 invalid request: JSON that is not a JSON-RPC 2.0 message (not an object, no or another
//	       "jsonrpc", an id that is not a string or an integer, a method that is not a string, an
//	       empty batch, an id twice in a batch), or a message over the size limit (data says the limit).
//
// The reply carries the message's id when it is a request whose id could be read, so that the
// client's call fails at once; otherwise (JSON that cannot be read, a response, no id) id is null.
type badMessage struct {
	id   jsonrpc.ID
	code int64
	msg  string
	data json.RawMessage
}

func (b *badMessage) Error() string { return b.msg }

// encode is the error reply's JSON.
func (b *badMessage) encode() []byte {
	data, err := encodeMessage(&jsonrpc.Response{ID: b.id, Error: &jsonrpc.Error{Code: b.code, Message: b.msg, Data: b.data}})
	if err != nil { // cannot happen: every member is plain data
		panic(err)
	}
	return data
}

func parseError(err error) *badMessage {
	return &badMessage{code: jsonrpc.CodeParseError, msg: "parse error: " + err.Error()}
}

func invalid(id jsonrpc.ID, format string, args ...any) *badMessage {
	return &badMessage{id: id, code: jsonrpc.CodeInvalidRequest, msg: "invalid request: " + fmt.Sprintf(format, args...)}
}

// tooLong is the reply to a message over limit bytes whose first limit bytes are seen.
func tooLong(seen []byte, limit int) *badMessage {
	b := invalid(peekID(seen), "the message is longer than %d bytes (the server's mcp-max-message-bytes); "+
		"send large content in parts", limit)
	b.data = fmt.Appendf(nil, `{"maxMessageBytes":%d}`, limit)
	return b
}

// decodeMessage decodes one JSON-RPC 2.0 message: a request or notification when it has a
// "method" member, otherwise a response (which must have an id). Member names match exactly.
func decodeMessage(data []byte) (jsonrpc.Message, *badMessage) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, invalid(jsonrpc.ID{}, "a message is a JSON object, not %s", te.Value)
		}
		return nil, parseError(err)
	}
	if members == nil {
		return nil, invalid(jsonrpc.ID{}, "a message is a JSON object, not null")
	}
	rawMethod, isRequest := members["method"]
	id, idErr := parseID(members["id"])
	replyID := jsonrpc.ID{} // the id the error reply may carry: a request's
	if isRequest && idErr == nil {
		replyID = id
	}
	if !utf8.Valid(data) {
		// encoding/json would read the bad bytes as U+FFFD and, for example, write a file that is
		// not what the client sent.
		return nil, &badMessage{id: replyID, code: jsonrpc.CodeParseError, msg: "parse error: the message is not valid UTF-8"}
	}
	if v := members["jsonrpc"]; !bytes.Equal(v, []byte(`"2.0"`)) {
		if v == nil {
			return nil, invalid(replyID, `no "jsonrpc":"2.0" member`)
		}
		return nil, invalid(replyID, `"jsonrpc" is %s, not "2.0"`, v)
	}
	if idErr != nil {
		return nil, invalid(jsonrpc.ID{}, "%v", idErr)
	}
	if isRequest {
		var method string
		if err := json.Unmarshal(rawMethod, &method); err != nil {
			return nil, invalid(replyID, "the method is %s, not a string", rawMethod)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: members["params"]}, nil
	}
	if !id.IsValid() {
		return nil, invalid(jsonrpc.ID{}, "neither a request (no method) nor a response (no id)")
	}
	resp := &jsonrpc.Response{ID: id, Result: members["result"]}
	if raw, ok := members["error"]; ok && !bytes.Equal(raw, []byte("null")) {
		var werr jsonrpc.Error
		if err := json.Unmarshal(raw, &werr); err != nil {
			return nil, invalid(jsonrpc.ID{}, "the error of the response to %s is not an error object", idText(id))
		}
		resp.Error = &werr
	}
	return resp, nil
}

// parseID reads a message's id: absent or null (a notification), a string, or an integer within
// ±2^53 (written with or without a fraction of zero or an exponent).
func parseID(raw json.RawMessage) (jsonrpc.ID, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return jsonrpc.ID{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, fmt.Errorf("the id %.40s is not a string", raw)
		}
		return jsonrpc.MakeID(s)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 || !json.Valid(raw) {
		return jsonrpc.ID{}, fmt.Errorf("the id %.40s is not a string, an integer or null", raw)
	}
	return jsonrpc.MakeID(f)
}

// idText is id as JSON, for messages.
func idText(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// encodeMessage is msg's JSON. The SDK's encoder leaves out a null id, which a response must
// carry ("id": null) when the request's id could not be read.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID.IsValid() {
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return nil, fmt.Errorf("mcp: writing a message: %w", err)
		}
		return data, nil
	}
	wire := struct {
		Version string          `json:"jsonrpc"`
		ID      *int            `json:"id"` // always null
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}{Version: "2.0", Result: resp.Result}
	if resp.Error != nil {
		var werr *jsonrpc.Error
		if !errors.As(resp.Error, &werr) {
			werr = &jsonrpc.Error{}
		}
		wire.Error = &jsonrpc.Error{Code: werr.Code, Message: resp.Error.Error(), Data: werr.Data}
	}
	data, err := json.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("mcp: writing a message: %w", err)
	}
	return data, nil
}

// peekID returns the id of the JSON-RPC request whose first bytes are seen (the rest was not
// read): the members of the object are read in order up to the first one that is not whole. It is
// null when no whole "id" member came first, when the id is not valid, and when the message is a
// response (a "result" or "error" member came first).
func peekID(seen []byte) jsonrpc.ID {
	s := scanner{data: seen}
	s.space()
	if !s.take('{') {
		return jsonrpc.ID{}
	}
	var id jsonrpc.ID
	for {
		s.space()
		start := s.i
		if !s.skipString() {
			break
		}
		key := seen[start:s.i]
		s.space()
		if !s.take(':') {
			break
		}
		if k := string(key); k == `"result"` || k == `"error"` {
			return jsonrpc.ID{}
		}
		s.space()
		start = s.i
		if !s.skipValue() {
			break
		}
		if string(key) == `"id"` {
			if v, err := parseID(seen[start:s.i]); err == nil {
				id = v
			}
		}
		s.space()
		if !s.take(',') {
			break
		}
	}
	return id
}

// scanner finds the ends of JSON values in data, which may be cut anywhere. Each skip reports
// whether the value was whole; it does not validate more than it needs to find the end.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) take(c byte) bool {
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) skipString() bool {
	if !s.take('"') {
		return false
	}
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return true
		default:
			s.i++
		}
	}
	return false
}

// skipValue skips a string, an object, an array or a scalar; a scalar must be followed by
// something (at the end of data it may be cut).
func (s *scanner) skipValue() bool {
	if s.i >= len(s.data) {
		return false
	}
	switch s.data[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.data) {
			switch s.data[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return true
		}
		s.i++
	}
	return false
}
