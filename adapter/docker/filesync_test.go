package docker_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
)

// TestFileSync runs the FileSync cases (hydrate, flush, conflicts, filter, binary files) over
// docker sandboxes, through the adapter's one-archive bulk reads and writes.
func TestFileSync(t *testing.T) {
	needDocker(t)
	filesynctest.Run(t, filesynctest.Harness{New: func(t *testing.T) adapter.Sandbox {
		return newSandbox(t, docker.Config{})
	}})
}
