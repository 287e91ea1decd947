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
	"github.com/sandboxer/sandboxer/egress"
)

var _ egress.Egressed = (*Sandbox)(nil)

// Egress returns the sandbox's egress proxy, made at first use; nil without Config.AllowHosts
// (egress.Egressed). ExecuteCommand attaches it (Ensure) and env adds egress.EnvOf.
func (s *Sandbox) Egress() *egress.Proxy { return s.egress.Get(s.cfg.AllowHosts, s.cfg.Egress) }

// TrustCA implements egress.TrustStore where HOME is a directory of this host (the capped
// disk's): the bundle of the container's root file system (read through its first process's
// /proc/PID/root) followed by pem, in a file of HOME. Elsewhere the sandbox cannot hold it.
func (s *Sandbox) TrustCA(ctx context.Context, pem []byte) (string, error) {
	if s.disk.dir == "" || s.workspaceHome {
		return "", errors.New("the container's HOME is not a directory of this host (no capped disk: a daemon elsewhere, or WorkspaceBytes -1)")
	}
	err := egress.WriteBundle(filepath.Join(s.disk.home(), egress.TrustFile), pem, func() ([]byte, error) {
		ins, err := s.eng.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{})
		if err != nil {
			return nil, err
		}
		if ins.Container.State == nil || ins.Container.State.Pid <= 0 {
			return nil, fmt.Errorf("container %s is not running", s.containerID)
		}
		return egress.SystemBundle(filepath.Join("/proc", strconv.Itoa(ins.Container.State.Pid), "root")), nil
	})
	if err != nil {
		return "", err
	}
	return path.Join(adapter.DefaultHome, egress.TrustFile), nil
}
