package kubernetes_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// Any image runs, with real work (issue 35): a Debian image with a toolchain and no agent
// (SANDBOXER_TEST_K8S_DEBIAN_IMAGE: .ci/debian-image.sh builds it, .ci/kubernetes.sh gives it to
// the fixture) gets the agent from an init container of the sandbox image; the image's PATH is
// the commands', a Go module's tests and a C build pass, files round-trip through the adapter,
// and another handle relays to the same agent.
func TestAnyImageRunsRealWork(t *testing.T) {
	needCluster(t)
	img := os.Getenv("SANDBOXER_TEST_K8S_DEBIAN_IMAGE")
	if img == "" {
		if testenv.Required("debian-image") {
			t.Fatal("SANDBOXER_TEST_REQUIRE=debian-image but SANDBOXER_TEST_K8S_DEBIAN_IMAGE is unset")
		}
		t.Skip("SANDBOXER_TEST_K8S_DEBIAN_IMAGE unset (.ci/kubernetes.sh sets it when the Debian image exists)")
	}
	t.Parallel()
	cfg := cfgWith(func(c *kubernetes.Config) { c.AgentImage, c.Image = c.Image, img })
	sb := newSandbox(t, cfg)
	ctx := ctxT(t)
	p, err := kubernetes.PodOf(ctx, sb)
	require.NoError(t, err)
	require.Len(t, p.Spec.InitContainers, 1)
	assert.Equal(t, agent.BroughtPath, p.Spec.Containers[0].Command[0])

	require.NoError(t, sb.WriteFile(ctx, "m/go.mod", []byte("module example.com/m\n\ngo 1.19\n")))
	require.NoError(t, sb.WriteFile(ctx, "m/sum_test.go", []byte("package m\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif 1+2 != 3 {\n\t\tt.Fatal()\n\t}\n}\n")))
	require.NoError(t, sb.WriteFile(ctx, "c/hello.c", []byte("#include <stdio.h>\nint main(void) { puts(\"hello from C\"); return 0; }\n")))
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", `set -e
id -u; echo "$HOME"; command -v go
cd m && go test ./... 2>&1 | sed 's/\t.*//'; cd ..
gcc -o c/hello c/hello.c && ./c/hello
python3 -c 'print(sum(range(4)))'`}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stdout %s\nstderr %s", res.Stdout, res.Stderr)
	assert.Equal(t, "1000\n/workspace\n/usr/bin/go\nok  \nhello from C\n6\n", string(res.Stdout))
	files, err := sb.ListFiles(ctx, "c")
	require.NoError(t, err)
	assert.Len(t, files, 2, "c/hello.c and c/hello")

	other, err := kubernetes.Attach(ctx, base, sb.ID())
	require.NoError(t, err)
	defer other.Stop(ctx)
	data, err := other.ReadFile(ctx, "c/hello.c")
	require.NoError(t, err)
	assert.Contains(t, string(data), "hello from C")
}
