package oci

import (
	"context"
	"errors"
	"io/fs"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
)

var _ adapter.Pauser = (*Sandbox)(nil)

// Pause freezes the container's processes, the agent's included (the runtime's pause: the cgroup
// freezer under runc and crun, gVisor's own under runsc) until Resume; commands wait on the frozen
// agent meanwhile, and host-side file calls go on.
func (s *Sandbox) Pause(ctx context.Context) error {
	if s.isStopped() {
		return errs.New(errs.SandboxUnavailable, "oci pause", "", "sandbox %s is stopped", s.rec.ID)
	}
	return setPaused(ctx, s.rt, s.rec.ID, true)
}

// Resume thaws what Pause froze.
func (s *Sandbox) Resume(ctx context.Context) error {
	if s.isStopped() {
		return errs.New(errs.SandboxUnavailable, "oci resume", "", "sandbox %s is stopped", s.rec.ID)
	}
	return setPaused(ctx, s.rt, s.rec.ID, false)
}

// SetPaused pauses or resumes the sandbox id of cfg's state directory without attaching to it (a
// paused sandbox cannot be attached to). Errors: errs.NotFound for no such sandbox,
// errs.SandboxUnavailable when it is not running.
func SetPaused(ctx context.Context, cfg Config, id string, paused bool) error {
	if !validID(id) {
		return errs.New(errs.InvalidInput, "oci pause", "", "bad sandbox id %q", id)
	}
	lay := layoutOf(cfg.stateDir())
	rec, err := lay.readRecord(id)
	if errors.Is(err, fs.ErrNotExist) {
		return errs.New(errs.NotFound, "oci pause", "", "no oci sandbox %s in %s", id, lay.dir)
	}
	if err != nil {
		return errs.Wrap(errs.Internal, "oci pause", "", err)
	}
	c := rec.Config
	c.StateDir = cfg.stateDir()
	rt, err := recordRuntime(c, rec)
	if err != nil {
		return err
	}
	return setPaused(ctx, rt, id, paused)
}

// setPaused runs the runtime's pause or resume on sandbox id's container; the state it asks for
// already is no error (asked of the runtime only when the verb fails: one runtime call otherwise).
func setPaused(ctx context.Context, rt *runtimeBin, id string, paused bool) error {
	cid := containerID(id)
	want, verb := statePaused, "pause"
	if !paused {
		want, verb = specs.StateRunning, "resume"
	}
	_, err := rt.output(ctx, verb, cid)
	if err == nil {
		return nil
	}
	st, serr := rt.state(ctx, cid)
	switch {
	case serr != nil:
		return serr
	case st.Status == want:
		return nil
	case st.Status != specs.StateRunning && st.Status != statePaused:
		return errs.New(errs.SandboxUnavailable, "oci "+verb, "", "sandbox %s is not running (%s)", id, orGone(st.Status))
	}
	return errs.Wrap(errs.SandboxUnavailable, "oci "+verb, "", err)
}

// statePaused is the status runc, crun and runsc report for a paused container (runtime-spec
// names no such state).
const statePaused specs.ContainerState = "paused"
