// Package toolstest is the tool suite: it runs the tools of package tools over any
// adapter.Sandbox and checks the contract of SPEC.md section 3 (results, limits, error codes,
// network policy) end to end. Each adapter's test calls Run with a constructor:
//
//	func TestTools(t *testing.T) { toolstest.Run(t, newSandbox) }
//
// The suite needs rg, sh, echo, cat, printf, ln and sleep inside the sandbox (or the adapter's
// equivalents); cases that need symbolic links or git are skipped visibly where the sandbox has
// none. Tests assert error codes, never message text.
package toolstest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools"
)

// Run runs the suite. newSandbox returns a fresh, started sandbox with an empty workspace; the
// suite stops it when the test ends.
func Run(t *testing.T, newSandbox func(t *testing.T) adapter.Sandbox) {
	s := suite{newSandbox: newSandbox}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"WriteThenRead", s.testWriteThenRead},
		{"ReadErrors", s.testReadErrors},
		{"PathInvalid", s.testPathInvalid},
		{"PathEscape", s.testPathEscape},
		{"DanglingSymlinkOut", s.testDanglingSymlinkOut},
		{"StrictInput", s.testStrictInput},
		{"EditReplacesLine", s.testEditReplacesLine},
		{"EditRelocatesAndKeepsCRLF", s.testEditRelocatesAndKeepsCRLF},
		{"EditFailureLeavesFileUnchanged", s.testEditFailureLeavesFileUnchanged},
		{"EditErrors", s.testEditErrors},
		{"SizeLimits", s.testSizeLimits},
		{"Grep", s.testGrep},
		{"GrepErrors", s.testGrepErrors},
		{"BashOutput", s.testBashOutput},
		{"BashCommandFailed", s.testBashCommandFailed},
		{"BashCwd", s.testBashCwd},
		{"BashEnv", s.testBashEnv},
		{"BashTimeout", s.testBashTimeout},
		{"BashTruncation", s.testBashTruncation},
		{"BashProcessFailed", s.testBashProcessFailed},
		{"BashInvalidInput", s.testBashInvalidInput},
		{"ContextInvalid", s.testContextInvalid},
		{"NetworkDenied", s.testNetworkDenied},
		{"NetworkAllowed", s.testNetworkAllowed},
		{"AllowNetworkSkipsPolicy", s.testAllowNetworkSkipsPolicy},
		{"StoppedSandbox", s.testStoppedSandbox},
		{"Background", s.testBackground},
		{"ProcessErrors", s.testProcessErrors},
		{"BackgroundNetworkDenied", s.testBackgroundNetworkDenied},
		{"Receipt", s.testReceipt},
		{"ReceiptNothingChanged", s.testReceiptNothingChanged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type suite struct {
	newSandbox func(t *testing.T) adapter.Sandbox
}

// env returns a tool context with the defaults over a fresh sandbox that is stopped at the end.
func (s suite) env(t *testing.T) *tools.Context {
	t.Helper()
	sb := s.newSandbox(t)
	require.NotNil(t, sb)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return tools.NewContext(sb)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// call runs tool with input (a JSON string, or any value that is marshalled).
func call(t *testing.T, tc *tools.Context, tool *tools.Tool, input any) (*tools.Result, error) {
	t.Helper()
	var raw json.RawMessage
	switch v := input.(type) {
	case string:
		raw = json.RawMessage(v)
	default:
		b, err := json.Marshal(v)
		require.NoError(t, err)
		raw = b
	}
	res, err := tool.Call(ctxT(t), raw, tc)
	if err != nil {
		var e *errs.Error
		require.True(t, errors.As(err, &e), "every tool error is an *errs.Error: %v", err)
		require.NotEmpty(t, e.Code)
		assert.Nil(t, res)
	} else {
		require.NotNil(t, res)
	}
	return res, err
}

// ok runs tool and requires success.
func ok(t *testing.T, tc *tools.Context, tool *tools.Tool, input any) *tools.Result {
	t.Helper()
	res, err := call(t, tc, tool, input)
	require.NoError(t, err)
	return res
}

// fails runs tool and requires the error code.
func fails(t *testing.T, tc *tools.Context, tool *tools.Tool, input any, code errs.Code) *errs.Error {
	t.Helper()
	_, err := call(t, tc, tool, input)
	require.Error(t, err, "want %s", code)
	require.Equal(t, code, errs.CodeOf(err), "error: %v", err)
	return errs.As(err)
}

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func bashIn(cmd string, args ...string) map[string]any {
	return obj("cmd", cmd, "args", args)
}

func sh(script string) map[string]any { return bashIn("sh", "-c", script) }

func readBack(t *testing.T, tc *tools.Context, p string) string {
	t.Helper()
	return ok(t, tc, tools.Read, obj("path", p)).Output
}

func caps(sb adapter.Sandbox) (adapter.Capabilities, bool) {
	c, ok := sb.(adapter.Capable)
	if !ok {
		return adapter.Capabilities{}, false
	}
	return c.Capabilities(), true
}

func (s suite) testWriteThenRead(t *testing.T) {
	tc := s.env(t)
	res := ok(t, tc, tools.Write, obj("path", "nested/file.txt", "content", "hello\nworld\n"))
	assert.Equal(t, "ok", res.Output)
	assert.Equal(t, "ok", res.Value)
	assert.Equal(t, "hello\nworld\n", readBack(t, tc, "nested/file.txt"))
	assert.Equal(t, "hello\nworld\n", readBack(t, tc, "./nested/../nested/file.txt"))

	ok(t, tc, tools.Write, obj("path", "nested/file.txt", "content", "replaced"))
	assert.Equal(t, "replaced", readBack(t, tc, "nested/file.txt"))

	ok(t, tc, tools.Write, obj("path", "empty.txt", "content", ""))
	assert.Equal(t, "", readBack(t, tc, "empty.txt"))

	utf := "héllo wörld ✓ 🎉\n"
	ok(t, tc, tools.Write, obj("path", "utf8.txt", "content", utf))
	assert.Equal(t, utf, readBack(t, tc, "utf8.txt"))

	if tc.RootDir != "" {
		abs := strings.TrimSuffix(tc.RootDir, "/") + "/abs/inside.txt"
		ok(t, tc, tools.Write, obj("path", abs, "content", "absolute"))
		assert.Equal(t, "absolute", readBack(t, tc, "abs/inside.txt"))
		assert.Equal(t, "absolute", readBack(t, tc, abs))
	}
}

func (s suite) testReadErrors(t *testing.T) {
	tc := s.env(t)
	fails(t, tc, tools.Read, obj("path", "missing.txt"), errs.NotFound)
	fails(t, tc, tools.Read, obj("path", "no/such/dir/file.txt"), errs.NotFound)
	ok(t, tc, tools.Write, obj("path", "dir/f", "content", "x"))
	fails(t, tc, tools.Read, obj("path", "dir"), errs.NotFound)
}

func (s suite) testPathInvalid(t *testing.T) {
	tc := s.env(t)
	for _, in := range []string{
		`{"path":""}`, `{"path":"   "}`, `{"path":5}`, `{"path":null}`, `{"path":["a"]}`, `{}`, ``,
		`{"path":"a\u0000b"}`,
	} {
		t.Run(in, func(t *testing.T) {
			fails(t, tc, tools.Read, in, errs.PathInvalid)
		})
	}
	fails(t, tc, tools.Write, `{"path":"","content":"x"}`, errs.PathInvalid)
	fails(t, tc, tools.Write, `{"path":{},"content":"x"}`, errs.PathInvalid)
	fails(t, tc, tools.Write, `{"content":"x"}`, errs.PathInvalid)
	fails(t, tc, tools.Edit, `{"path":"","patch":"@@ -1 +1 @@\n-a\n+b\n"}`, errs.PathInvalid)
	fails(t, tc, tools.Grep, `{"pattern":"x","path":7}`, errs.PathInvalid)
}

func (s suite) testPathEscape(t *testing.T) {
	tc := s.env(t)
	for _, p := range []string{"../outside.txt", "a/../../outside.txt", "/etc/passwd", "/"} {
		t.Run(p, func(t *testing.T) {
			fails(t, tc, tools.Read, obj("path", p), errs.PathEscape)
			fails(t, tc, tools.Write, obj("path", p, "content", "x"), errs.PathEscape)
			fails(t, tc, tools.Edit, obj("path", p, "patch", "@@ -1 +1 @@\n-a\n+b\n"), errs.PathEscape)
			fails(t, tc, tools.Grep, obj("pattern", "root", "path", p), errs.PathEscape)
			fails(t, tc, tools.Bash, obj("cmd", "echo", "opts", obj("cwd", p)), errs.PathEscape)
		})
	}
}

// A dangling symlink inside the root that points outside cannot be written (or read) through.
func (s suite) testDanglingSymlinkOut(t *testing.T) {
	tc := s.env(t)
	if c, ok := caps(tc.Sandbox); ok && !c.Symlinks {
		t.Skip("sandbox has no symbolic links")
	}
	// The relative target lands next to the workspace (for a local sandbox in the test's own temp
	// directory); the absolute one somewhere else entirely.
	ok(t, tc, tools.Bash, sh(`mkdir -p ../sandboxer-escape 2>/dev/null; ln -s ../sandboxer-escape/file.txt rel && ln -s /sandboxer-escape-abs/file.txt abs && mkdir d && ln -s ../../sandboxer-escape d/up`))
	for _, p := range []string{"rel", "abs", "d/up/file.txt"} {
		t.Run(p, func(t *testing.T) {
			fails(t, tc, tools.Write, obj("path", p, "content", "leak"), errs.PathEscape)
			fails(t, tc, tools.Read, obj("path", p), errs.PathEscape)
		})
	}
	_, err := call(t, tc, tools.Bash, bashIn("test", "-e", "../sandboxer-escape/file.txt"))
	require.ErrorIs(t, err, errs.CommandFailed, "nothing may have been written outside")
}

func (s suite) testStrictInput(t *testing.T) {
	tc := s.env(t)
	for _, c := range []struct {
		tool *tools.Tool
		in   string
	}{
		{tools.Read, `{"path":"a","extra":1}`},
		{tools.Write, `{"path":"a","content":"x","mode":"0644"}`},
		{tools.Write, `{"path":"a","content":5}`},
		{tools.Write, `{"path":"a"}`},
		{tools.Edit, `{"path":"a"}`},
		{tools.Grep, `{"path":"."}`},
		{tools.Grep, `{"pattern":1}`},
		{tools.Bash, `{"cmd":"echo","args":[1,2]}`},
		{tools.Bash, `{"cmd":"echo","args":"hello"}`},
		{tools.Bash, `{"cmd":"echo","opts":{"cwd":".","timeout":5}}`},
		{tools.Bash, `{"cmd":["echo"]}`},
		{tools.Bash, `{"args":["x"]}`},
		{tools.Bash, `[]`},
		{tools.Bash, `"echo"`},
		{tools.Bash, `{"cmd":"echo"} {"cmd":"echo"}`},
		{tools.Bash, `{"cmd":"echo"`},
	} {
		t.Run(c.tool.Name()+" "+c.in, func(t *testing.T) {
			fails(t, tc, c.tool, c.in, errs.InvalidInput)
		})
	}
	_, err := call(t, tc, tools.Read, obj("path", "a"))
	require.ErrorIs(t, err, errs.NotFound, "the rejected write above must not have created the file")
}

func (s suite) testEditReplacesLine(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "src/a.txt", "content", "one\ntwo\nthree\n"))
	res := ok(t, tc, tools.Edit, obj("path", "src/a.txt", "patch", "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"))
	assert.Equal(t, "ok", res.Output)
	assert.Equal(t, "one\nTWO\nthree\n", readBack(t, tc, "src/a.txt"))
}

