package memory_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/tools/toolstest"
)

// TestTools runs the tool layer's suite over the memory adapter: grep goes through the built-in
// rg, bash through the interpreter.
func TestTools(t *testing.T) {
	toolstest.Run(t, func(t *testing.T) adapter.Sandbox { return newSandbox(t, memory.Config{}) })
}
