package filesync_test

import (
	"context"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/stretchr/testify/require"
)

func newLocal(t *testing.T) adapter.Sandbox { return newLocalAt(t, t.TempDir()) }

// newLocalAt is a local sandbox on the workspace root, stopped when the test ends.
func newLocalAt(t *testing.T, root string) adapter.Sandbox {
	sb, err := local.New(local.Config{Root: root})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	return sb
}

func TestLocal(t *testing.T) {
	filesynctest.Run(t, filesynctest.Harness{New: newLocal})
}

func TestMemory(t *testing.T) {
	filesynctest.Run(t, filesynctest.Harness{New: func(t *testing.T) adapter.Sandbox {
		sb, err := memory.New(memory.Config{})
		require.NoError(t, err)
		return sb
	}})
}
