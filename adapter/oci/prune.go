package oci

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/errs"
)

// Info describes one sandbox of the state directory.
type Info struct {
	ID        string
	Runtime   string
	Status    string // the runtime's status ("running", "stopped", ...), "gone" when it has no container
	Owner     string // hostname:pid of the creator
	Persist   bool
	Workspace string
	Created   time.Time
}

// List returns the sandboxes of cfg's state directory with their runtime status.
func List(ctx context.Context, cfg Config) ([]Info, error) {
	lay := layoutOf(cfg.stateDir())
	recs, err := lay.records()
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(recs))
	for _, r := range recs {
		out = append(out, Info{ID: r.ID, Runtime: r.Runtime, Status: status(ctx, cfg, r), Owner: r.Owner,
			Persist: r.Persist, Workspace: r.Workspace, Created: r.Created})
	}
	return out, nil
}

// status is the runtime's status of r's container, "gone" when there is none, "unknown" when the
// runtime cannot say.
func status(ctx context.Context, cfg Config, r record) string {
	rt, err := recordRuntime(cfg, r)
	if err != nil {
		return "unknown"
	}
	st, err := rt.state(ctx, containerID(r.ID))
	if err != nil {
		return "unknown"
	}
	return orGone(st.Status)
}

// recordRuntime is the runtime a record names, under cfg's state directory.
func recordRuntime(cfg Config, r record) (*runtimeBin, error) {
	cfg.Runtime, cfg.RuntimePath, cfg.AllowNetwork = r.Runtime, r.RuntimePath, r.AllowNetwork
	if _, err := os.Stat(r.RuntimePath); err != nil {
		cfg.RuntimePath = "" // moved since: look it up again
	}
	rt, err := findRuntime(cfg)
	if err != nil {
		return nil, err
	}
	rt.setPlatform(r.Platform)
	return rt, nil
}

// records reads every sandbox record of the state directory. A directory without a readable
// record is skipped (see Prune).
func (l layout) records() ([]record, error) {
	ents, err := os.ReadDir(l.sandboxes())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "oci list", "", err)
	}
	var out []record
	for _, e := range ents {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		if r, err := l.readRecord(e.Name()); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// PruneOptions configure Prune.
type PruneOptions struct {
	// All removes every sandbox, persistent ones and those of live processes included.
	All bool
	// KeepImages leaves the unpacked trees of Config.Image (images/) that no sandbox uses.
	KeepImages bool
}

// Prune removes what processes that died without stopping their sandboxes left behind: for each
// sandbox that is not persistent and whose creator is gone, its container (killed and deleted),
// its cgroups, its directory and the workspace it made (unless it was to be kept); then
// containers of the runtimes' state that belong to no sandbox, and sandbox directories a crash
// left without a record; then, unless KeepImages, the unpacked trees of images (images/<hex>) that
// no sandbox's record names, and what crashed unpacks and prunes left there. It returns the ids
// of the sandboxes it removed, and "image:sha256:HEX" for each tree. A tree is removed under the
// exclusive lock of its digest, which a sandbox being created holds shared from finding the tree
// until its record names it: a tree in use is never removed, and a create after the prune
// unpacks the image again. Errors: errs.SandboxUnavailable when a runtime cannot be run,
// errs.Internal.
func Prune(ctx context.Context, cfg Config, o PruneOptions) ([]string, error) {
	lay := layoutOf(cfg.stateDir())
	recs, err := lay.records()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errList []error
	known := map[string]bool{}
	for _, r := range recs {
		known[r.ID] = true
		if !o.All && !abandoned(ctx, cfg, r) {
			continue
		}
		rt, err := recordRuntime(cfg, r)
		if err != nil {
			errList = append(errList, fmt.Errorf("sandbox %s: %w", r.ID, err))
			continue
		}
		if err := removeSandbox(ctx, rt, lay, r); err != nil {
			errList = append(errList, fmt.Errorf("sandbox %s: %w", r.ID, err))
			continue
		}
		removed = append(removed, r.ID)
	}
	// Directories without a record: a crash between making the directory and writing the record
	// (a minute old, so that a create in progress is left alone).
	if ents, err := os.ReadDir(lay.sandboxes()); err == nil {
		for _, e := range ents {
			if known[e.Name()] || !validID(e.Name()) {
				continue
			}
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
				os.RemoveAll(lay.sandbox(e.Name()))
				removeCgroups(cgroupPath(e.Name()))
				removed = append(removed, e.Name())
			}
		}
	}
	// Containers of the runtimes' state that no record names.
	for _, name := range Runtimes {
		if _, err := os.Stat(lay.runtimeRoot(name)); err != nil {
			continue
		}
		c := cfg
		c.Runtime, c.RuntimePath = name, ""
		rt, err := findRuntime(c)
		if err != nil {
			continue
		}
		for _, cid := range rt.list(ctx) {
			id, ok := strings.CutPrefix(cid, "sandboxer-")
			if !ok || known[id] || !validID(id) {
				continue
			}
			if err := rt.delete(ctx, cid); err != nil {
				errList = append(errList, err)
				continue
			}
			removeCgroups(cgroupPath(id))
			removed = append(removed, id)
		}
	}
	if !o.KeepImages {
		trees, err := pruneImages(lay)
		if err != nil {
			errList = append(errList, err)
		}
		for _, t := range trees {
			removed = append(removed, "image:sha256:"+t)
		}
	}
	return removed, errs.Wrap(errs.SandboxUnavailable, "oci prune", "", errors.Join(errList...))
}

