package doctor_test

import (
	"context"
	"os/exec"
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
	for _, c := range []doctor.Check{doctor.NetworkNamespace(ctx), doctor.Landlock()} {
		assert.NotEmpty(t, c.Detail, c.Name)
	}
}