func (s suite) testEditRelocatesAndKeepsCRLF(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "w.txt", "content", "new\nnew\na\r\nb\r\nc\r\n"))
	ok(t, tc, tools.Edit, obj("path", "w.txt", "patch", "--- x\n+++ y\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"))
	assert.Equal(t, "new\nnew\na\r\nB\r\nc\r\n", readBack(t, tc, "w.txt"))

	ok(t, tc, tools.Write, obj("path", "n.txt", "content", "a\nb"))
	ok(t, tc, tools.Edit, obj("path", "n.txt", "patch", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"))
	assert.Equal(t, "a\nb\n", readBack(t, tc, "n.txt"))
}

func (s suite) testEditFailureLeavesFileUnchanged(t *testing.T) {
	tc := s.env(t)
	orig := "line 1\nline 2\n"
	ok(t, tc, tools.Write, obj("path", "f.txt", "content", orig))
	// A hunk at line 10 of a 2-line file.
	e := fails(t, tc, tools.Edit, obj("path", "f.txt", "patch", "--- a/f.txt\n+++ b/f.txt\n@@ -10,3 +10,4 @@\n x\n y\n+z\n w\n"), errs.PatchFailed)
	assert.Equal(t, 1, e.Details["hunk"])
	assert.Equal(t, orig, readBack(t, tc, "f.txt"))

	// The first hunk applies, the second does not: nothing is written.
	e = fails(t, tc, tools.Edit, obj("path", "f.txt", "patch", "@@ -1 +1 @@\n-line 1\n+LINE 1\n@@ -2 +2 @@\n-line 20\n+LINE 2\n"), errs.PatchFailed)
	assert.Equal(t, 2, e.Details["hunk"])
	assert.Equal(t, orig, readBack(t, tc, "f.txt"))
}

func (s suite) testEditErrors(t *testing.T) {
	tc := s.env(t)
	good := "@@ -1 +1 @@\n-a\n+b\n"
	fails(t, tc, tools.Edit, obj("path", "missing.txt", "patch", good), errs.NotFound)
	ok(t, tc, tools.Write, obj("path", "a.txt", "content", "a\n"))
	fails(t, tc, tools.Edit, obj("path", "a.txt", "patch", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-a\n+b\n"), errs.InvalidInput)
	fails(t, tc, tools.Edit, obj("path", "a.txt", "patch", "--- a/a.txt\n+++ b/a.txt\n"), errs.InvalidInput)
	fails(t, tc, tools.Edit, obj("path", "a.txt", "patch", ""), errs.InvalidInput)
	fails(t, tc, tools.Edit, obj("path", "a.txt", "patch", "just some words\n"), errs.InvalidInput)
	// A bad patch is reported before the file is looked at.
	fails(t, tc, tools.Edit, obj("path", "missing.txt", "patch", "nonsense"), errs.InvalidInput)
	assert.Equal(t, "a\n", readBack(t, tc, "a.txt"))
	ok(t, tc, tools.Edit, obj("path", "a.txt", "patch", good))
	assert.Equal(t, "b\n", readBack(t, tc, "a.txt"))
}

func (s suite) testSizeLimits(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "five.txt", "content", "hello"))
	small := *tc
	small.MaxOutputBytes = 4
	fails(t, &small, tools.Write, obj("path", "w.txt", "content", "hello"), errs.ContentTooLarge)
	// Content size is checked before the path.
	fails(t, &small, tools.Write, obj("path", "../escape", "content", "hello"), errs.ContentTooLarge)
	fails(t, &small, tools.Read, obj("path", "five.txt"), errs.FileTooLarge)
	fails(t, &small, tools.Edit, obj("path", "five.txt", "patch", "@@ -1 +1 @@\n-hello\n+hi\n"), errs.PatchTooLarge)
	fails(t, &small, tools.Edit, obj("path", "../escape", "patch", "@@ -1 +1 @@\n-hello\n+hi\n"), errs.PatchTooLarge)
	_, err := call(t, tc, tools.Read, obj("path", "w.txt"))
	require.ErrorIs(t, err, errs.NotFound)

	// At the limit is fine.
	ok(t, &small, tools.Write, obj("path", "four.txt", "content", "four"))
	assert.Equal(t, "four", readBack(t, &small, "four.txt"))

	// edit of a file over the limit with a patch under it.
	ok(t, tc, tools.Write, obj("path", "big.txt", "content", strings.Repeat("a\n", 50)))
	mid := *tc
	mid.MaxOutputBytes = 30
	fails(t, &mid, tools.Edit, obj("path", "big.txt", "patch", "@@ -1 +1 @@\n-a\n+b\n"), errs.FileTooLarge)
	assert.Equal(t, strings.Repeat("a\n", 50), readBack(t, tc, "big.txt"))

	// A symlink's own size says nothing: the adapter checks the size of what it opened.
	if c, has := caps(tc.Sandbox); !has || c.Symlinks {
		ok(t, tc, tools.Bash, sh("ln -s big.txt link.txt"))
		fails(t, &mid, tools.Read, obj("path", "link.txt"), errs.FileTooLarge)
		fails(t, &mid, tools.Edit, obj("path", "link.txt", "patch", "@@ -1 +1 @@\n-a\n+b\n"), errs.FileTooLarge)
		big := *tc
		big.MaxOutputBytes = 100
		assert.Equal(t, strings.Repeat("a\n", 50), readBack(t, &big, "link.txt"), "at the limit through a link")
	}
}

func (s suite) testGrep(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "dir/a.txt", "content", "hello world\nbye\n"))
	ok(t, tc, tools.Write, obj("path", "dir/b.txt", "content", "nothing here\n"))
	ok(t, tc, tools.Write, obj("path", "dir/sub/c.txt", "content", "x\nsay hello -world\n"))

	res := ok(t, tc, tools.Grep, obj("pattern", "hello", "path", "dir"))
	assert.ElementsMatch(t, []string{"dir/a.txt:1:hello world", "dir/sub/c.txt:2:say hello -world"}, lines(res.Output))

	res = ok(t, tc, tools.Grep, obj("pattern", "hello"))
	assert.ElementsMatch(t, []string{"dir/a.txt:1:hello world", "dir/sub/c.txt:2:say hello -world"}, lines(res.Output))

	res = ok(t, tc, tools.Grep, obj("pattern", "-world", "path", "dir"))
	assert.Equal(t, []string{"dir/sub/c.txt:2:say hello -world"}, lines(res.Output))

	res = ok(t, tc, tools.Grep, obj("pattern", "--pre=cat"))
	assert.Equal(t, "", res.Output)

	res = ok(t, tc, tools.Grep, obj("pattern", "no such text", "path", "dir"))
	assert.Equal(t, "", res.Output)
	assert.Equal(t, "", res.Value)

	res = ok(t, tc, tools.Grep, obj("pattern", "bye", "path", "dir/a.txt"))
	assert.Equal(t, "2:bye\n", res.Output)

	if tc.RootDir != "" {
		abs := strings.TrimSuffix(tc.RootDir, "/") + "/dir"
		res = ok(t, tc, tools.Grep, obj("pattern", "hello", "path", abs))
		assert.ElementsMatch(t, []string{"dir/a.txt:1:hello world", "dir/sub/c.txt:2:say hello -world"}, lines(res.Output))
		if tc.RootDir != "/" {
			assert.NotContains(t, res.Output, tc.RootDir, "no host or container paths in grep output")
		}
	}
}

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func (s suite) testGrepErrors(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "a.txt", "content", "x\n"))
	e := fails(t, tc, tools.Grep, obj("pattern", "["), errs.GrepFailed)
	assert.NotEmpty(t, e.Details["stderr"])
	fails(t, tc, tools.Grep, obj("pattern", "x", "path", "missing-dir"), errs.GrepFailed)
}

