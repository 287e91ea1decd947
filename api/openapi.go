package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandboxer/sandboxer/adapter"
)

// Route is one endpoint of the API: the source of api/openapi.json (GenerateOpenAPI) and of the
// test that checks the server routes exactly these.
type Route struct {
	Method, Path, Summary string
	// Request is the JSON body's type (nil: none); Binary: a raw body.
	Request reflect.Type
	// Response is the success body's type (nil: none); Binary: raw bytes; NDJSON lines of
	// the type when Stream.
	Response reflect.Type
	Status   int
	Stream   bool     // the answer may be NDJSON (application/x-ndjson) lines of Response
	Query    []string // query parameters
	Headers  []string // request headers beyond Authorization
	Upgrade  bool     // the request upgrades to a raw tcp stream (101)
	NoAuth   bool
}

// Binary marks a raw body (application/octet-stream).
var Binary = reflect.TypeFor[[]byte]()

// Tool is any tool's input and reply (docs/tools.md): a JSON object.
type Tool map[string]any

func t[T any]() reflect.Type { return reflect.TypeFor[T]() }

// Routes are the API's endpoints.
var Routes = []Route{
	{Method: "GET", Path: "/v1/health", Summary: "liveness, version and adapters (no token needed)", Response: t[Health](), Status: 200, NoAuth: true},
	{Method: "POST", Path: "/v1/sandboxes", Summary: "create a sandbox", Request: t[CreateRequest](), Response: t[Sandbox](), Status: 201},
	{Method: "GET", Path: "/v1/sandboxes", Summary: "the token's sandboxes", Response: t[SandboxList](), Status: 200},
	{Method: "GET", Path: "/v1/sandboxes/{id}", Summary: "one sandbox", Response: t[Sandbox](), Status: 200},
	{Method: "DELETE", Path: "/v1/sandboxes/{id}", Summary: "remove a sandbox (its commands are killed)", Status: 204},
	{Method: "POST", Path: "/v1/sandboxes/{id}/extend", Summary: "set the remaining lifetime", Request: t[ExtendRequest](), Response: t[Sandbox](), Status: 200},
	{Method: "POST", Path: "/v1/sandboxes/{id}/pause", Summary: "freeze the sandbox's processes (docker, oci); commands are refused until resume", Response: t[Sandbox](), Status: 200},
	{Method: "POST", Path: "/v1/sandboxes/{id}/resume", Summary: "let a paused sandbox's processes go on", Response: t[Sandbox](), Status: 200},
	{Method: "POST", Path: "/v1/sandboxes/{id}/snapshots", Summary: "take a file system snapshot of the workspace (also of a paused sandbox)", Request: t[SnapshotRequest](), Response: t[Snapshot](), Status: 201},
	{Method: "POST", Path: "/v1/sandboxes/{id}/restore", Summary: "restore a snapshot into the workspace, verified", Request: t[RestoreRequest](), Response: t[Restored](), Status: 200},
	{Method: "GET", Path: "/v1/snapshots", Summary: "the token's snapshots, oldest first", Response: t[SnapshotList](), Status: 200, Query: []string{"prefix", "source"}},
	{Method: "GET", Path: "/v1/snapshots/{name}", Summary: "one snapshot", Response: t[Snapshot](), Status: 200},
	{Method: "DELETE", Path: "/v1/snapshots/{name}", Summary: "delete a snapshot (blobs no other snapshot uses are freed)", Status: 204},
	{Method: "POST", Path: "/v1/sandboxes/{id}/fork", Summary: "a new sandbox from a copy of the workspace", Request: t[ExtendRequest](), Response: t[Sandbox](), Status: 201},
	{Method: "POST", Path: "/v1/sandboxes/{id}/tools/{tool}", Summary: "a tool call (read, write, edit, grep, bash, process_*), journaled; the reply is 200 whether ok or not",
		Request: t[Tool](), Response: t[Tool](), Status: 200, Headers: []string{HeaderRunID, HeaderNodeID, HeaderIteration, HeaderAttempt, HeaderIdempotencyKey}},
	{Method: "POST", Path: "/v1/sandboxes/{id}/exec", Summary: "run a command and wait for it, or stream its output (stream: true)", Request: t[ExecRequest](), Response: t[ExecResult](), Status: 200, Stream: true},
	{Method: "POST", Path: "/v1/sandboxes/{id}/processes", Summary: "start a background process", Request: t[ExecRequest](), Response: t[adapter.ProcessState](), Status: 201},
	{Method: "GET", Path: "/v1/sandboxes/{id}/processes", Summary: "the sandbox's processes", Response: t[ProcessList](), Status: 200},
	{Method: "GET", Path: "/v1/sandboxes/{id}/processes/{pid}", Summary: "a process's state", Response: t[adapter.ProcessState](), Status: 200},
	{Method: "GET", Path: "/v1/sandboxes/{id}/processes/{pid}/output", Summary: "output after an offset; follow=true streams it until the process exits",
		Response: t[ProcessChunk](), Status: 200, Stream: true, Query: []string{"since", "limit", "encoding", "follow"}},
	{Method: "POST", Path: "/v1/sandboxes/{id}/processes/{pid}/stdin", Summary: "the raw body to the process's stdin; close=true closes it after", Request: Binary, Response: t[StdinWritten](), Status: 200, Query: []string{"close"}},
	{Method: "POST", Path: "/v1/sandboxes/{id}/processes/{pid}/signal", Summary: "signal the process's tree", Request: t[SignalRequest](), Response: t[adapter.ProcessState](), Status: 200},
	{Method: "POST", Path: "/v1/sandboxes/{id}/processes/{pid}/wait", Summary: "wait for the process to exit, at most timeoutMs", Response: t[adapter.ProcessState](), Status: 200, Query: []string{"timeoutMs"}},
	{Method: "GET", Path: "/v1/sandboxes/{id}/files", Summary: "download a file", Response: Binary, Status: 200, Query: []string{"path"}},
	{Method: "PUT", Path: "/v1/sandboxes/{id}/files", Summary: "upload a file (atomic replace, parents made)", Request: Binary, Response: t[FileWritten](), Status: 200, Query: []string{"path"}},
	{Method: "DELETE", Path: "/v1/sandboxes/{id}/files", Summary: "remove a file or empty directory", Status: 204, Query: []string{"path"}},
	{Method: "GET", Path: "/v1/sandboxes/{id}/files/stat", Summary: "one entry, not following a final symlink", Response: t[File](), Status: 200, Query: []string{"path"}},
	{Method: "GET", Path: "/v1/sandboxes/{id}/files/list", Summary: "every file and symlink under dir", Response: t[FileList](), Status: 200, Query: []string{"dir"}},
	{Method: "POST", Path: "/v1/sandboxes/{id}/files/symlink", Summary: "make a symbolic link", Request: t[SymlinkRequest](), Response: t[SymlinkRequest](), Status: 200},
	{Method: "POST", Path: "/v1/sandboxes/{id}/files/executable", Summary: "set or clear the executable bit", Request: t[ExecutableRequest](), Response: t[ExecutableRequest](), Status: 200},
	{Method: "GET", Path: "/v1/sandboxes/{id}/ports/{port}", Summary: "connect to 127.0.0.1:port in the sandbox (Upgrade: tcp)", Status: 101, Upgrade: true},
	{Method: "POST", Path: "/v1/sandboxes/{id}/listeners", Summary: "listen on 127.0.0.1:port in the sandbox", Request: t[ListenRequest](), Response: t[Listener](), Status: 201},
	{Method: "GET", Path: "/v1/sandboxes/{id}/listeners/{lid}/accept", Summary: "the next connection to the listener (Upgrade: tcp)", Status: 101, Upgrade: true},
	{Method: "DELETE", Path: "/v1/sandboxes/{id}/listeners/{lid}", Summary: "stop listening", Status: 204},
}

