// Package doctor owns `sandboxer doctor`'s probes: what works on this machine (ripgrep, the Docker
// daemon and the default image, network namespaces, Landlock). Each probe tries the real thing
// (runs rg, pings the daemon, starts a child in new namespaces, asks the kernel for its Landlock
// ABI) rather than guessing from versions or files.
package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter/agent"
	dimage "github.com/sandboxer/sandboxer/adapter/docker/image"
	"golang.org/x/sys/unix"
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

// NetworkNamespace starts `true` in a new user and network namespace (and, when that is refused,
// in a new network namespace alone, which needs CAP_SYS_ADMIN): this is what the local adapter
// needs to cut a command off the network.
func NetworkNamespace(ctx context.Context) Check {
	c := Check{Name: "network namespace"}
	bin, err := exec.LookPath("true")
	if err != nil {
		c.Detail = "cannot probe: `true` not found on PATH"
		return c
	}
	try := func(attr *syscall.SysProcAttr) error {
		cmd := exec.CommandContext(ctx, bin)
		cmd.SysProcAttr = attr
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		return cmd.Run()
	}
	uid, gid := os.Getuid(), os.Getgid()
	userErr := try(&syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
	})
	if userErr == nil {
		c.OK, c.Detail = true, "user+network namespaces can be created"
		return c
	}
	netErr := try(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET})
	if netErr == nil {
		c.OK, c.Detail = true, fmt.Sprintf("network namespaces can be created (privileged; user namespace refused: %v)", userErr)
		return c
	}
	c.Detail = fmt.Sprintf("refused: user+net: %v; net: %v", userErr, netErr)
	return c
}

// landlockCreateRulesetVersion is LANDLOCK_CREATE_RULESET_VERSION.
const landlockCreateRulesetVersion = 1

// Landlock asks the kernel for its Landlock ABI version (landlock_create_ruleset with the VERSION
// flag): 0 with an error when Landlock is missing or disabled.
func Landlock() Check {
	c := Check{Name: "landlock"}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, landlockCreateRulesetVersion)
	switch {
	case errno == 0:
		c.OK, c.Detail = true, fmt.Sprintf("ABI version %d", abi)
	case errors.Is(errno, unix.ENOSYS):
		c.Detail = "not supported by this kernel (ENOSYS)"
	case errors.Is(errno, unix.EOPNOTSUPP):
		c.Detail = "supported by the kernel but disabled at boot (EOPNOTSUPP)"
	default:
		c.Detail = errno.Error()
	}
	return c
}
