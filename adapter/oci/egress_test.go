package oci_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
)

// TestEgressAllowlist: the egress harness in a container with an empty network namespace, under
// each runtime.
func TestEgressAllowlist(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		egresstest.Run(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
			return newSandbox(t, rt, oci.Config{AllowHosts: allow, Egress: opts})
		})
	})
}
