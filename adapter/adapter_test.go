package adapter_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRel(t *testing.T) {
	t.Parallel()
	ok := []struct{ root, in, want string }{
		{"/workspace", "a.txt", "a.txt"},
		{"/workspace", "./a/b/../c", "a/c"},
		{"/workspace", ".", "."},
		{"/workspace", "/workspace", "."},
		{"/workspace", "/workspace/x/y", "x/y"},
		{"/workspace/", "/workspace//x", "x"},
		{"/tmp/ws", "a/../b", "b"},
	}
	for _, c := range ok {
		got, err := adapter.Rel("read", c.root, c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	bad := []struct {
		root, in string
		code     errs.Code
	}{
		{"/workspace", "", errs.PathInvalid},
		{"/workspace", "   ", errs.PathInvalid},
		{"/workspace", "a\x00b", errs.PathInvalid},
		{"/workspace", "../x", errs.PathEscape},
		{"/workspace", "..", errs.PathEscape},
		{"/workspace", "a/../../x", errs.PathEscape},
		{"/workspace", "/etc/passwd", errs.PathEscape},
		{"/workspace", "/workspace2/x", errs.PathEscape},
		{"/workspace", "/workspace/../etc", errs.PathEscape},
	}
	for _, c := range bad {
		_, err := adapter.Rel("read", c.root, c.in)
		assert.ErrorIs(t, err, c.code, "%q", c.in)
	}
}

func TestCappedBufferKeepsHeadAndCounts(t *testing.T) {
	t.Parallel()
	b := adapter.NewCappedBuffer(10)
	for range 100 {
		n, err := b.Write([]byte("0123456789abc"))
		require.NoError(t, err)
		require.Equal(t, 13, n)
	}
	data, truncated, dropped := b.Result()
	assert.Equal(t, "0123456789", string(data))
	assert.True(t, truncated)
	assert.EqualValues(t, 1300-10, dropped)
}

func TestCappedBufferUnderLimitIsUntouched(t *testing.T) {
	t.Parallel()
	b := adapter.NewCappedBuffer(10)
	_, _ = b.Write([]byte("ab\xff\xc3")) // not UTF-8, but not cut either
	data, truncated, dropped := b.Result()
	assert.Equal(t, "ab\xff\xc3", string(data))
	assert.False(t, truncated)
	assert.Zero(t, dropped)
}

func TestCappedBufferCutsOnRuneBoundary(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("é€😀a", 50)
	for limit := 1; limit < 40; limit++ {
		b := adapter.NewCappedBuffer(limit)
		_, _ = b.Write([]byte(text))
		data, truncated, dropped := b.Result()
		require.True(t, truncated)
		require.True(t, utf8.Valid(data), "limit %d cut a character: %q", limit, data)
		require.LessOrEqual(t, len(data), limit)
		require.Greater(t, len(data), limit-utf8.UTFMax)
		require.EqualValues(t, len(text), int64(len(data))+dropped)
		require.True(t, strings.HasPrefix(text, string(data)))
	}
}

func TestTmpBytes(t *testing.T) {
	assert.EqualValues(t, 64<<20, adapter.TmpBytes(64<<20, 512<<20), "a setting wins")
	assert.EqualValues(t, 256<<20, adapter.TmpBytes(0, 512<<20), "half the memory limit")
	assert.EqualValues(t, 0, adapter.TmpBytes(0, 0), "no memory limit: the kernel's default")
}
