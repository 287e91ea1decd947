package shellfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent/frames"
	"github.com/sandboxer/sandboxer/errs"
)

// The streamed file operations (adapter.FileStreamer) are the agent's own: `-fs put` takes the
// content framed (package frames), so a stream cut short, by its source or by the transport, is
// told apart from its end and never committed; `-fs open` sends the size of the file it opened,
// then that many bytes. The scripts have neither: without the agent, a stream is read whole
// first (bounded by the caller, as the HTTP API bounds an upload) and a file read whole within
// adapter.ReadLimit(ctx).

// WriteFileFrom writes what src yields as WriteFile writes data and returns the bytes written;
// a failed read of src leaves the target as it was and is returned as it is.
func (f FS) WriteFileFrom(ctx context.Context, p string, src io.Reader) (int64, error) {
	const op = "write"
	r, err := rel(op, p)
	if err != nil {
		return 0, err
	}
	if r == "." {
		return 0, errs.New(errs.InvalidInput, op, p, "is the workspace root")
	}
	if f.Agent == "" {
		data, err := io.ReadAll(src)
		if err != nil {
			return 0, err
		}
		return int64(len(data)), f.WriteFile(ctx, p, data)
	}
	return f.put(ctx, p, r, src)
}

// put runs the agent's `-fs put r` with src framed on its stdin.
func (f FS) put(ctx context.Context, p, r string, src io.Reader) (int64, error) {
	e := frames.Encode(src)
	_, err := f.exec(ctx, "write", p, []string{f.Agent, "-fs", "put", r}, e, nil)
	if e.Err() != nil {
		return 0, e.Err() // the agent saw a cut and removed its temporary file
	}
	if err != nil {
		return 0, err
	}
	return e.Sent(), nil
}

// maxSizeLine bounds the agent's first line of an open: a decimal int64 and a newline.
const maxSizeLine = 21

// OpenFile opens a regular file for reading as a stream and returns it with its size (the size
// of the file when opened; a file that shrinks meanwhile ends the stream with
// io.ErrUnexpectedEOF). No read limit applies with the agent: the caller bounds what it reads.
// Closing the reader ends the exec.
func (f FS) OpenFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	const op = "read"
	r, err := rel(op, p)
	if err != nil {
		return nil, 0, err
	}
	if f.Agent == "" {
		data, err := f.ReadFile(ctx, p)
		if err != nil {
			return nil, 0, err
		}
		return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := f.exec(ctx, op, p, []string{f.Agent, "-fs", "open", r}, nil, pw)
		pw.CloseWithError(err) // nil: io.EOF
		done <- err
	}()
	s := &stream{r: bufio.NewReaderSize(pr, 64<<10), pr: pr, cancel: cancel, done: done}
	size, err := s.size(op, p)
	if err != nil {
		s.Close()
		return nil, 0, err
	}
	s.left = size
	return s, size, nil
}

// stream is an open file's content coming from the agent's `-fs open`.
type stream struct {
	r      *bufio.Reader
	pr     *io.PipeReader
	left   int64
	cancel context.CancelFunc
	done   chan error
	closed bool
}

// size reads the first line: the file's size. An exec that ended before it is its error (the
// exit code's: errs.NotFound...).
func (s *stream) size(op, p string) (int64, error) {
	var line []byte
	for len(line) <= maxSizeLine {
		b, err := s.r.ReadByte()
		if err == io.EOF {
			return 0, errs.New(errs.Internal, op, p, "the agent's answer ended before the file's size")
		}
		if err != nil {
			return 0, err
		}
		if b == '\n' {
			n, err := strconv.ParseInt(string(line), 10, 64)
			if err != nil || n < 0 {
				return 0, errs.New(errs.Internal, op, p, "the agent's size line %q is not a size", line)
			}
			return n, nil
		}
		line = append(line, b)
	}
	return 0, errs.New(errs.Internal, op, p, "the agent's size line %q... is too long", line)
}

func (s *stream) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	if errors.Is(err, io.EOF) && s.left > 0 {
		return n, io.ErrUnexpectedEOF // the file shrank while it was sent
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

// Close ends the exec (when the content was not read to its end) and waits for it.
func (s *stream) Close() error {
	if !s.closed {
		s.closed = true
		s.cancel()
		s.pr.CloseWithError(errClosed)
		<-s.done
	}
	return nil
}

var errClosed = errors.New("shellfs: stream closed")

var _ adapter.FileStreamer = FS{}

// TrustCA installs the egress proxy's certificate authority pem for the commands whose HOME is
// home (egress.TrustStore): the agent's `-fs trust` writes the bundle there, the image's trusted
// certificates followed by pem, unless it ends with pem already, and answers its path: one
// agent command before each command of a policy that terminates TLS. Without the agent there is
// no way to hold it (errs.SandboxUnavailable).
func (f FS) TrustCA(ctx context.Context, home string, pem []byte) (string, error) {
	const op = "trust"
	if f.Agent == "" {
		return "", errs.New(errs.SandboxUnavailable, op, home, "the sandbox runs without its agent, which writes the egress proxy's certificate bundle")
	}
	var out bytes.Buffer
	stderr := adapter.NewCappedBuffer(1 << 16)
	code, err := f.Run(ctx, op, Exec{Args: []string{f.Agent, "-fs", "trust", home}, Env: f.Env, Stdin: bytes.NewReader(pem), Stdout: &out, Stderr: stderr})
	if err != nil {
		return "", err
	}
	if code != 0 { // an agent without the operation (before protocol 7) says so too
		msg, _, _ := stderr.Result()
		return "", errs.New(errs.SandboxUnavailable, op, home, "the agent could not write the egress proxy's certificate bundle: exit %d: %s", code, strings.TrimSpace(string(msg)))
	}
	p := strings.TrimSuffix(out.String(), "\n")
	if !path.IsAbs(p) || strings.ContainsAny(p, "\n\x00") {
		return "", errs.New(errs.SandboxUnavailable, op, home, "the agent answered no bundle path")
	}
	return p, nil
}