func (s suite) testBashOutput(t *testing.T) {
	tc := s.env(t)
	res := ok(t, tc, tools.Bash, bashIn("echo", "hello", "world"))
	assert.Equal(t, "hello world\n", res.Output)
	br, isBash := res.Value.(tools.BashResult)
	require.True(t, isBash)
	assert.Equal(t, "hello world\n", br.Stdout)
	assert.Equal(t, "", br.Stderr)
	assert.Equal(t, 0, br.ExitCode)
	assert.False(t, br.Truncated)

	res = ok(t, tc, tools.Bash, sh("echo out; echo err >&2"))
	br = res.Value.(tools.BashResult)
	assert.Equal(t, "out\n", br.Stdout)
	assert.Equal(t, "err\n", br.Stderr)
	assert.Equal(t, "out\nerr\n", res.Output)

	// No shell: metacharacters in args are plain text.
	res = ok(t, tc, tools.Bash, bashIn("echo", "$HOME", "|", "; rm -rf /", "`id`"))
	assert.Equal(t, "$HOME | ; rm -rf / `id`\n", res.Output)

	// The JSON form carries the documented fields.
	b, err := json.Marshal(res.Value)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"output", "stdout", "stderr", "exitCode", "truncated", "enforced", "isolation"} {
		assert.Contains(t, m, k)
	}
}

