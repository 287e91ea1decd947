package oci_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/sandboxer/sandboxer/tools/toolstest"
)

// outside makes a directory in the container's /tmp (outside /workspace) holding "secret".
func outside(t *testing.T, sb adapter.Sandbox) (string, func(string) ([]byte, bool)) {
	var b [6]byte
	rand.Read(b[:])
	dir := "/tmp/outside-" + hex.EncodeToString(b[:])
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{
		Args:  []string{"sh", "-c", `mkdir -p "$1" && cat > "$1/secret"`, "sh", dir},
		Stdin: bytes.NewReader([]byte(adaptertest.SecretContent)),
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	return dir, func(name string) ([]byte, bool) {
		res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"cat", dir + "/" + name}})
		if err != nil || res.ExitCode != 0 {
			return nil, false
		}
		return res.Stdout, true
	}
}

// The tool layer takes a Workspaced sandbox's Workspace() for its root: /workspace, as the
// capabilities say, never the host directory.
var _ adapter.Workspaced = (*oci.Sandbox)(nil)

func TestConformance(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		adaptertest.Run(t, adaptertest.Harness{
			New:         func(t *testing.T) adapter.Sandbox { return newSandbox(t, rt, oci.Config{}) },
			Outside:     outside,
			PrivateHome: true,
		})
	})
}

// TestTools runs the tool layer (read, write, edit, grep, bash) over oci sandboxes. It and
// TestFileSync run in parallel, each runtime too (mostly waiting on containers); the conformance
// suite does not: its output flood measures the process's heap.
func TestTools(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		toolstest.Run(t, func(t *testing.T) adapter.Sandbox { return newSandbox(t, rt, oci.Config{}) })
	})
}

// TestFileSync runs the FileSync cases (hydrate, flush, conflicts, filter, binary files) over oci
// sandboxes, whose file calls run on the host.
func TestFileSync(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		filesynctest.Run(t, filesynctest.Harness{New: func(t *testing.T) adapter.Sandbox {
			return newSandbox(t, rt, oci.Config{})
		}})
	})
}
