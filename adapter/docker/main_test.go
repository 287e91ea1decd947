package docker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// daemonErr is why the Docker tests skip (nil when the daemon answers and the image is built).
var daemonErr error

// TestMain probes the daemon, builds the image once when it is missing or stale, and checks after
// the run that no container created by this process is left.
func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	daemonErr = setup(ctx)
	cancel()
	if daemonErr != nil && testenv.Required("docker") {
		fmt.Fprintln(os.Stderr, "SANDBOXER_TEST_REQUIRE=docker but the Docker daemon is not usable:", daemonErr)
		os.Exit(1)
	}
	code := m.Run()
	if daemonErr == nil {
		if left := leftovers(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "containers left behind by the tests:", left)
			code = 1
		}
	}
	os.Exit(code)
}

func setup(ctx context.Context) error { return image.Ready(ctx) }

// leftovers lists the containers this test process created and did not remove.
func leftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return []string{err.Error()}
	}
	defer c.Close()
	host, _ := os.Hostname()
	f := make(client.Filters).Add("label", fmt.Sprintf("%s=%s:%d", docker.LabelOwner, host, os.Getpid()))
	res, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, it := range res.Items {
		out = append(out, it.Names...)
		c.ContainerRemove(ctx, it.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
	return out
}

func needDocker(t testing.TB) {
	t.Helper()
	if daemonErr != nil {
		t.Skip("Docker daemon not usable (set SANDBOXER_TEST_REQUIRE=docker to fail instead):", daemonErr)
	}
}
