package doctor_test

import (
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandboxer/sandboxer/internal/doctor"
)

// The probes must agree with what the machine really does; rg is installed where the suite runs.
func TestRipgrep(t *testing.T) {
	t.Parallel()
	c := doctor.Ripgrep(context.Background())
	_, err := exec.LookPath("rg")
	assert.Equal(t, err == nil, c.OK, c.Detail)
	assert.Equal(t, "ripgrep", c.Name)
}

func TestProbesDoNotPanicAndExplain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, i := doctor.Docker(ctx, "sandboxer-doctor-test-no-such-image:never")
	assert.False(t, i.OK, "a made-up image is never present")
	assert.NotEmpty(t, d.Detail)
	assert.NotEmpty(t, i.Detail)
	for _, c := range []doctor.Check{doctor.NetworkNamespace(ctx), doctor.Landlock(), doctor.Platform()} {
		assert.NotEmpty(t, c.Detail, c.Name)
	}
}

// The daemon's line names its storage driver as `docker info` does, with what it costs when that
// is known.
func TestDockerStorageDriver(t *testing.T) {
	t.Parallel()
	d, _ := doctor.Docker(context.Background(), "sandboxer-doctor-test-no-such-image:never")
	out, err := exec.Command("docker", "info", "-f", "{{.Driver}}").Output()
	if !d.OK || err != nil {
		t.Skipf("no docker daemon or CLI: %s %v", d.Detail, err)
	}
	driver := strings.TrimSpace(string(out))
	assert.Contains(t, d.Detail, ", storage "+driver, d.Detail)
	assert.Equal(t, driver == "fuse-overlayfs", strings.Contains(d.Detail, "FUSE round trip"), d.Detail)
}

// The platform line names the system, and fails where the local adapter has no kernel isolation.
func TestPlatform(t *testing.T) {
	t.Parallel()
	c := doctor.Platform()
	assert.Equal(t, "platform", c.Name)
	assert.Contains(t, c.Detail, runtime.GOOS+"/"+runtime.GOARCH)
	assert.Equal(t, runtime.GOOS == "linux", c.OK, c.Detail)
	if runtime.GOOS != "linux" {
		assert.Contains(t, c.Detail, "NO kernel isolation")
		assert.Contains(t, c.Detail, "oci adapter needs Linux")
	}
}
