package doctest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	page := "# t\n\n```sh\nnot run\n```\n\n```sh run docker\necho a\necho b\n```\n\n```text output\na\n...\n```\n" +
		"\n```sh run\ntrue\n```\nprose\n```text output\nnot this block's\n```\n" +
		"````sh run repo\n```\nnested\n````\n"
	blocks := Parse([]byte(page))
	require.Len(t, blocks, 3)

	assert.Equal(t, 7, blocks[0].Line)
	assert.Equal(t, []string{"docker"}, blocks[0].Tags)
	assert.True(t, blocks[0].Has("docker"))
	assert.False(t, blocks[0].Has("repo"))
	assert.Equal(t, "echo a\necho b\n", blocks[0].Script)
	require.NotNil(t, blocks[0].Output)
	assert.Equal(t, "a\n...\n", *blocks[0].Output)

	assert.Equal(t, "true\n", blocks[1].Script)
	assert.Nil(t, blocks[1].Output, "an output block after prose belongs to no block")

	assert.Equal(t, []string{"repo"}, blocks[2].Tags)
	assert.Equal(t, "```\nnested\n", blocks[2].Script)
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		expected, output string
		match            bool
	}{
		{"", "", true},
		{"", "x\n", false},
		{"hello\n", "hello\n", true},
		{"hello\n", "hello  \n\n", true},
		{"hello\n", "hello world\n", false},
		{"hello...\n", "hello world\n", true},
		{"{\"ok\":true,...}\n", "{\"ok\":true,\"durationMs\":3}\n", true},
		{"{\"ok\":true,...}\n", "{\"ok\":false,\"durationMs\":3}\n", false},
		{"a...\n", "ab\nc\n", false},
		{"a\n...\nz\n", "a\nb\nc\nz\n", true},
		{"a\n...\nz\n", "a\nz\n", true},
		{"a\n...\nz\n", "a\nb\n", false},
		{"...\n", "anything\nat all\n", true},
		{"a.b\n", "axb\n", false},
		{"exit 1\n", "exit 12\n", false},
	} {
		assert.Equal(t, c.match, Match(c.expected, c.output), "%q against %q", c.expected, c.output)
	}
}
