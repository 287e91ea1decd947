package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/sandboxer/sandboxer/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite api/openapi.json from api.Routes")

// TestOpenAPIIsGenerated keeps api/openapi.json equal to what api.Routes and the wire types
// make: a change to either shows in the document (go test ./api -update rewrites it).
func TestOpenAPIIsGenerated(t *testing.T) {
	doc, err := api.GenerateOpenAPI()
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("openapi.json", doc, 0o644))
		t.Skip("api/openapi.json rewritten: run the test again to check it (the embedded copy is the old one)")
	}
	require.True(t, bytes.Equal(doc, api.OpenAPI), "api/openapi.json is not what api.Routes makes: run go test ./api -update")

	var parsed struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(api.OpenAPI, &parsed))
	assert.Equal(t, "3.1.0", parsed.OpenAPI)
	ids := map[string]bool{}
	n := 0
	for path, ops := range parsed.Paths {
		for method, op := range ops {
			n++
			id, _ := op["operationId"].(string)
			assert.NotEmpty(t, id, "%s %s", method, path)
			assert.False(t, ids[id], "operationId %s is used twice", id)
			ids[id] = true
		}
	}
	assert.Equal(t, len(api.Routes), n, "every route is in the document once")
}
