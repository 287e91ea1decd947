package kubernetes_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
)

// BenchmarkRealWork is issue 35's real work (adaptertest.BenchmarkRealWork) in pods of the Debian
// toolchain image (SANDBOXER_TEST_K8S_DEBIAN_IMAGE, the agent from an init container of the
// sandbox image) against the same commands bare on the host, each pod with no CPU limit, 4 GiB of
// memory and a 1 GiB /tmp (a cold go test compiles the standard library there). Without the
// cluster or the image it skips, unless SANDBOXER_TEST_REQUIRE names kubernetes (TestMain fails
// without the cluster) or debian-image:
// `go test -run '^$' -bench RealWork -benchtime 2x ./adapter/kubernetes/` (with the fixture up).
func BenchmarkRealWork(b *testing.B) {
	needCluster(b)
	img := debianImage(b)
	cfg := cfgWith(func(c *kubernetes.Config) {
		c.AgentImage, c.Image = c.Image, img
		c.MemoryBytes, c.TmpBytes, c.MilliCPUs = 4<<30, 1<<30, -1
	})
	adaptertest.BenchmarkRealWork(b, adaptertest.RealWorkSandbox{Name: "kubernetes", New: func(b *testing.B) adapter.Sandbox {
		return newSandbox(b, cfg)
	}})
}
