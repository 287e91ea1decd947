// Package tools owns sandboxer's tool layer: Define (the Go form of defineTool), the per-call tool
// Context with its idempotency key, and the five built-in tools read, write, edit, grep and bash,
// each running over any adapter.Sandbox with the JSON contract of SPEC.md section 3.
//
// The same *Tool serves the Go API, the CLI and the MCP server: it has a name, a description, a
// JSON Schema for its input and Metadata (sideEffect, idempotent, journal redaction), and Call takes
// the raw JSON input and a *Context. Every error Call returns is an *errs.Error whose Code is one of
// the wire codes of SPEC.md (match with errors.Is or errs.CodeOf); Details carry structured data
// where documented (the output of a failed command, the hunk that did not apply).
//
// The diff engine of edit lives in tools/patch; tools/toolstest is the tool suite any adapter can
// run.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandboxer/sandboxer/errs"
)

// Tool is a defined tool: built-in (Read, Write, Edit, Grep, Bash) or made with Define. A Tool is
// immutable and safe for concurrent use.
type Tool struct {
	meta Meta
	// input is the input's JSON Schema and its required fields, made once (at Define, or at the
	// first use for a built-in, so that a process that calls one tool pays for no other's).
	input func() (inputSchema, error)
	// pathField names the input field whose absence or wrong type is errs.PathInvalid rather than
	// errs.InvalidInput (built-ins only).
	pathField string
	run       func(ctx context.Context, input json.RawMessage, tc *Context) (*Result, error)
}

// Meta is a tool's metadata, as recorded in the journal and shown by the CLI and MCP.
type Meta struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// SideEffect: the tool changes state outside itself (files, processes, external systems).
	SideEffect bool `json:"sideEffect"`
	// Idempotent: running it again with the same input is safe. With SideEffect && !Idempotent,
	// retries get the resume warning (see package journal).
	Idempotent bool `json:"idempotent"`
	// RedactFields lists top-level string fields of the input that the journal keeps only as
	// {"sha256":"<hex>","bytes":N} ("content" for write, "patch" for edit).
	RedactFields []string `json:"redactFields,omitempty"`
}

// Redact returns input as the journal may store it: each of m.RedactFields replaced by
// {"sha256":"<hex of the string's SHA-256>","bytes":<its length in bytes>}, other fields as given.
// Input that is not a JSON object is replaced by {"input":{"sha256":...,"bytes":...}} so nothing
// sensitive survives by mistake. With no RedactFields the input is returned unchanged.
func (m *Meta) Redact(input json.RawMessage) json.RawMessage {
	if m == nil || len(m.RedactFields) == 0 {
		return input
	}
	return redact(input, m.RedactFields)
}

// Result is what a successful call returns.
type Result struct {
	// Output is the text the agent reads: the file content (read), "ok" (write, edit), rg's lines
	// (grep), the combined output (bash), or the JSON text of a defined tool's non-string result.
	Output string
	// Value is the structured result for JSON wires (CLI "output", MCP structured content): a
	// string for read, write, edit and grep, a BashResult for bash, the Execute result for a defined
	// tool.
	Value any
}

// Texter is implemented by tool results that have a text form for the agent other than their
// JSON encoding (BashResult: its combined output).
type Texter interface {
	Text() string
}

// Definition describes a tool to Define. In is the input type: a struct whose exported fields with
// json tags become the input schema (fields without omitempty/omitzero are required; a
// `jsonschema:"..."` tag is the field's description). Out is the result: a string, a Texter, or any
// JSON-encodable value.
type Definition[In, Out any] struct {
	Name        string // required; the tool's key
	Description string // defaults to Name
	SideEffect  bool
	// Idempotent defaults to !SideEffect when nil (use new(false) or new(true) to set it).
	Idempotent *bool
	// RedactFields: see Meta.RedactFields.
	RedactFields []string
	// Execute runs one call with the decoded input. tc is a per-call copy with the defaults filled
	// in and tc.IdempotencyKey set. An error that is not an *errs.Error becomes errs.Internal.
	Execute func(ctx context.Context, args In, tc *Context) (Out, error)
}

// Define makes a Tool from d. Its input is decoded strictly: unknown fields, wrong types, missing
// required fields and trailing data are errs.InvalidInput, before Execute runs. It fails when Name
// is empty, Execute is nil or In has no JSON Schema (it must be a struct).
func Define[In, Out any](d Definition[In, Out]) (*Tool, error) {
	if strings.TrimSpace(d.Name) == "" {
		return nil, errors.New("tools: Define: empty name")
	}
	if d.Execute == nil {
		return nil, fmt.Errorf("tools: Define %s: nil Execute", d.Name)
	}
	t := define(d)
	if _, err := t.input(); err != nil {
		return nil, err
	}
	return t, nil
}

// inputSchema is a tool's input schema (JSON) and the fields it requires.
type inputSchema struct {
	schema   json.RawMessage
	required []string
}

// schemaFor makes the input schema of the tool name from In.
func schemaFor[In any](name string) (inputSchema, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return inputSchema{}, fmt.Errorf("tools: Define %s: %w", name, err)
	}
	if s.Type != "object" {
		return inputSchema{}, fmt.Errorf("tools: Define %s: input type must be a struct, got schema type %q", name, s.Type)
	}
	if s.Description == "" {
		s.Description = "Input of " + name
	}
	schema, err := json.Marshal(s)
	if err != nil {
		return inputSchema{}, fmt.Errorf("tools: Define %s: %w", name, err)
	}
	return inputSchema{schema: schema, required: slices.Clone(s.Required)}, nil
}

