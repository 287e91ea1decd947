package frames

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, MaxChunk - 1, MaxChunk, MaxChunk + 1, 3*MaxChunk + 17} {
		data := make([]byte, size)
		rand.Read(data)
		// One byte at a time on both sides: chunk and header boundaries fall anywhere.
		e := Encode(iotest.HalfReader(bytes.NewReader(data)))
		got, err := io.ReadAll(Decode(iotest.OneByteReader(iotest.HalfReader(e))))
		require.NoError(t, err, "size %d", size)
		assert.True(t, bytes.Equal(data, got), "size %d", size)
		assert.Equal(t, int64(size), e.Sent())
	}
}

func TestACutIsNotAnEnd(t *testing.T) {
	data := make([]byte, 2*MaxChunk+5)
	var framed bytes.Buffer
	_, err := io.Copy(&framed, Encode(bytes.NewReader(data)))
	require.NoError(t, err)
	whole := framed.Bytes()
	// Every prefix of the stream short of its last byte is a cut, never an end.
	for _, n := range []int{0, 3, 4, 5, MaxChunk + 4, MaxChunk + 8, len(whole) - 4, len(whole) - 1} {
		_, err := io.ReadAll(Decode(bytes.NewReader(whole[:n])))
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "prefix of %d bytes", n)
	}
}

func TestASourceErrorCutsTheStream(t *testing.T) {
	boom := errors.New("the client went away")
	src := io.MultiReader(bytes.NewReader([]byte("some content")), iotest.ErrReader(boom))
	e := Encode(src)
	var framed bytes.Buffer
	_, err := io.Copy(&framed, e)
	require.ErrorIs(t, err, boom)
	assert.ErrorIs(t, e.Err(), boom)
	_, err = io.ReadAll(Decode(&framed))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "what was sent before the error is not a whole stream")
}

func TestAnOversizedHeaderIsRefused(t *testing.T) {
	_, err := io.ReadAll(Decode(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})))
	assert.ErrorIs(t, err, ErrChunk)
}
