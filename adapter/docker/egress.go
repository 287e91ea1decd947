package docker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent/trustfile"
	"github.com/sandboxer/sandboxer/egress"
)

var _ egress.Egressed = (*Sandbox)(nil)

// Egress returns the sandbox's egress proxy, made at first use; nil without Config.AllowHosts
// (egress.Egressed). ExecuteCommand attaches it (Ensure) and env adds egress.EnvOf.
func (s *Sandbox) Egress() *egress.Proxy { return s.egress.Get(s.cfg.AllowHosts, s.cfg.Egress) }

// TrustCA implements egress.TrustStore: the bundle of the container's root file system followed
// by pem, in a file of HOME. Where HOME is a directory of this host (the capped disk's), it is
// written here (the root file system read through the container's first process's
// /proc/PID/root); elsewhere (a daemon on another host, WorkspaceBytes -1) by the container's
// agent (shellfs.FS.TrustCA).
func (s *Sandbox) TrustCA(ctx context.Context, pem []byte) (string, error) {
	switch {
	case s.workspaceHome:
		return "", errors.New("the container's HOME is its workspace (a container made before commands had a HOME of their own): the bundle would be in the workspace")
	case s.disk.dir == "": // HOME is the container's: its agent writes the bundle
		return s.files().TrustCA(ctx, adapter.DefaultHome, pem)
	}
	err := trustfile.Write(filepath.Join(s.disk.home(), trustfile.Path), pem, func() ([]byte, error) {
		ins, err := s.eng.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{})
		if err != nil {
			return nil, err
		}
		if ins.Container.State == nil || ins.Container.State.Pid <= 0 {
			return nil, fmt.Errorf("container %s is not running", s.containerID)
		}
		return trustfile.System(filepath.Join("/proc", strconv.Itoa(ins.Container.State.Pid), "root")), nil
	})
	if err != nil {
		return "", err
	}
	return path.Join(adapter.DefaultHome, trustfile.Path), nil
}
