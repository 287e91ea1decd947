package progress

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNotATerminalShowsNothing(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	b := New(&buf, "hydrate", 10)
	assert.Nil(t, b)
	b.Add(5) // a nil bar is a no-op
	b.Done()
	assert.Empty(t, buf.String())

	f, err := os.CreateTemp(t.TempDir(), "notatty")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f), "a regular file is not a terminal")
	assert.Nil(t, New(f, "x", 1))
}

func TestDraw(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	b := newBar(&buf, "build", 4)
	b.Add(1)
	b.Add(1) // within 100ms of the last draw: not redrawn
	b.Done()
	assert.Equal(t, "\rbuild [=======                       ]  25% (1/4)"+
		"\rbuild [===============               ]  50% (2/4)\n", buf.String())

	buf.Reset()
	u := newBar(&buf, "files", 0)
	u.Add(3)
	u.Done()
	assert.Equal(t, "\rfiles 3\rfiles 3\n", buf.String())
}