// define makes the Tool of a checked d; its schema is made at its first use.
func define[In, Out any](d Definition[In, Out]) *Tool {
	t := &Tool{
		meta: Meta{
			Name:         d.Name,
			Description:  d.Description,
			SideEffect:   d.SideEffect,
			Idempotent:   !d.SideEffect,
			RedactFields: slices.Clone(d.RedactFields),
		},
		input: sync.OnceValues(func() (inputSchema, error) { return schemaFor[In](d.Name) }),
	}
	if t.meta.Description == "" {
		t.meta.Description = d.Name
	}
	if d.Idempotent != nil {
		t.meta.Idempotent = *d.Idempotent
	}
	exec := d.Execute
	t.run = func(ctx context.Context, input json.RawMessage, tc *Context) (*Result, error) {
		var args In
		if err := t.decode(input, &args); err != nil {
			return nil, err
		}
		out, err := exec(ctx, args, tc)
		if err != nil {
			return nil, err
		}
		return newResult(out)
	}
	return t
}

// MustDefine is Define for package-level tools: it panics where Define fails.
func MustDefine[In, Out any](d Definition[In, Out]) *Tool {
	t, err := Define(d)
	if err != nil {
		panic(err)
	}
	return t
}

// Metadata returns the metadata of a tool made by Define (the built-ins included) and nil for
// anything else, a nil *Tool included.
func Metadata(v any) *Meta {
	t, ok := v.(*Tool)
	if !ok || t == nil {
		return nil
	}
	return t.Metadata()
}

// Name is the tool's key ("read", "bash", ...).
func (t *Tool) Name() string { return t.meta.Name }

// Description is the text the agent sees.
func (t *Tool) Description() string { return t.meta.Description }

// InputSchema is the JSON Schema (draft 2020-12) of the tool's input object. The caller must not
// modify it.
func (t *Tool) InputSchema() json.RawMessage {
	in, _ := t.input() // Define checked it (a built-in's is checked by the tests)
	return in.schema
}

// Metadata returns a copy of the tool's metadata.
func (t *Tool) Metadata() *Meta {
	m := t.meta
	m.RedactFields = slices.Clone(t.meta.RedactFields)
	return &m
}

// Call runs one call of the tool with input (a JSON object; empty means {}) in the sandbox of tc.
//
// tc is not modified: Call works on a copy with ToolName set, RootDir taken from the sandbox's
// capabilities when empty, and IdempotencyKey set to tc.Key(). tc is validated first (see
// Context.Validate), then the input is decoded strictly, then the tool runs.
//
// The error is always an *errs.Error (or nil) whose Op is the tool name: errs.InvalidInput for a bad
// tc or input, the codes of SPEC.md section 3 otherwise, errs.Internal for anything unexpected. A
// context cancellation keeps its cause, so errors.Is(err, context.Canceled) works.
func (t *Tool) Call(ctx context.Context, input json.RawMessage, tc *Context) (*Result, error) {
	if tc == nil {
		return nil, errs.New(errs.InvalidInput, t.meta.Name, "", "tool context is nil")
	}
	if err := tc.Validate(); err != nil {
		return nil, withOp(err, t.meta.Name)
	}
	c := tc.forCall(t.meta.Name)
	res, err := t.run(ctx, input, c)
	if err != nil {
		return nil, withOp(err, t.meta.Name)
	}
	return res, nil
}

func withOp(err error, op string) error {
	e := errs.As(err)
	if e.Op == "" {
		e.Op = op
	}
	return e
}

func newResult(out any) (*Result, error) {
	switch v := out.(type) {
	case string:
		return &Result{Output: v, Value: v}, nil
	case Texter:
		return &Result{Output: v.Text(), Value: v}, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "", "", fmt.Errorf("encode result: %w", err))
	}
	return &Result{Output: string(b), Value: out}, nil
}

// decode reads input into dst strictly. Errors: errs.InvalidInput (not an object, syntax, unknown
// field, wrong type, missing required field, trailing data) or errs.PathInvalid for the path field.
func (t *Tool) decode(input json.RawMessage, dst any) error {
	in := bytes.TrimSpace(input)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		in = []byte("{}")
	}
	if in[0] != '{' {
		return errs.New(errs.InvalidInput, "", "", "input must be a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(in, &fields); err != nil {
		return &errs.Error{Code: errs.InvalidInput, Msg: "input is not valid JSON", Err: err}
	}
	is, _ := t.input()
	for _, name := range is.required {
		if _, ok := fields[name]; !ok {
			return t.fieldError(name, "missing required field %q", name)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "input"
			}
			return t.fieldError(strings.SplitN(field, ".", 2)[0], "field %q must be %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return &errs.Error{Code: errs.InvalidInput, Msg: "invalid input", Err: err}
	}
	if dec.More() {
		return errs.New(errs.InvalidInput, "", "", "trailing data after the input object")
	}
	return nil
}

func (t *Tool) fieldError(field, format string, args ...any) error {
	code := errs.InvalidInput
	if t.pathField != "" && field == t.pathField {
		code = errs.PathInvalid
	}
	e := errs.New(code, "", "", format, args...)
	e.Details = map[string]any{"field": field}
	return e
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a number"
}