// usedImages returns the trees (hex digests) the records of lay name; all false when a record
// of an image does not say its tree (made before records did): then no tree is known unused.
func usedImages(lay layout) (map[string]bool, bool, error) {
	recs, err := lay.records()
	if err != nil {
		return nil, false, err
	}
	used := map[string]bool{}
	for _, r := range recs {
		if r.Config.Image != "" && r.ImageTree == "" {
			return nil, false, nil
		}
		used[r.ImageTree] = true
	}
	// A directory without a readable record may be a create writing its record: its lease
	// guards the tree until then, and a directory left without one by a crash names nothing.
	return used, true, nil
}

// pruneImages removes the image trees of lay that no record names, each under the exclusive
// lock of its digest (tried, not waited for: a held lock is a sandbox being created or an
// unpack), checking the records again under it; the tree is renamed away whole first, so that a
// create never sees a half-removed one. It also removes what crashed unpacks (.unpack-HEX,
// .save-HEX.tar) and prunes (.remove-*) left, and the lock files of digests without a tree.
// It returns the digests of the trees removed.
func pruneImages(lay layout) ([]string, error) {
	dir := lay.images()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "oci prune", "", err)
	}
	used, known, err := usedImages(lay)
	if err != nil || !known {
		return nil, err
	}
	var removed []string
	var errList []error
	digests := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".remove-"):
			rootfs.RemoveTree(filepath.Join(dir, name)) // a prune that crashed after its rename
		case validDigestHex(name):
			digests[name] = true
		default:
			for _, f := range []string{".unpack-", "."} { // .unpack-HEX, .HEX.lock
				if h, ok := strings.CutPrefix(name, f); ok && validDigestHex(strings.TrimSuffix(h, ".lock")) {
					digests[strings.TrimSuffix(h, ".lock")] = true
				}
			}
			if h, ok := strings.CutPrefix(name, ".save-"); ok && validDigestHex(strings.TrimSuffix(h, ".tar")) {
				digests[strings.TrimSuffix(h, ".tar")] = true
			}
		}
	}
	for h := range digests {
		if used[h] {
			continue
		}
		tree := filepath.Join(dir, h)
		unlock, err := flockPath(imageLock(dir, h), syscall.LOCK_EX, 0)
		if errors.Is(err, errLocked) {
			continue // in use: a create's lease, or an unpack
		}
		if err != nil {
			errList = append(errList, err)
			continue
		}
		if now, known, err := usedImages(lay); err != nil || !known || now[h] {
			unlock()
			continue // a create wrote its record before this had the lock
		}
		gone := ""
		if isDir(tree) {
			gone = filepath.Join(dir, ".remove-"+h+"-"+newID())
			if err := os.Rename(tree, gone); err != nil {
				unlock()
				errList = append(errList, err)
				continue
			}
		}
		rootfs.RemoveTree(filepath.Join(dir, ".unpack-"+h))
		os.Remove(filepath.Join(dir, ".save-"+h+".tar"))
		os.Remove(imageLock(dir, h)) // held: a waiter locks the file made anew (flockPath)
		unlock()
		if gone != "" {
			if err := rootfs.RemoveTree(gone); err != nil {
				errList = append(errList, err)
			}
			removed = append(removed, h)
		}
	}
	slices.Sort(removed)
	return removed, errs.Wrap(errs.Internal, "oci prune", "", errors.Join(errList...))
}

