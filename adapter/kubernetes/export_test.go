package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// PodOf returns a sandbox's pod object, for tests that check its spec.
func PodOf(ctx context.Context, s *Sandbox) (*corev1.Pod, error) { return s.k.getPod(ctx, s.pod) }

// DeletePod deletes a sandbox's pod behind its handle's back.
func DeletePod(ctx context.Context, s *Sandbox) error { return s.k.deletePod(ctx, s.pod) }

// UseAgent makes c the handle's agent stream in place of the real one (a test's hostile agent);
// the returned function closes the real one.
func UseAgent(s *Sandbox, c *agent.Client) func() {
	return s.agent.Set(&agentConn{Client: c, stderr: &headBuffer{n: 1024}})
}