func (s suite) testBashCommandFailed(t *testing.T) {
	tc := s.env(t)
	e := fails(t, tc, tools.Bash, sh("echo printed text; echo to stderr >&2; exit 7"), errs.CommandFailed)
	assert.Equal(t, 7, e.Details["exitCode"])
	assert.Equal(t, "printed text\n", e.Details["stdout"])
	assert.Equal(t, "to stderr\n", e.Details["stderr"])
	assert.Equal(t, "printed text\nto stderr\n", e.Details["output"])
	assert.Contains(t, e.Message(), "printed text", "the agent sees the output")
}

func (s suite) testBashCwd(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "subdir/here.txt", "content", "in subdir\n"))
	res := ok(t, tc, tools.Bash, obj("cmd", "cat", "args", []string{"here.txt"}, "opts", obj("cwd", "subdir")))
	assert.Equal(t, "in subdir\n", res.Output)
	ok(t, tc, tools.Bash, obj("cmd", "sh", "args", []string{"-c", "echo made > made.txt"}, "opts", obj("cwd", "subdir")))
	assert.Equal(t, "made\n", readBack(t, tc, "subdir/made.txt"))
	fails(t, tc, tools.Bash, obj("cmd", "echo", "opts", obj("cwd", "../")), errs.PathEscape)
	_, err := call(t, tc, tools.Bash, obj("cmd", "echo", "opts", obj("cwd", "missing")))
	require.Error(t, err)
	assert.Contains(t, []errs.Code{errs.NotFound, errs.ProcessFailed}, errs.CodeOf(err))
}

