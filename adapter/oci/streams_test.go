package oci_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/oci"
)

// A forwarded port is the container's own socket, handed to this process through the sandbox's
// streams directory, on runc and crun; under runsc (gVisor refuses host sockets) it is a stream
// multiplexed over the runtime's pipes. The sandbox can neither write to the directory nor list it.
func TestPortsAreDirectStreams(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		adaptertest.CheckDirectPort(t, newSandbox(t, rt, oci.Config{}), rt != oci.Runsc, agent.DirectSandboxDir)
	})
}
