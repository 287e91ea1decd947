package adapter

import (
	"context"
	"errors"
	"io"

	"github.com/sandboxer/sandboxer/errs"
)

// DefaultReadLimit bounds ReadFile when the context sets no limit: no file, however large it
// claims or turns out to be (a symlink to a sparse 4 TiB file), makes a caller allocate more.
const DefaultReadLimit = 1 << 30

type readLimitKey struct{}

// WithReadLimit returns a context under which Sandbox.ReadFile refuses a file larger than n bytes
// with errs.FileTooLarge. Adapters check the size of the file they opened (after any symlink is
// resolved) before reading it where they can, and stop reading at n+1 bytes where they cannot, so
// the limit bounds what a call allocates.
func WithReadLimit(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, readLimitKey{}, max(n, 0))
}

// ReadLimit is the limit WithReadLimit set on ctx, else DefaultReadLimit.
func ReadLimit(ctx context.Context) int64 {
	if n, ok := ctx.Value(readLimitKey{}).(int64); ok {
		return n
	}
	return DefaultReadLimit
}

// FileTooLarge is the error of a read over its limit; size is what was seen (a lower bound when
// the adapter stopped reading).
func FileTooLarge(op, p string, size, limit int64) error {
	e := errs.New(errs.FileTooLarge, op, p, "file is %d bytes, more than the read limit of %d", size, limit)
	e.Details = map[string]any{"bytes": size, "limit": limit}
	return e
}

// LimitedWriter passes at most Limit bytes to W. A write past the limit passes nothing, fails,
// and calls OnExceed once (to cancel the stream's source): for adapters that receive a file as a
// stream, whose transport may not report a writer's error.
type LimitedWriter struct {
	W        io.Writer
	Limit    int64
	OnExceed func()
	n        int64
	exceeded bool
}

var errPastLimit = errors.New("past the read limit")

func (w *LimitedWriter) Write(p []byte) (int, error) {
	if w.exceeded || w.n+int64(len(p)) > w.Limit {
		if !w.exceeded && w.OnExceed != nil {
			w.OnExceed()
		}
		w.exceeded = true
		return 0, errPastLimit
	}
	w.n += int64(len(p))
	return w.W.Write(p)
}

// Exceeded reports whether a write went past the limit.
func (w *LimitedWriter) Exceeded() bool { return w.exceeded }

// CheckLinkTarget validates the target text of a symbolic link to make (ModeWriter.Symlink):
// non-empty, without NUL. Where it leads is the caller's business.
func CheckLinkTarget(op, p, target string) error {
	for i := 0; i < len(target); i++ {
		if target[i] == 0 {
			return errs.New(errs.InvalidInput, op, p, "a link target must hold no NUL byte")
		}
	}
	if target == "" {
		return errs.New(errs.InvalidInput, op, p, "a link target must not be empty")
	}
	return nil
}
