package docker_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/tools/toolstest"
)

// TestTools runs the tool layer (read, write, edit, grep, bash) over docker sandboxes.
func TestTools(t *testing.T) {
	needDocker(t)
	toolstest.Run(t, func(t *testing.T) adapter.Sandbox { return newSandbox(t, docker.Config{}) })
}