func (s suite) testBashEnv(t *testing.T) {
	tc := s.env(t)
	tc.Env = []string{"SANDBOXER_TOOLS_TEST=from-context"}
	res := ok(t, tc, tools.Bash, sh(`printf %s "$SANDBOXER_TOOLS_TEST"`))
	assert.Equal(t, "from-context", res.Output)
}

func (s suite) testBashTimeout(t *testing.T) {
	tc := s.env(t)
	// 2s, as in the conformance suite: time enough for the echo on a loaded machine, where
	// starting a command in a sandbox (gVisor's ptrace platform, a container exec) can take
	// several hundred ms.
	tc.Timeout = 2 * time.Second
	start := time.Now()
	e := fails(t, tc, tools.Bash, sh("echo partial; sleep 30"), errs.ProcessTimeout)
	assert.Less(t, time.Since(start), 20*time.Second)
	assert.Equal(t, "partial\n", e.Details["stdout"])
	output, _ := e.Details["output"].(string)
	assert.True(t, strings.HasPrefix(output, "partial\n"), "output %q", output) // a shell may add "Terminated" on stderr
}

func (s suite) testBashTruncation(t *testing.T) {
	tc := s.env(t)
	tc.MaxOutputBytes = 1000
	res := ok(t, tc, tools.Bash, sh(`i=0; while [ $i -lt 500 ]; do echo 0123456789; i=$((i+1)); done`))
	br := res.Value.(tools.BashResult)
	assert.True(t, br.Truncated)
	assert.Len(t, br.Stdout, 1000)
	assert.Equal(t, int64(5500-1000), br.StdoutDropped)
	assert.True(t, strings.HasPrefix(br.Stdout, "0123456789\n0123456789\n"))
}

