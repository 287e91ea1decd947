package adaptertest

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

// testStreamed checks adapter.FileStreamer where the sandbox has it: content larger than any
// buffer or chunk goes in and out whole; a source that fails part way leaves the target as it
// was (a new file is not made) and no temporary file; OpenFile's errors are ReadFile's; a stream
// closed before its end lets the sandbox go on.
func (s *suite) testStreamed(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	fs, ok := sb.(adapter.FileStreamer)
	if !ok {
		t.Skip("the adapter has no adapter.FileStreamer")
	}
	ctx := ctxT(t)
	data := make([]byte, 5<<20+3)
	rand.Read(data)
	// A reader that is not a bytes.Reader: the stream path, not a whole-content shortcut.
	n, err := fs.WriteFileFrom(ctx, "dir/big.bin", iotest.HalfReader(bytes.NewReader(data)))
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), n)
	r, size, err := fs.OpenFile(ctx, "dir/big.bin")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, r.Close())
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), size)
	assert.True(t, bytes.Equal(data, got), "read back %d bytes of %d, equal %v", len(got), len(data), bytes.Equal(data, got))

	boom := errors.New("the upload was cut")
	cut := func(k int) io.Reader { return io.MultiReader(bytes.NewReader(data[:k]), iotest.ErrReader(boom)) }
	_, err = fs.WriteFileFrom(ctx, "dir/big.bin", cut(3<<20))
	assert.ErrorIs(t, err, boom, "the source's error is the write's")
	got, err = sb.ReadFile(ctx, "dir/big.bin")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "a cut upload changed the file: %d bytes now", len(got))
	_, err = fs.WriteFileFrom(ctx, "dir/new.bin", cut(1<<20))
	assert.ErrorIs(t, err, boom)
	res := shOK(t, sb, "ls -A dir")
	assert.Equal(t, "big.bin\n", string(res.Stdout), "a cut upload made a file, or left its temporary file")

	n, err = fs.WriteFileFrom(ctx, "empty", bytes.NewReader(nil))
	require.NoError(t, err)
	assert.Zero(t, n)
	r, size, err = fs.OpenFile(ctx, "empty")
	require.NoError(t, err)
	got, err = io.ReadAll(r)
	require.NoError(t, r.Close())
	assert.NoError(t, err)
	assert.Zero(t, size)
	assert.Empty(t, got)

	_, _, err = fs.OpenFile(ctx, "missing")
	assert.ErrorIs(t, err, errs.NotFound)
	_, _, err = fs.OpenFile(ctx, "../outside")
	assert.ErrorIs(t, err, errs.PathEscape)
	_, err = fs.WriteFileFrom(ctx, "../outside", bytes.NewReader(data[:10]))
	assert.ErrorIs(t, err, errs.PathEscape)
	_, _, err = fs.OpenFile(ctx, "dir")
	assert.Error(t, err, "a directory is not a file to read")

	// Closed after a few bytes of 5 MiB: the rest is not waited for, and the sandbox goes on.
	r, _, err = fs.OpenFile(ctx, "dir/big.bin")
	require.NoError(t, err)
	head := make([]byte, 10)
	_, err = io.ReadFull(r, head)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, data[:10], head)
	require.NoError(t, sb.WriteFile(ctx, "after", []byte("still here")))
	got, err = sb.ReadFile(ctx, "after")
	require.NoError(t, err)
	assert.Equal(t, "still here", string(got))
}
