package docker_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/egress/egresstest"
)

// TestEgressAllowlist: the egress harness in a container with network mode none.
func TestEgressAllowlist(t *testing.T) {
	t.Parallel()
	egresstest.Run(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		return newSandbox(t, docker.Config{AllowHosts: allow, Egress: opts})
	})
}

// TestEgressSecrets: secrets and rules in the Debian image (python3 and git call with the
// placeholders, trusting the proxy's authority through the bundle in HOME).
func TestEgressSecrets(t *testing.T) {
	t.Parallel()
	img := debianImage(t)
	egresstest.RunSecrets(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		return newSandbox(t, docker.Config{Image: img, AllowHosts: allow, Egress: opts})
	})
}

// TestEgressSecretsThroughTheAgent: the same with HOME in the container (no capped disk of this
// host: WorkspaceBytes -1, as with a daemon elsewhere), where the agent writes the bundle. The
// commands run as the container's root: the Debian image has no /home/sandbox, so the daemon
// makes HOME's anonymous volume root's.
func TestEgressSecretsThroughTheAgent(t *testing.T) {
	t.Parallel()
	img := debianImage(t)
	egresstest.RunSecrets(t, func(t *testing.T, allow []string, opts egress.Config) adapter.Sandbox {
		return newSandbox(t, docker.Config{Image: img, AllowHosts: allow, Egress: opts, WorkspaceBytes: -1, User: "0"})
	})
}
