package docker

import (
	"context"
	"strings"
	"sync"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter/internal/cgstat"
)

// hostView is where a receipt reads the container's statistics on this host: its init's host pid
// and the cgroups that pid is in. It is found through the engine once, and trusted only while
// the pid's cgroups name the container (a remote engine's pids mean nothing here; a restarted
// container has a new init).
type hostView struct {
	mu  sync.Mutex
	pid int // 0: not known (yet); -1: not on this host
}

// meter begins a command's measurement (cgstat) of the container's cgroup, or returns nil when
// the container is not on this host's kernel.
func (s *Sandbox) meter(ctx context.Context) *cgstat.Meter {
	s.host.mu.Lock()
	defer s.host.mu.Unlock()
	if s.host.pid < 0 {
		return nil
	}
	if s.host.pid > 0 {
		if g := cgstat.ForPID(s.host.pid); s.owns(g) {
			return cgstat.Begin(g)
		}
	}
	s.host.pid = -1
	ins, err := s.eng.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{})
	if err != nil || ins.Container.State == nil || ins.Container.State.Pid <= 0 {
		s.host.pid = 0 // try again next time
		return nil
	}
	pid := ins.Container.State.Pid
	g := cgstat.ForPID(pid)
	if !s.owns(g) {
		return nil // the engine runs elsewhere (or in another pid namespace)
	}
	s.host.pid = pid
	return cgstat.Begin(g)
}

// owns reports whether g is this container's cgroup: the engine names its cgroups after the
// container's id (cgroupfs: .../docker/<id>, systemd: docker-<id>.scope).
func (s *Sandbox) owns(g cgstat.Group) bool {
	for _, d := range []string{g.V2, g.CPUAcct, g.Memory} {
		if d != "" && s.containerID != "" && strings.Contains(d, s.containerID) {
			return true
		}
	}
	return false
}
