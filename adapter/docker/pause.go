package docker

import (
	"context"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

var _ adapter.Pauser = (*Sandbox)(nil)

// Pause freezes the container's processes (the engine's pause: the cgroup freezer), the agent's
// included: until Resume, commands fail (the daemon refuses an exec into a paused container) or
// wait on the frozen agent. Host-side file calls go on.
func (s *Sandbox) Pause(ctx context.Context) error { return setPaused(ctx, s.eng, s.containerID, true) }

// Resume thaws what Pause froze.
func (s *Sandbox) Resume(ctx context.Context) error {
	return setPaused(ctx, s.eng, s.containerID, false)
}

// SetPaused pauses or resumes the sandbox id of cfg's daemon without attaching to it (a paused
// sandbox cannot be attached to). Errors: errs.NotFound for no such sandbox, errs.SandboxUnavailable
// when the daemon cannot (not running).
func SetPaused(ctx context.Context, cfg Config, id string, paused bool) error {
	eng, err := newEngine(ctx, cfg.Host)
	if err != nil {
		return err
	}
	defer eng.Close()
	ins, err := eng.ContainerInspect(ctx, namePrefix+id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return errs.New(errs.NotFound, "docker pause", "", "no sandbox %s", id)
		}
		return classify("docker pause", err)
	}
	c := ins.Container
	if c.Config == nil || c.Config.Labels[LabelID] != id || c.Config.Labels[LabelManaged] != "true" {
		return errs.New(errs.NotFound, "docker pause", "", "container %s is not a sandboxer sandbox", namePrefix+id)
	}
	return setPaused(ctx, eng, c.ID, paused)
}

// setPaused pauses or unpauses container cid; the state it asks for already is no error (asked
// of the daemon only when the call fails: one call otherwise).
func setPaused(ctx context.Context, eng engine, cid string, paused bool) error {
	var err error
	if paused {
		_, err = eng.ContainerPause(ctx, cid, client.ContainerPauseOptions{})
	} else {
		_, err = eng.ContainerUnpause(ctx, cid, client.ContainerUnpauseOptions{})
	}
	if err == nil {
		return nil
	}
	ins, ierr := eng.ContainerInspect(ctx, cid, client.ContainerInspectOptions{})
	switch st := ins.Container.State; {
	case ierr != nil:
		return classify("docker pause", ierr)
	case st == nil || !st.Running:
		return errs.New(errs.SandboxUnavailable, "docker pause", "", "container %s is not running", cid)
	case st.Paused == paused:
		return nil
	}
	return classify("docker pause", err)
}
