package docker

import (
	"os"
	"path/filepath"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
)

// UseAgent makes c the handle's agent stream in place of the real one (a test's hostile agent);
// the returned function closes the real one.
func UseAgent(s *Sandbox, c *agent.Client) func() {
	return s.agent.Set(&agentConn{Client: c, stderr: &headBuffer{n: 1024}})
}

// DiskLeftovers lists what is left of the capped workspace in directory dir
// (STATE/docker/disks/ID): its mount, its loop devices, its file, the directory.
func DiskLeftovers(dir string) []string {
	d := disk{dir: dir}
	var out []string
	for _, m := range []string{d.mount(), disk{dir: dir, legacy: true}.mount()} {
		if diskcap.MountedAt(m) {
			out = append(out, "mount "+m)
		}
	}
	for _, dev := range diskcap.Loops(d.image()) {
		out = append(out, "loop device "+dev)
	}
	if _, err := os.Stat(d.dir); err == nil {
		out = append(out, d.dir)
	}
	return out
}

// DiskDir is the directory of sandbox s's capped workspace ("" when it has none).
func DiskDir(s *Sandbox) string { return s.disk.dir }

// DiskDirOf is where sandbox id of cfg's state directory has its capped workspace.
func DiskDirOf(cfg Config, id string) string { return filepath.Join(cfg.disksBase(), id) }

// DiskMounts is where the disk of directory dir (STATE/docker/disks/ID) is mounted and its
// workspace, as the janitor and Prune find them ("" when dir is not a disk's).
func DiskMounts(dir string) (mount, workspace string) {
	d := diskAt(dir)
	if d.dir == "" {
		return "", ""
	}
	return d.mount(), d.workspace()
}

// DiskOfBind is the directory of the disk whose bind at /workspace has source src ("": none).
func DiskOfBind(src string) string {
	var ins client.ContainerInspectResult
	ins.Container.Mounts = []container.MountPoint{{Type: "bind", Source: src, Destination: adapter.DefaultWorkspace}}
	return diskOf(ins).dir
}