func (s suite) testBashProcessFailed(t *testing.T) {
	tc := s.env(t)
	fails(t, tc, tools.Bash, bashIn("sandboxer-no-such-command"), errs.ProcessFailed)
}

func (s suite) testBashInvalidInput(t *testing.T) {
	tc := s.env(t)
	many := make([]string, tools.BashMaxArgs+1)
	for i := range many {
		many[i] = "a"
	}
	half := strings.Repeat("x", 4096)
	for name, in := range map[string]any{
		"empty cmd":              obj("cmd", ""),
		"whitespace cmd":         obj("cmd", " \t\n"),
		"cmd too long":           obj("cmd", strings.Repeat("e", tools.BashMaxCommandLength+1)),
		"129 args":               bashIn("echo", many...),
		"8193-char arg":          bashIn("echo", strings.Repeat("x", tools.BashMaxArgLength+1)),
		"cmd and args over 8192": bashIn("echo", half, half),
		"1025-char cwd":          obj("cmd", "echo", "opts", obj("cwd", strings.Repeat("d", tools.BashMaxCwdLength+1))),
		"args not strings":       `{"cmd":"echo","args":["a",1]}`,
		"unknown field":          `{"cmd":"echo","shell":true}`,
	} {
		t.Run(name, func(t *testing.T) {
			fails(t, tc, tools.Bash, in, errs.InvalidInput)
		})
	}
	// At the limits is fine.
	okArgs := make([]string, tools.BashMaxArgs)
	for i := range okArgs {
		okArgs[i] = "a"
	}
	ok(t, tc, tools.Bash, bashIn("echo", okArgs...))
	ok(t, tc, tools.Bash, bashIn("echo", strings.Repeat("x", tools.BashMaxCommandLength-len("echo "))))
	// Nothing ran for a rejected call.
	fails(t, tc, tools.Bash, bashIn("sh", "-c", "echo ran > ran.txt", strings.Repeat("x", tools.BashMaxArgLength+1)), errs.InvalidInput)
	_, err := call(t, tc, tools.Read, obj("path", "ran.txt"))
	require.ErrorIs(t, err, errs.NotFound)
}

