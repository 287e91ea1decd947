package adapter

import (
	"context"
	"io"
)

// ContextReader returns a reader of r that fails with ctx's error once ctx ends, checked before
// every read: a long stream copy (io.Copy) then stops with its context.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader stops a stream copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
