package local

import (
	"context"
	"errors"
)

// errBusy is why a sandbox cannot be recycled: something of it outlives the call.
var errBusy = errors.New("the sandbox has running commands, background processes or ports")

// Recycle makes a sandbox that served a call ready to serve the next caller of the same workspace
// and configuration as if it had just been made, with its isolation helpers still running (the
// resident server of `sandboxer` keeps one per workspace warm): new IPC and UTS namespaces and
// session keyrings (and, for a root caller, cleared user keyrings) for the commands from now on,
// TMPDIR and the view's /tmp, /var/tmp and /dev/shm emptied and made as new (mode, extended
// attributes, times), HOME emptied, and the copies of the caller's caches emptied (a helper whose
// copies hold anything is ended: the next command starts a new one). The workspace is not touched; its disk cap (Config.Disk)
// counts from what it holds now. It fails, and the caller should Stop the
// sandbox, when something of the last call runs on (a command, a background process, exited or
// not, a port) or a reset fails.
func (s *Sandbox) Recycle(ctx context.Context) error {
	s.mu.Lock()
	busy := s.stopped || len(s.running) > 0
	s.mu.Unlock()
	if busy || len(s.procs.List()) > 0 || s.ports.count() > 0 {
		return errBusy
	}
	err := s.home.empty()
	if s.iso != nil {
		err = errors.Join(err, s.iso.reset(ctx))
	}
	return err
}