func (s suite) testContextInvalid(t *testing.T) {
	tc := s.env(t)
	for name, mod := range map[string]func(c *tools.Context){
		"maxOutputBytes 0":      func(c *tools.Context) { c.MaxOutputBytes = 0 },
		"maxOutputBytes -1":     func(c *tools.Context) { c.MaxOutputBytes = -1 },
		"maxOutputBytes 11 MiB": func(c *tools.Context) { c.MaxOutputBytes = 11 << 20 },
		"timeout 0":             func(c *tools.Context) { c.Timeout = 0 },
		"timeout negative":      func(c *tools.Context) { c.Timeout = -time.Second },
		"timeout over 1h":       func(c *tools.Context) { c.Timeout = tools.BashMaxTimeout + time.Millisecond },
		"no sandbox":            func(c *tools.Context) { c.Sandbox = nil },
	} {
		t.Run(name, func(t *testing.T) {
			c := *tc
			mod(&c)
			for _, tool := range tools.Builtins() {
				fails(t, &c, tool, `{"cmd":"echo","path":"x","pattern":"x","content":"x","patch":"x"}`, errs.InvalidInput)
			}
			fails(t, &c, tools.Bash, bashIn("sh", "-c", "echo ran > ran.txt"), errs.InvalidInput)
		})
	}
	_, err := call(t, tc, tools.Read, obj("path", "ran.txt"))
	require.ErrorIs(t, err, errs.NotFound)
	// The bounds themselves are valid.
	c := *tc
	c.MaxOutputBytes, c.Timeout = tools.BashMaxOutputBytes, tools.BashMaxTimeout
	ok(t, &c, tools.Bash, bashIn("echo"))
	c.MaxOutputBytes, c.Timeout = 1, 5*time.Second // small but not racing a loaded machine
	ok(t, &c, tools.Bash, bashIn("true"))
}

// NetworkDeniedCases are the argvs that must be refused while the network is off, with the code.
var NetworkDeniedCases = []struct {
	Argv []string
	Code errs.Code
}{
	{[]string{"curl", "https://example.com"}, errs.NetworkDisabled},
	{[]string{"git", "fetch"}, errs.GitRemoteDisabled},
	{[]string{"git", "-C", "x", "--no-pager", "push"}, errs.GitRemoteDisabled},
	{[]string{"sh", "-c", "curl https://example.com"}, errs.NetworkDisabled},
	{[]string{"bash", "-lc", "cd /tmp && npm install"}, errs.NetworkDisabled},
	{[]string{"sh", "-c", "echo $(wget -qO- https://example.com)"}, errs.NetworkDisabled},
	{[]string{"env", "curl", "example.com"}, errs.NetworkDisabled},
	{[]string{"xargs", "curl"}, errs.NetworkDisabled},
	{[]string{"sh", "-c", "c=curl; $c example.com"}, errs.NetworkDisabled},
	{[]string{"python3", "-c", "import urllib.request; urllib.request.urlopen('https://example.com')"}, errs.NetworkDisabled},
	{[]string{"curl", "http://localhost", "example.com"}, errs.NetworkDisabled},
	{[]string{"/usr/bin/wget", "example.com"}, errs.NetworkDisabled},
	{[]string{"git", "clone", "https://example.com/repo.git"}, ""},
}

func (s suite) testNetworkDenied(t *testing.T) {
	tc := s.env(t)
	if c, known := caps(tc.Sandbox); known && c.Network == adapter.NetVirtual {
		// The sandbox has no network at all: command inspection does not apply and refuses
		// nothing (the commands fail on their own, or run without reaching anything), and the
		// result says so.
		for _, c := range NetworkDeniedCases {
			_, err := call(t, tc, tools.Bash, bashIn(c.Argv[0], c.Argv[1:]...))
			assert.NotContains(t, []errs.Code{errs.NetworkDisabled, errs.GitRemoteDisabled}, errs.CodeOf(err), "%q", c.Argv)
		}
		res := ok(t, tc, tools.Bash, sh("c=curl; echo $c https://example.com"))
		br := res.Value.(tools.BashResult)
		assert.Equal(t, tools.PolicyNoNetwork, br.NetworkPolicy)
		assert.True(t, br.Enforced, "a sandbox without a network enforces its absence")
		return
	}
	res := ok(t, tc, tools.Bash, bashIn("echo", "hi"))
	assert.Equal(t, tools.PolicyInspected, res.Value.(tools.BashResult).NetworkPolicy)
	for _, c := range NetworkDeniedCases {
		t.Run(strings.Join(c.Argv, " "), func(t *testing.T) {
			_, err := call(t, tc, tools.Bash, bashIn(c.Argv[0], c.Argv[1:]...))
			require.Error(t, err)
			code := errs.CodeOf(err)
			if c.Code != "" {
				assert.Equal(t, c.Code, code, "error: %v", err)
			} else {
				assert.Contains(t, []errs.Code{errs.NetworkDisabled, errs.GitRemoteDisabled}, code, "error: %v", err)
			}
		})
	}
	// A denied command does not run at all, not even the harmless part before it.
	fails(t, tc, tools.Bash, sh("echo ran > ran.txt; curl https://example.com"), errs.NetworkDisabled)
	_, err := call(t, tc, tools.Read, obj("path", "ran.txt"))
	require.ErrorIs(t, err, errs.NotFound)
}