// validDigestHex says whether s is the hex of a sha256 digest (an image tree's name).
func validDigestHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// list returns the ids of the runtime's containers.
func (r *runtimeBin) list(ctx context.Context) []string {
	out, err := r.output(ctx, "list", "--format", "json")
	if err != nil {
		return nil
	}
	var states []specs.State
	if json.Unmarshal(out, &states) != nil {
		return nil
	}
	ids := make([]string, 0, len(states))
	for _, s := range states {
		ids = append(ids, s.ID)
	}
	return ids
}

// abandoned reports whether r was left behind: not persistent, and either its creator (a process
// on this host) is gone, or its creator is unknown here and its container no longer runs. A
// sandbox of a live process is never abandoned, whatever its state.
func abandoned(ctx context.Context, cfg Config, r record) bool {
	if r.Persist {
		return false
	}
	host, pidText, ok := strings.Cut(r.Owner, ":")
	me, _ := os.Hostname()
	pid, err := strconv.Atoi(pidText)
	if !ok || host != me || err != nil || pid <= 0 {
		return status(ctx, cfg, r) != string(specs.StateRunning)
	}
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	// The pid may have been reused by another process since.
	return r.OwnerStart != 0 && startTime(pid) != r.OwnerStart
}

// RuntimeReport is what Probe found out about one runtime.
type RuntimeReport struct {
	Name    string   `json:"name"`
	Path    string   `json:"path,omitempty"`
	Version string   `json:"version,omitempty"`
	Works   bool     `json:"works"`           // a probe sandbox started and ran a command
	Error   string   `json:"error,omitempty"` // why not
	Layers  []string `json:"layers,omitempty"`
	Kernel  string   `json:"kernel,omitempty"` // uname -r inside the sandbox
	// Platform is gVisor's platform (runsc only): the one sandboxes run on here, and why.
	Platform *PlatformChoice `json:"platform,omitempty"`
	// Checkpoint says whether a sandbox can be checkpointed with its memory (Sandbox.Checkpoint)
	// under this runtime here: "works" (runsc: the probe sandbox was checkpointed), or why not.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// Probe reports, for each runtime this adapter knows, whether it is installed, its version, and
// what it enforces here: it starts a sandbox with cfg and that runtime, runs uname, and reports
// the isolation layers that were in force (see Sandbox.Capabilities and adapter.Isolation). For
// runsc it decides gVisor's platform afresh (a new probe of kvm where /dev/kvm exists, bounded
// by DefaultPlatformProbeTimeout; the decision replaces the state directory's) and reports it.
func Probe(ctx context.Context, cfg Config) []RuntimeReport {
	var out []RuntimeReport
	for _, name := range Runtimes {
		c := cfg
		c.Runtime, c.RuntimePath, c.Persist, c.Workspace = name, "", false, ""
		rep := RuntimeReport{Name: name}
		rt, err := findRuntime(c)
		if err != nil {
			rep.Error = errs.As(err).Msg
			out = append(out, rep)
			continue
		}
		rep.Path = rt.path
		if v, err := rt.version(ctx); err == nil {
			rep.Version = v
		}
		if name == Runsc {
			choice, err := choosePlatform(ctx, c, rt, platformProbe{fresh: true})
			if err != nil {
				rep.Error = err.Error()
				out = append(out, rep)
				continue
			}
			rep.Platform = &choice
		}
		sb, err := New(ctx, c)
		if err != nil {
			rep.Error = err.Error()
			out = append(out, rep)
			continue
		}
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"uname", "-r"}, Timeout: 30 * time.Second})
		if err == nil && res.ExitCode == 0 {
			rep.Works, rep.Layers, rep.Kernel = true, res.Isolation.Layers, strings.TrimSpace(string(res.Stdout))
			rep.Checkpoint = probeCheckpoint(ctx, sb)
		} else if err != nil {
			rep.Error = err.Error()
		} else {
			rep.Error = fmt.Sprintf("uname exited %d: %s", res.ExitCode, res.Stderr)
		}
		sb.Stop(context.WithoutCancel(ctx))
		out = append(out, rep)
	}
	return out
}

