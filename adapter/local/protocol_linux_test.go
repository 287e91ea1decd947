//go:build linux && !sandboxer_portable

package local

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request survives its binary encoding, and decode refuses every truncation of one and any
// trailing byte, without panicking.
func TestRequestEncoding(t *testing.T) {
	t.Parallel()
	for _, r := range []request{
		{Op: "spawn", ID: 1<<64 - 1, Path: "/bin/sh", Args: []string{"sh", "-c", "echo \x00 é"}, Env: []string{"A=1", ""}, Dir: "/w", Cgroup: true},
		{Op: "spawn", ID: 7, Path: "/bin/true", Args: []string{"true"}, Init: true},
		{Op: "signal", ID: 3, Sig: 9},
		{Op: "dial", ID: 4, Port: 65535},
		{Op: "listen", ID: 5, Port: 1},
	} {
		b := r.appendBinary(nil)
		var got request
		require.NoError(t, got.decode(b))
		assert.Equal(t, r, got)
		for n := range len(b) {
			assert.Error(t, new(request).decode(b[:n]), "%s cut to %d bytes", r.Op, n)
		}
		assert.Error(t, new(request).decode(append(b, 0)))
	}
	assert.Error(t, new(request).decode([]byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 0}), "unknown op")
	// A list that claims more strings than there are bytes is refused before it is allocated.
	assert.Error(t, new(request).decode([]byte{1, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}))
}

// Status records are read back as written; a pipe closed without one reads as end of file.
func TestStatusRecords(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	writeRecord(w, recStarted, 0)
	writeRecord(w, recExited, 0x8f00)
	w.Close()
	kind, value, err := readRecord(r)
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{recStarted, 0}, [2]uint32{kind, value})
	kind, value, err = readRecord(r)
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{recExited, 0x8f00}, [2]uint32{kind, value})
	_, _, err = readRecord(r)
	assert.ErrorIs(t, err, io.EOF)
}
