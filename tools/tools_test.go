package tools_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/tools"
	"github.com/sandboxer/sandboxer/tools/toolstest"
)

func newLocal(t *testing.T) adapter.Sandbox {
	sb, err := local.New(local.Config{Root: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

func TestToolsOverLocal(t *testing.T) {
	toolstest.Run(t, newLocal)
}

// A symlink inside the root that leads outside, to a directory holding a secret, is refused by
// every tool; host paths never appear in grep output.
func TestLocalSymlinkOut(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("top secret\n"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "filelink")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "in"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "in", "f.txt"), []byte("inside secret\n"), 0o600))
	require.NoError(t, os.Symlink("in", filepath.Join(root, "inlink")))
	require.NoError(t, os.Symlink("in/f.txt", filepath.Join(root, "infile")))
	sb, err := local.New(local.Config{Root: root})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	tc := tools.NewContext(sb)
	ctx := context.Background()

	for _, p := range []string{"link/secret", "filelink", "link", filepath.Join(outside, "secret")} {
		_, err := tools.Read.Call(ctx, mustJSON(t, map[string]any{"path": p}), tc)
		assert.ErrorIs(t, err, errs.PathEscape, p)
		_, err = tools.Grep.Call(ctx, mustJSON(t, map[string]any{"pattern": "secret", "path": p}), tc)
		assert.ErrorIs(t, err, errs.PathEscape, p)
		_, err = tools.Write.Call(ctx, mustJSON(t, map[string]any{"path": p, "content": "x"}), tc)
		assert.ErrorIs(t, err, errs.PathEscape, p)
	}
	_, err = tools.Bash.Call(ctx, mustJSON(t, map[string]any{"cmd": "cat", "args": []string{"secret"}, "opts": map[string]any{"cwd": "link"}}), tc)
	assert.ErrorIs(t, err, errs.PathEscape)
	data, err := os.ReadFile(filepath.Join(outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "top secret\n", string(data))

	// Links that stay inside are fine (a final symlink to a directory cannot be verified by grep
	// through the Sandbox interface and is refused: see docs/tools.md).
	res, err := tools.Read.Call(ctx, mustJSON(t, map[string]any{"path": "inlink/f.txt"}), tc)
	require.NoError(t, err)
	assert.Equal(t, "inside secret\n", res.Output)
	res, err = tools.Grep.Call(ctx, mustJSON(t, map[string]any{"pattern": "secret", "path": "infile"}), tc)
	require.NoError(t, err)
	assert.Equal(t, "1:inside secret\n", res.Output)
	res, err = tools.Grep.Call(ctx, mustJSON(t, map[string]any{"pattern": "secret"}), tc)
	require.NoError(t, err)
	assert.Equal(t, "in/f.txt:1:inside secret\n", res.Output, "rg does not follow links while walking")
	assert.NotContains(t, res.Output, root)
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

type orderIn struct {
	SKU      string `json:"sku" jsonschema:"the product"`
	Quantity int    `json:"quantity,omitempty"`
}

type orderOut struct {
	Order string `json:"order"`
	Key   string `json:"key"`
}

func TestDefine(t *testing.T) {
	t.Parallel()
	var seen []*tools.Context
	var mu sync.Mutex
	tool, err := tools.Define(tools.Definition[orderIn, orderOut]{
		Name:       "shop.place_order",
		SideEffect: true,
		Execute: func(ctx context.Context, in orderIn, tc *tools.Context) (orderOut, error) {
			mu.Lock()
			seen = append(seen, tc)
			mu.Unlock()
			if in.SKU == "fail" {
				return orderOut{}, errors.New("boom")
			}
			if in.SKU == "coded" {
				return orderOut{}, errs.New(errs.NotFound, "", "", "no such sku")
			}
			return orderOut{Order: in.SKU, Key: tc.IdempotencyKey}, nil
		},
	})
	require.NoError(t, err)
	assert.Equal(t, "shop.place_order", tool.Name())
	assert.Equal(t, "shop.place_order", tool.Description(), "description defaults to the name")
	m := tools.Metadata(tool)
	require.NotNil(t, m)
	assert.True(t, m.SideEffect)
	assert.False(t, m.Idempotent, "idempotent defaults to !sideEffect")

	var schema map[string]any
	require.NoError(t, json.Unmarshal(tool.InputSchema(), &schema))
	assert.Equal(t, "object", schema["type"])
	assert.Equal(t, []any{"sku"}, schema["required"])
	assert.Equal(t, false, schema["additionalProperties"])
	props := schema["properties"].(map[string]any)
	assert.Equal(t, "the product", props["sku"].(map[string]any)["description"])

	tc := tools.NewContext(newLocal(t))
	tc.RunID, tc.NodeID, tc.Iteration, tc.Seq = "run", "node", 2, 5
	res, err := tool.Call(context.Background(), json.RawMessage(`{"sku":"abc","quantity":2}`), tc)
	require.NoError(t, err)
	want := tools.IdempotencyKey("run", "node", 2, 5)
	assert.Equal(t, orderOut{Order: "abc", Key: want}, res.Value)
	assert.JSONEq(t, `{"order":"abc","key":"`+want+`"}`, res.Output)
	require.Len(t, seen, 1)
	assert.Equal(t, "shop.place_order", seen[0].ToolName)
	assert.Empty(t, tc.ToolName, "the caller's context is not modified")
	assert.Empty(t, tc.IdempotencyKey)

	for _, in := range []string{`{"quantity":1}`, `{"sku":1}`, `{"sku":"a","x":1}`, `{"sku":"a"}x`, `[1]`} {
		_, err := tool.Call(context.Background(), json.RawMessage(in), tc)
		assert.ErrorIs(t, err, errs.InvalidInput, in)
	}
	_, err = tool.Call(context.Background(), json.RawMessage(`{"sku":"fail"}`), tc)
	assert.Equal(t, errs.Internal, errs.CodeOf(err))
	assert.Equal(t, "shop.place_order", errs.As(err).Op)
	_, err = tool.Call(context.Background(), json.RawMessage(`{"sku":"coded"}`), tc)
	assert.ErrorIs(t, err, errs.NotFound)

	// An explicit key wins.
	tc.IdempotencyKey = "caller-key"
	res, err = tool.Call(context.Background(), json.RawMessage(`{"sku":"abc"}`), tc)
	require.NoError(t, err)
	assert.Equal(t, "caller-key", res.Value.(orderOut).Key)
}

func TestDefineOptions(t *testing.T) {
	t.Parallel()
	exec := func(context.Context, orderIn, *tools.Context) (string, error) { return "done", nil }
	read := tools.MustDefine(tools.Definition[orderIn, string]{Name: "r", Description: "reads", Execute: exec})
	m := tools.Metadata(read)
	assert.Equal(t, "reads", m.Description)
	assert.False(t, m.SideEffect)
	assert.True(t, m.Idempotent)

	upsert := tools.MustDefine(tools.Definition[orderIn, string]{Name: "u", SideEffect: true, Idempotent: new(true), Execute: exec})
	assert.True(t, tools.Metadata(upsert).Idempotent)

	_, err := tools.Define(tools.Definition[orderIn, string]{Name: "", Execute: exec})
	assert.Error(t, err)
	_, err = tools.Define(tools.Definition[orderIn, string]{Name: "x"})
	assert.Error(t, err)
	_, err = tools.Define(tools.Definition[string, string]{Name: "x", Execute: func(context.Context, string, *tools.Context) (string, error) { return "", nil }})
	assert.Error(t, err, "input must be an object")
}

func TestMetadataNilForNonTools(t *testing.T) {
	t.Parallel()
	var nilTool *tools.Tool
	for _, v := range []any{nil, nilTool, "read", 42, struct{}{}, &struct{ Name string }{"read"}, tools.Meta{Name: "read"}, func() {}} {
		assert.Nil(t, tools.Metadata(v), "%T", v)
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	want := map[string][2]bool{ // sideEffect, idempotent
		"read": {false, true}, "write": {true, false}, "edit": {true, false},
		"grep": {false, true}, "bash": {true, false},
		"process_output": {false, true}, "process_input": {true, false}, "process_kill": {true, true}, "process_list": {false, true},
	}
	names := []string{}
	for _, tool := range tools.All() {
		names = append(names, tool.Name())
		m := tools.Metadata(tool)
		require.NotNil(t, m)
		assert.Equal(t, want[tool.Name()], [2]bool{m.SideEffect, m.Idempotent}, tool.Name())
		assert.NotEmpty(t, tool.Description())
		assert.Same(t, tool, tools.Lookup(tool.Name()))
		var schema map[string]any
		require.NoError(t, json.Unmarshal(tool.InputSchema(), &schema), tool.Name())
		assert.Equal(t, "object", schema["type"])
	}
	assert.Equal(t, []string{"read", "write", "edit", "grep", "bash", "process_output", "process_input", "process_kill", "process_list"}, names)
	assert.Len(t, tools.Builtins(), 5, "the five built-ins of the spec")
	assert.Nil(t, tools.Lookup("curl"))

	var bash map[string]any
	require.NoError(t, json.Unmarshal(tools.Bash.InputSchema(), &bash))
	assert.Equal(t, []any{"cmd"}, bash["required"])
	var grep map[string]any
	require.NoError(t, json.Unmarshal(tools.Grep.InputSchema(), &grep))
	assert.Equal(t, []any{"pattern"}, grep["required"])
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	base := tools.NewContext(newLocal(t))
	base.RunID, base.NodeID, base.Iteration = "run-1", "node-a", 3

	// Same position, different attempts: same key (retries and resumes).
	a1, a2 := *base, *base
	a1.Attempt, a2.Attempt = 1, 2
	a1.Seq, a2.Seq = 4, 4
	assert.Equal(t, a1.Key(), a2.Key())

	// Different calls of one iteration: different keys.
	s := tools.NewSession(base)
	keys := map[string]int{}
	for i := 1; i <= 100; i++ {
		c := s.Next()
		assert.Equal(t, i, c.Seq)
		keys[c.Key()] = i
	}
	assert.Len(t, keys, 100)

	// A resumed session (a new process) derives the same keys for the same positions.
	s2 := tools.NewSession(base)
	for i := 1; i <= 100; i++ {
		assert.Equal(t, i, keys[s2.Next().Key()])
	}

	// Any part of the position changes the key; ambiguous joins do not collide.
	k := tools.IdempotencyKey("run-1", "node-a", 3, 4)
	for _, other := range []string{
		tools.IdempotencyKey("run-2", "node-a", 3, 4),
		tools.IdempotencyKey("run-1", "node-b", 3, 4),
		tools.IdempotencyKey("run-1", "node-a", 4, 4),
		tools.IdempotencyKey("run-1", "node-a", 3, 5),
		tools.IdempotencyKey("run-1:node-a", "", 3, 4),
	} {
		assert.NotEqual(t, k, other)
	}
	assert.Equal(t, k, tools.IdempotencyKey("run-1", "node-a", 3, 4), "deterministic")
	assert.Regexp(t, `^sbx-[0-9a-f]{32}$`, k)

	// An explicit key on the base is not shared by every call of a session.
	base.IdempotencyKey = "shared"
	assert.NotEqual(t, "shared", tools.NewSession(base).Next().Key())
}

func TestSessionConcurrentSeq(t *testing.T) {
	t.Parallel()
	s := tools.NewSession(tools.NewContext(newLocal(t)))
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				c := s.Next()
				mu.Lock()
				seen[c.Seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, 400)
}

func TestSessionCall(t *testing.T) {
	t.Parallel()
	s := tools.NewSession(tools.NewContext(newLocal(t)))
	c1, res, err := s.Call(context.Background(), tools.Write, json.RawMessage(`{"path":"a","content":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Output)
	c2, res, err := s.Call(context.Background(), tools.Read, json.RawMessage(`{"path":"a"}`))
	require.NoError(t, err)
	assert.Equal(t, "x", res.Output)
	assert.Equal(t, 1, c1.Seq)
	assert.Equal(t, 2, c2.Seq)
	assert.NotEqual(t, c1.Key(), c2.Key())
}

func TestJournalRedaction(t *testing.T) {
	t.Parallel()
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	secret := "the secret content\n"

	out := tools.Metadata(tools.Write).Redact(json.RawMessage(`{"path":"a.txt","content":` + string(mustJSON(t, secret)) + `}`))
	assert.NotContains(t, string(out), "secret content")
	assert.JSONEq(t, `{"path":"a.txt","content":{"sha256":"`+sum(secret)+`","bytes":19}}`, string(out))

	patch := "@@ -1 +1 @@\n-password=1\n+password=2\n"
	out = tools.Metadata(tools.Edit).Redact(mustJSON(t, map[string]any{"path": "b", "patch": patch}))
	assert.NotContains(t, string(out), "password")
	assert.JSONEq(t, `{"path":"b","patch":{"sha256":"`+sum(patch)+`","bytes":`+itoa(len(patch))+`}}`, string(out))

	out = tools.Metadata(tools.ProcessInput).Redact(mustJSON(t, map[string]any{"process": "p1", "data": "hunter2\n"}))
	assert.NotContains(t, string(out), "hunter2")
	assert.JSONEq(t, `{"process":"p1","data":{"sha256":"`+sum("hunter2\n")+`","bytes":8}}`, string(out))

	// Hostile inputs never leak: not an object, trailing data, a non-string content.
	for _, in := range []string{`"secret content"`, `{"content":"secret content"} trailing`, `not json secret content`, `[{"content":"secret content"}]`} {
		out := tools.Metadata(tools.Write).Redact(json.RawMessage(in))
		assert.NotContains(t, string(out), "secret content", in)
		assert.True(t, json.Valid(out), in)
	}
	out = tools.Metadata(tools.Write).Redact(json.RawMessage(`{"path":"a","content":{"nested":"secret content"}}`))
	assert.NotContains(t, string(out), "secret content")

	// Tools without redaction keep the input.
	in := json.RawMessage(`{"path":"a"}`)
	assert.Equal(t, in, tools.Metadata(tools.Read).Redact(in))
	assert.Equal(t, []string{"content"}, tools.Metadata(tools.Write).RedactFields)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FuzzCallInput: any input to read, write and grep gives a result or an *errs.Error with a code;
// never a panic, never an uncoded error. (bash is left out: it would run whatever the fuzzer finds.)
func FuzzCallInput(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"path":"a","content":"x"}`, `{"pattern":"x","path":"."}`, `{"path":5}`, `[`, `{"path":"../x"}`, `{"pattern":"[","path":"/"}`} {
		f.Add(s)
	}
	sb, err := local.New(local.Config{Root: f.TempDir()})
	require.NoError(f, err)
	f.Cleanup(func() { _ = sb.Stop(context.Background()) })
	tc := tools.NewContext(sb)
	tc.MaxOutputBytes = 4096
	f.Fuzz(func(t *testing.T, in string) {
		for _, tool := range []*tools.Tool{tools.Read, tools.Write, tools.Grep} {
			res, err := tool.Call(context.Background(), json.RawMessage(in), tc)
			if err != nil {
				var e *errs.Error
				require.True(t, errors.As(err, &e))
				require.NotEmpty(t, e.Code)
				require.Nil(t, res)
			} else {
				require.NotNil(t, res)
			}
		}
	})
}
