package kubernetes_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
)

// TestEgressSecrets: secrets and rules in a pod of the Debian image (python3 and git call with
// the placeholders), the proxy's authority in HOME written by the agent (`-fs trust`). The
// cluster's network policy may not be enforced (the fixture's bridge has none): what is checked
// here is what goes through the proxy.
func TestEgressSecrets(t *testing.T) {
	needCluster(t)
	img := debianImage(t)
	t.Parallel()
	egresstest.RunSecrets(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		return newSandbox(t, cfgWith(func(c *kubernetes.Config) {
			c.AgentImage, c.Image = c.Image, img
			c.AllowHosts, c.Egress = allow, opts
		}))
	})
}
