// Package doctor owns `sandboxer doctor`'s probes: what works on this machine (ripgrep, the Docker
// daemon and the default image, network namespaces, Landlock). Each probe tries the real thing
// (runs rg, pings the daemon, starts a child in new namespaces, asks the kernel for its Landlock
// ABI) rather than guessing from versions or files.
package doctor

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter/agent"
	dimage "github.com/sandboxer/sandboxer/adapter/docker/image"
)

// Check is the outcome of one probe.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Ripgrep runs `rg --version` from PATH.
func Ripgrep(ctx context.Context) Check {
	c := Check{Name: "ripgrep"}
	p, err := exec.LookPath("rg")
	if err != nil {
		c.Detail = "rg not found on PATH: grep needs ripgrep on the host (local adapter)"
		return c
	}
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil {
		c.Detail = fmt.Sprintf("%s does not run: %v", p, err)
		return c
	}
	first, _, _ := strings.Cut(string(out), "\n")
	c.OK, c.Detail = true, fmt.Sprintf("%s (%s)", p, strings.TrimSpace(first))
	return c
}

// Docker pings the daemon named by the environment (DOCKER_HOST, default socket) and, when it
// answers, looks for image. It returns the daemon check and the image check.
func Docker(ctx context.Context, image string) (daemon, img Check) {
	daemon, img = Check{Name: "docker daemon"}, Check{Name: "docker image"}
	img.Detail = "daemon unreachable"
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		daemon.Detail = err.Error()
		return daemon, img
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ping, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		daemon.Detail = fmt.Sprintf("%s: %v", cli.DaemonHost(), err)
		return daemon, img
	}
	daemon.OK, daemon.Detail = true, fmt.Sprintf("%s (API %s, %s)", cli.DaemonHost(), ping.APIVersion, ping.OSType)
	if info, err := cli.Info(ctx, client.InfoOptions{}); err == nil && info.Info.Driver != "" {
		daemon.Detail += ", storage " + info.Info.Driver + storageNote(info.Info.Driver)
	}
	res, err := cli.ImageInspect(ctx, image)
	if err != nil {
		img.Detail = fmt.Sprintf("%s missing: build it with `sandboxer image build`", image)
		return daemon, img
	}
	transport := "no agent: one daemon exec per call, rebuild with `sandboxer image build`"
	if res.Config != nil && res.Config.Labels[dimage.LabelAgent] == agent.Version {
		transport = "agent " + agent.Version
	}
	img.OK, img.Detail = true, fmt.Sprintf("%s (%s, %s)", image, shortID(res.ID), transport)
	return daemon, img
}

// storageNote says what a storage driver costs the commands of a docker sandbox, where it is
// known to cost something. fuse-overlayfs: the container's root is a FUSE file system, and every
// absolute path a command looks up, wherever it leads (/workspace, /tmp, the toolchain), asks
// the FUSE daemon first (~30 µs a lookup against ~3 µs on the host): a warm `go test` took 1.7x
// its time on the host, the same under sandboxer as in a plain `docker run` (docs/docker.md,
// "Real work"). vfs copies the whole image for every container.
func storageNote(driver string) string {
	switch driver {
	case "fuse-overlayfs":
		return " (every absolute path lookup in a container is a FUSE round trip: real work runs up to ~1.7x slower than on the host; the daemon's overlay2 driver does not have this cost)"
	case "vfs":
		return " (every container is a full copy of its image: slow creates; the daemon's overlay2 driver does not have this cost)"
	}
	return ""
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func platformName() string { return runtime.GOOS + "/" + runtime.GOARCH }
