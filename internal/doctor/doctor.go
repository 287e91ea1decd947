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

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func platformName() string { return runtime.GOOS + "/" + runtime.GOARCH }