// leftovers reports what of sandbox id is left on the host (its directory, its runtime state,
// the mount and loop device of its workspace's file system, its cgroups); the tests check that Stop and Prune leave nothing.
func leftovers(ctx context.Context, cfg Config, id string) []string {
	lay := layoutOf(cfg.stateDir())
	var out []string
	if _, err := os.Stat(lay.sandbox(id)); err == nil {
		out = append(out, lay.sandbox(id))
	}
	for _, name := range Runtimes {
		if _, err := os.Stat(filepath.Join(lay.runtimeRoot(name))); err != nil {
			continue
		}
		c := cfg
		c.Runtime, c.RuntimePath = name, ""
		if rt, err := findRuntime(c); err == nil {
			if st, err := rt.state(ctx, containerID(id)); err == nil && st.Status != "" {
				out = append(out, name+" container "+containerID(id))
			}
		}
	}
	for _, m := range []string{lay.workspace(id), lay.diskMount(id)} {
		if diskcap.MountedAt(m) {
			out = append(out, "mount "+m)
		}
	}
	for _, dev := range diskcap.Loops(lay.disk(id)) {
		out = append(out, "loop device "+dev+" of "+lay.disk(id))
	}
	return append(out, leftoverCgroups(cgroupPath(id))...)
}

// Remove stops and removes sandbox id of cfg's state directory, running or not, as Stop does:
// its container, cgroups and directory, and the workspace it made unless it was to be kept.
// Errors: errs.InvalidInput (a malformed id), errs.NotFound (no such sandbox),
// errs.SandboxUnavailable (its runtime cannot be run).
func Remove(ctx context.Context, cfg Config, id string) error {
	if !validID(id) {
		return errs.New(errs.InvalidInput, "oci remove", "", "bad sandbox id %q", id)
	}
	lay := layoutOf(cfg.stateDir())
	r, err := lay.readRecord(id)
	if errors.Is(err, fs.ErrNotExist) {
		return errs.New(errs.NotFound, "oci remove", "", "no oci sandbox %s in %s", id, lay.dir)
	}
	if err != nil {
		return errs.Wrap(errs.Internal, "oci remove", "", err)
	}
	rt, err := recordRuntime(cfg, r)
	if err != nil {
		return err
	}
	return removeSandbox(ctx, rt, lay, r)
}

// probeCheckpoint checkpoints sb into a temporary directory: "works", or why not.
func probeCheckpoint(ctx context.Context, sb *Sandbox) string {
	if sb.rt.name != Runsc {
		return "no: " + CRIUStatus(ctx)
	}
	tmp, err := os.MkdirTemp("", "sandboxer-checkpoint-probe-")
	if err != nil {
		return "no: " + err.Error()
	}
	defer os.RemoveAll(tmp)
	if err := sb.Checkpoint(ctx, filepath.Join(tmp, "ck")); err != nil {
		return "no: " + err.Error()
	}
	return "works"
}
