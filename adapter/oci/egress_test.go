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

// TestEgressSecrets: secrets and rules in the Debian image (python3 calls the API with the
// placeholder, trusting the proxy's authority through the bundle in HOME), under runc.
func TestEgressSecrets(t *testing.T) {
	img := debianImage(t)
	egresstest.RunSecrets(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		return newSandbox(t, oci.Runc, oci.Config{Image: img, AllowHosts: allow, Egress: opts})
	})
}