func (s suite) testNetworkAllowed(t *testing.T) {
	tc := s.env(t)
	for _, c := range []struct {
		argv []string
		out  string
	}{
		{[]string{"echo", "bundle.js"}, "bundle.js\n"},
		{[]string{"echo", "please run npm install"}, "please run npm install\n"},
		{[]string{"echo", "http://localhost:3000"}, "http://localhost:3000\n"},
		{[]string{"sh", "-c", "echo curl is a word | cat"}, "curl is a word\n"},
	} {
		res := ok(t, tc, tools.Bash, bashIn(c.argv[0], c.argv[1:]...))
		assert.Equal(t, c.out, res.Output)
	}

	// git commit and git status are local: they pass the policy. They need git in the sandbox.
	tc.Env = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1"}
	if _, err := call(t, tc, tools.Bash, bashIn("git", "--version")); errs.CodeOf(err) == errs.ProcessFailed {
		for _, argv := range [][]string{{"git", "commit", "-m", "fetch upstream"}, {"git", "status"}} {
			_, err := call(t, tc, tools.Bash, bashIn(argv[0], argv[1:]...))
			assert.NotContains(t, []errs.Code{errs.NetworkDisabled, errs.GitRemoteDisabled}, errs.CodeOf(err))
		}
		t.Skip("no git in the sandbox: git commit/status only checked against the policy")
	}
	ok(t, tc, tools.Bash, bashIn("git", "init", "-q"))
	ok(t, tc, tools.Write, obj("path", "f.txt", "content", "x\n"))
	ok(t, tc, tools.Bash, bashIn("git", "add", "f.txt"))
	ok(t, tc, tools.Bash, bashIn("git", "commit", "-q", "-m", "fetch upstream"))
	ok(t, tc, tools.Bash, bashIn("git", "status"))
	res := ok(t, tc, tools.Bash, bashIn("git", "log", "--format=%s"))
	assert.Equal(t, "fetch upstream\n", res.Output)
}

func (s suite) testAllowNetworkSkipsPolicy(t *testing.T) {
	tc := s.env(t)
	if c, known := caps(tc.Sandbox); !known || c.Network != adapter.NetVirtual {
		fails(t, tc, tools.Bash, bashIn("echo", "https://example.com"), errs.NetworkDisabled)
	}
	tc.AllowNetwork = true
	res := ok(t, tc, tools.Bash, bashIn("echo", "https://example.com"))
	assert.Equal(t, "https://example.com\n", res.Output)
	br := res.Value.(tools.BashResult)
	assert.Equal(t, br.Isolation.Network, br.Enforced, "enforced reports the adapter's network isolation")
	assert.Equal(t, tools.PolicyOff, br.NetworkPolicy)
}

func (s suite) testStoppedSandbox(t *testing.T) {
	tc := s.env(t)
	ok(t, tc, tools.Write, obj("path", "a.txt", "content", "x"))
	require.NoError(t, tc.Sandbox.Stop(ctxT(t)))
	fails(t, tc, tools.Read, obj("path", "a.txt"), errs.SandboxUnavailable)
	fails(t, tc, tools.Write, obj("path", "a.txt", "content", "y"), errs.SandboxUnavailable)
	fails(t, tc, tools.Bash, bashIn("echo"), errs.SandboxUnavailable)
	fails(t, tc, tools.Grep, obj("pattern", "x"), errs.SandboxUnavailable)
}
