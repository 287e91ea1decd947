package kubernetes_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
)

// Any image runs, with real work (issue 35): a Debian image with a toolchain and no agent
// (SANDBOXER_TEST_K8S_DEBIAN_IMAGE: .ci/debian-image.sh builds it, .ci/kubernetes.sh gives it to
// the fixture) gets the agent from an init container of the sandbox image; the image's PATH is
// the commands', a Go module's tests and a C build pass, files round-trip through the adapter,
// and another handle relays to the same agent.
func TestAnyImageRunsRealWork(t *testing.T) {
	needCluster(t)
	img := debianImage(t)
	t.Parallel()
	cfg := cfgWith(func(c *kubernetes.Config) { c.AgentImage, c.Image = c.Image, img })
	sb := newSandbox(t, cfg)
	ctx := ctxT(t)
	p, err := kubernetes.PodOf(ctx, sb)
	require.NoError(t, err)
	require.Len(t, p.Spec.InitContainers, 1)
	assert.Equal(t, agent.BroughtPath, p.Spec.Containers[0].Command[0])

	adaptertest.CheckRealWork(t, sb)

	other, err := kubernetes.Attach(ctx, base, sb.ID())
	require.NoError(t, err)
	defer other.Stop(ctx)
	data, err := other.ReadFile(ctx, "c/hello.c")
	require.NoError(t, err)
	assert.Contains(t, string(data), "hello from C")
	res, err := other.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "command -v go"}})
	require.NoError(t, err)
	assert.Equal(t, "/usr/bin/go\n", string(res.Stdout), "the image's PATH: %s", res.Stderr)
}
