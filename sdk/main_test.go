// Package sdk_test runs the SDKs' own tests (sdk/typescript, sdk/python) against a real
// `sandboxerd serve`, so that `go test ./...` covers them.
package sdk_test

import (
	"os"
	"testing"

	"github.com/sandboxer/sandboxer/internal/servetest"
)

// TestMain removes the sandboxerd binary servetest built for the package's tests.
func TestMain(m *testing.M) { os.Exit(servetest.Main(m)) }
