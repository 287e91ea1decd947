package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

var _ adapter.FileStreamer = (*Sandbox)(nil)

// OpenFile downloads a file as a stream: the answer's body, and its size.
func (s *Sandbox) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	if err := s.check(); err != nil {
		return nil, 0, err
	}
	if p == "" {
		return nil, 0, errs.New(errs.PathInvalid, "read", p, "empty path")
	}
	req, err := s.c.request(ctx, http.MethodGet, s.path("/files"), url.Values{"path": {p}}, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, _, err := s.c.do(req)
	if err != nil {
		return nil, 0, err
	}
	return resp.Body, resp.ContentLength, nil
}

// WriteFileFrom uploads what r yields as a stream; the server writes a temporary file and
// renames it once the body ends, so a failed upload leaves the file as it was.
func (s *Sandbox) WriteFileFrom(ctx context.Context, p string, r io.Reader) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if p == "" {
		return 0, errs.New(errs.PathInvalid, "write", p, "empty path")
	}
	req, err := s.c.request(ctx, http.MethodPut, s.path("/files"), url.Values{"path": {p}}, io.NopCloser(r))
	if err != nil {
		return 0, err
	}
	// A known size goes as Content-Length (a body the server reads without chunk framing, and
	// a file the transport can send with sendfile); else the body is chunked, and a source that
	// fails ends it with the abort trailer: the server answers once it has discarded the upload.
	var src *abortable
	if n, ok := sizeOf(r); ok {
		req.ContentLength = n
		if n == 0 {
			req.Body = http.NoBody
		}
	} else {
		src = &abortable{r: r, trailer: http.Header{api.TrailerUpload: nil}}
		req.Body, req.Trailer = io.NopCloser(src), src.trailer
	}
	resp, _, err := s.c.do(req)
	if src != nil && src.err != nil {
		if err == nil {
			resp.Body.Close()
		}
		return 0, src.err
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out api.FileWritten
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, s.readErr(ctx, err)
	}
	return out.Size, nil
}

// abortable is an upload's source that ends its body with the abort trailer, instead of an
// error, when the source fails; err keeps the source's error.
type abortable struct {
	r       io.Reader
	trailer http.Header
	err     error
}

func (a *abortable) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		a.err = err
		a.trailer.Set(api.TrailerUpload, api.UploadAborted)
		return 0, io.EOF // what came with the error is not sent: the upload is void anyway
	}
	return n, err
}

// sizeOf is how many bytes r has left to yield, where r can tell: a regular file (from its
// offset), an in-memory reader, a section.
func sizeOf(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return 0, false
		}
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return fi.Size() - off, true
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer
		return int64(v.Len()), true
	case *io.SectionReader:
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return v.Size() - off, true
	}
	return 0, false
}

// ToolCall is the journal position of a tool call (docs/api.md, "Tool calls"); zero values are
// the server's defaults.
type ToolCall struct {
	RunID, NodeID      string
	Iteration, Attempt int
	IdempotencyKey     string
}

// CallTool runs one of the tools (read, write, edit, grep, bash, process_*) in the sandbox, as
// `sandboxer tool NAME --input INPUT` does, journaled on the server, and returns its reply: the
// JSON object {"ok":true,"output":...} or {"ok":false,"error":{...}}. A tool's failure is in the
// reply; the error is for a call that could not be made.
func (s *Sandbox) CallTool(ctx context.Context, name string, input json.RawMessage, pos ToolCall) (json.RawMessage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	req, err := s.c.request(ctx, http.MethodPost, s.path("/tools/"+url.PathEscape(name)), nil, bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for h, v := range map[string]string{api.HeaderRunID: pos.RunID, api.HeaderNodeID: pos.NodeID, api.HeaderIdempotencyKey: pos.IdempotencyKey} {
		if v != "" {
			req.Header.Set(h, v)
		}
	}
	if pos.Iteration != 0 {
		req.Header.Set(api.HeaderIteration, strconv.Itoa(pos.Iteration))
	}
	if pos.Attempt != 0 {
		req.Header.Set(api.HeaderAttempt, strconv.Itoa(pos.Attempt))
	}
	resp, _, err := s.c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, s.readErr(ctx, err)
	}
	return data, nil
}