// StdinWritten is the answer of POST .../stdin.
type StdinWritten struct {
	Written int64 `json:"written"`
}

// FileWritten is the answer of PUT .../files.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// SchemaName is the name of a type's schema in the document's components.
func SchemaName(ty reflect.Type) string {
	if ty == t[adapter.ProcessState]() {
		return "ProcessState"
	}
	return ty.Name()
}

// GenerateOpenAPI builds the OpenAPI 3.1 document of Routes (api/openapi.json is its output;
// TestOpenAPIIsGenerated keeps the two equal).
func GenerateOpenAPI() ([]byte, error) {
	schemas := map[string]any{}
	ref := func(ty reflect.Type) (map[string]any, error) {
		name := SchemaName(ty)
		if _, ok := schemas[name]; !ok {
			s, err := jsonschema.ForType(ty, &jsonschema.ForOptions{})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			schemas[name] = s
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}, nil
	}
	refusal, err := ref(t[Refusal]())
	if err != nil {
		return nil, err
	}
	paths := map[string]map[string]any{}
	for _, r := range Routes {
		op := map[string]any{"summary": r.Summary, "operationId": operationID(r)}
		var params []any
		for _, seg := range strings.Split(r.Path, "/") {
			if strings.HasPrefix(seg, "{") {
				params = append(params, map[string]any{"name": strings.Trim(seg, "{}"), "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
			}
		}
		for _, q := range r.Query {
			params = append(params, map[string]any{"name": q, "in": "query", "required": q == "path", "schema": map[string]any{"type": "string"}})
		}
		for _, h := range r.Headers {
			params = append(params, map[string]any{"name": h, "in": "header", "schema": map[string]any{"type": "string"}})
		}
		if r.Upgrade {
			params = append(params,
				map[string]any{"name": "Connection", "in": "header", "required": true, "schema": map[string]any{"const": "Upgrade"}},
				map[string]any{"name": "Upgrade", "in": "header", "required": true, "schema": map[string]any{"const": "tcp"}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.Request != nil {
			content := map[string]any{}
			if r.Request == Binary {
				content["application/octet-stream"] = map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}
			} else {
				s, err := ref(r.Request)
				if err != nil {
					return nil, err
				}
				content["application/json"] = map[string]any{"schema": s}
			}
			op["requestBody"] = map[string]any{"content": content}
		}
		ok := map[string]any{"description": r.Summary}
		if r.Response != nil {
			content := map[string]any{}
			if r.Response == Binary {
				content["application/octet-stream"] = map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}
			} else {
				s, err := ref(r.Response)
				if err != nil {
					return nil, err
				}
				content["application/json"] = map[string]any{"schema": s}
				if r.Stream {
					line := s
					if r.Response == t[ExecResult]() {
						if line, err = ref(t[StreamLine]()); err != nil {
							return nil, err
						}
					}
					content["application/x-ndjson"] = map[string]any{"schema": line}
				}
			}
			ok["content"] = content
		}
		op["responses"] = map[string]any{
			fmt.Sprint(r.Status): ok,
			"default":            map[string]any{"description": "a refusal: the tools' error shape", "content": map[string]any{"application/json": map[string]any{"schema": refusal}}},
		}
		if !r.NoAuth {
			op["security"] = []any{map[string]any{"bearer": []any{}}}
		} else {
			op["security"] = []any{}
		}
		if paths[r.Path] == nil {
			paths[r.Path] = map[string]any{}
		}
		paths[r.Path][strings.ToLower(r.Method)] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "sandboxer", "version": "1",
			"description": "The HTTP API of `sandboxerd serve` (docs/api.md). Generated from api.Routes: do not edit by hand; `go test ./api -update` rewrites it."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// operationID is a route's name: its method and path's words, camel-cased.
func operationID(r Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, seg := range strings.Split(strings.TrimPrefix(r.Path, "/v1/"), "/") {
		if strings.HasPrefix(seg, "{") {
			continue
		}
		for _, w := range strings.Split(seg, "_") {
			if w != "" {
				b.WriteString(strings.ToUpper(w[:1]) + w[1:])
			}
		}
	}
	if strings.HasSuffix(r.Path, "}") {
		b.WriteString("Item")
	}
	return b.String()
}

// Paths are the document's "METHOD PATH" pairs, sorted.
func Paths() []string {
	var out []string
	for _, r := range Routes {
		out = append(out, r.Method+" "+r.Path)
	}
	sort.Strings(out)
	return out
}
