package kubernetes_test

import (
	"os"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestEgressSecrets: secrets and rules in a pod of the Debian image (python3 and git call with
// the placeholders), the proxy's authority in HOME written by the agent (`-fs trust`). The
// cluster's network policy may not be enforced (the fixture's bridge has none): what is checked
// here is what goes through the proxy.
func TestEgressSecrets(t *testing.T) {
	needCluster(t)
	img := os.Getenv("SANDBOXER_TEST_K8S_DEBIAN_IMAGE")
	if img == "" {
		if testenv.Required("debian-image") {
			t.Fatal("SANDBOXER_TEST_REQUIRE=debian-image but SANDBOXER_TEST_K8S_DEBIAN_IMAGE is unset")
		}
		t.Skip("SANDBOXER_TEST_K8S_DEBIAN_IMAGE unset (.ci/kubernetes.sh sets it when the Debian image exists)")
	}
	t.Parallel()
	egresstest.RunSecrets(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		return newSandbox(t, cfgWith(func(c *kubernetes.Config) {
			c.AgentImage, c.Image = c.Image, img
			c.AllowHosts, c.Egress = allow, opts
		}))
	})
}
