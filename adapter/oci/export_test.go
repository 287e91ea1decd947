package oci

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// Leftovers is leftovers, for the tests.
var Leftovers = leftovers

// NoJanitor makes the sandboxes this process creates from now on wait for Prune when it dies.
func NoJanitor() { noJanitor = true }

// CgroupFile returns the path of a file of sandbox id's cgroup for a controller (v1), or of the
// v2 file when no v1 hierarchy has the controller; "" when neither exists.
func CgroupFile(id, controller, v1, v2 string) string {
	mounts, _ := cgroupMounts()
	for _, m := range mounts {
		for _, c := range m.Controllers {
			if c == controller {
				return filepath.Join(m.Dir, cgroupPath(id), v1)
			}
		}
	}
	for _, m := range mounts {
		if m.V2 {
			return filepath.Join(m.Dir, cgroupPath(id), v2)
		}
	}
	return ""
}

func AgentStderr(s *Sandbox) string {
	a := s.agent.Current()
	if a == nil {
		return "<no agent>"
	}
	return a.stderr.String()
}

// UseAgent makes c the handle's agent stream in place of the real one (a test's hostile agent);
// the returned function closes the real one.
func UseAgent(s *Sandbox, c *agent.Client) func() {
	return s.agent.Set(&agentConn{Client: c, stderr: newHeadBuffer(1024)})
}

// ProbePlatform decides gVisor's platform for cfg (runsc) as a create does, with a probe of
// platform (kvm for "") on device (/dev/kvm for ""), bounded by timeout (0: the default), whose
// agent gets args (nil: the default); fresh probes again even if a decision is kept.
func ProbePlatform(ctx context.Context, cfg Config, platform, device string, timeout time.Duration, args []string, fresh bool) (PlatformChoice, error) {
	cfg.Runtime = Runsc
	rt, err := findRuntime(cfg)
	if err != nil {
		return PlatformChoice{}, err
	}
	return choosePlatform(ctx, cfg, rt, platformProbe{platform: platform, device: device, timeout: timeout, args: args, fresh: fresh})
}

// RunscDefaultPlatform is the default platform of the runsc on PATH.
func RunscDefaultPlatform(ctx context.Context) string {
	rt, err := findRuntime(Config{Runtime: Runsc})
	if err != nil {
		return ""
	}
	return platformsOf(ctx, rt.path).def
}

// RunscHasPlatform says whether the runsc on PATH has platform name.
func RunscHasPlatform(ctx context.Context, name string) bool {
	rt, err := findRuntime(Config{Runtime: Runsc})
	return err == nil && slices.Contains(platformsOf(ctx, rt.path).names, name)
}

// ProbeLeftovers lists what probes of stateDir left: their directories, and processes naming
// them.
func ProbeLeftovers(stateDir string) []string {
	lay := layoutOf(stateDir)
	var out []string
	ents, _ := os.ReadDir(lay.probes())
	for _, e := range ents {
		out = append(out, filepath.Join(lay.probes(), e.Name()))
	}
	for _, pid := range processesNaming(lay.probes()) {
		out = append(out, fmt.Sprintf("process %d", pid))
	}
	return out
}

// ProbeCgroups lists the cgroups of probe sandboxes on this host.
func ProbeCgroups() []string {
	mounts, _ := cgroupMounts()
	var out []string
	for _, m := range mounts {
		found, _ := filepath.Glob(filepath.Join(m.Dir, "sandboxer-probe-*"))
		out = append(out, found...)
	}
	return out
}

// LeaseImage takes the lease on the tree of image ref a create takes (unpacking it if needed),
// as a create holds it between finding the tree and writing its record.
func LeaseImage(ctx context.Context, cfg Config, ref string) (func(), error) {
	root, err := rootOf(ctx, Config{StateDir: cfg.StateDir, Image: ref}, layoutOf(cfg.stateDir()))
	if err != nil {
		return nil, err
	}
	return root.release, nil
}
