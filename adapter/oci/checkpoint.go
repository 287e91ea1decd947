package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/errs"
)

var _ adapter.Checkpointer = (*Sandbox)(nil)

// A checkpoint directory (Checkpoint, Restore):
//
//	DIR/memory/         the runtime's image of the container: every process with its memory,
//	                    the kernel's state, /tmp and the other memory file systems (runsc)
//	DIR/workspace/      the workspace and HOME at the moment of the image (adapter.CopyTree)
//	DIR/home/
//	DIR/checkpoint.json what the restore needs (checkpoint), written last and atomically: a
//	                    directory without it is not a checkpoint (a Checkpoint that failed midway)
const (
	checkpointFile = "checkpoint.json"
	memoryImage    = "checkpoint.img" // runsc's file in DIR/memory
)

// checkpoint is DIR/checkpoint.json.
type checkpoint struct {
	dir string // where it was read from (not stored)

	Version int `json:"version"`
	// Runtime and RuntimeVersion: a restore needs the same runtime build (gVisor's image format
	// is its own), Platform the same gVisor platform.
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtimeVersion"`
	Platform       string `json:"platform,omitempty"`
	// Root and Agent name the root file system tree and the agent binary the processes ran
	// from, relative to the state directory's oci directory: a restore needs the same files.
	Root  string `json:"root"`
	Agent string `json:"agent,omitempty"`
	// Config is the source sandbox's configuration (without its workspace and state directory).
	Config   Config   `json:"config"`
	ImageEnv []string `json:"imageEnv,omitempty"`
	// MemorySHA256 and MemoryBytes are those of DIR/memory/checkpoint.img, checked by Restore.
	MemorySHA256 string `json:"memorySha256"`
	MemoryBytes  int64  `json:"memoryBytes"`
	// Workspace and Home describe the trees of DIR/workspace and DIR/home (treeDigest): every
	// restored sandbox's copies are checked against them before it starts.
	Workspace map[string]string `json:"workspace"`
	Home      map[string]string `json:"home"`
	Source    string            `json:"source"` // the sandbox id it was taken of
	Created   time.Time         `json:"created"`
}

const checkpointVersion = 1

func (c *checkpoint) memory() string { return filepath.Join(c.dir, "memory") }

// sameRoot checks that root is the tree and agent the checkpoint's processes ran from.
func (c *checkpoint) sameRoot(lay layout, root sandboxRoot) error {
	if rel(lay, root.dir) != c.Root || rel(lay, root.agentFile) != c.Agent {
		return errs.New(errs.SandboxUnavailable, "oci restore", "",
			"checkpoint %s was taken on root file system %s (agent %q); this state directory's is %s (agent %q): a restore needs the same files (the same image and sandboxer build)",
			c.dir, c.Root, c.Agent, rel(lay, root.dir), rel(lay, root.agentFile))
	}
	return nil
}

// rel is path relative to lay's directory ("" for "").
func rel(lay layout, path string) string {
	if path == "" {
		return ""
	}
	if r, err := filepath.Rel(lay.dir, path); err == nil {
		return r
	}
	return path
}

// Checkpoint saves the sandbox in dir, which it makes (it must not exist): its processes with
// their memory (gVisor's checkpoint: runsc only), then its workspace and HOME as they are at that
// moment. The container stops for the image and is restored from it in place at once, so the
// sandbox goes on where it was; Restore makes new sandboxes from dir, each independent.
//
// What does not survive: open TCP connections leave the sandbox's network (the restored
// processes see them reset), a command running in the foreground at the checkpoint loses its
// caller (its result is an error; the process goes on in the restored sandboxes), and this
// handle's streams to the agent are made anew. Background processes, listeners inside the sandbox,
// /tmp and the processes' memory survive.
//
// Errors: errs.SandboxUnavailable (runc and crun: CRIU's check fails here or checkpoints are not
// supported by this adapter on them, the message says which; a stopped sandbox; the runtime
// failed: if the restore in place failed, the sandbox is gone and the error says so),
// errs.InvalidInput (dir exists).
func (s *Sandbox) Checkpoint(ctx context.Context, dir string) (err error) {
	const op = "oci checkpoint"
	if err := s.checkOpen("checkpoint"); err != nil {
		return err
	}
	if s.rt.name != Runsc {
		return errs.New(errs.SandboxUnavailable, op, "", "checkpoint with memory needs gVisor (--runtime runsc); %s would need CRIU: %s", s.rt.name, CRIUStatus(ctx))
	}
	s.checkpoints.Lock()
	defer s.checkpoints.Unlock()
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errs.New(errs.InvalidInput, op, dir, "%s exists: a checkpoint goes to a new directory", dir)
		}
		return errs.Wrap(errs.InvalidInput, op, dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	version, err := s.rt.version(ctx)
	if err != nil {
		return errs.Wrap(errs.SandboxUnavailable, op, "", err)
	}
	ck := checkpoint{dir: dir, Version: checkpointVersion, Runtime: s.rt.name, RuntimeVersion: version,
		Platform: s.rec.Platform, Config: s.rec.Config, ImageEnv: s.rec.ImageEnv, Source: s.rec.ID, Created: time.Now().UTC()}
	ck.Config.Workspace, ck.Config.StateDir, ck.Config.KeepWorkspace = "", "", false
	if ck.Root, ck.Agent, err = s.rootFiles(); err != nil {
		return errs.Wrap(errs.Internal, op, "", err)
	}
	if err := os.Mkdir(ck.memory(), 0o700); err != nil {
		return errs.Wrap(errs.Internal, op, "", err)
	}
	cid := containerID(s.rec.ID)
	// The runtime's execs hold descriptors of the host processes that made them, which a
	// restore cannot give back: they end first (their callers' commands are lost, as documented).
	if a := s.agent.Current(); a != nil && a.cmd != nil {
		s.agent.Set(nil)()
	}
	if err := s.endExecs(ctx, cid); err != nil {
		return errs.Wrap(errs.SandboxUnavailable, op, "", err)
	}
	if _, err := s.rt.output(ctx, "checkpoint", "--image-path", ck.memory(), cid); err != nil {
		// runsc checkpoints, then ends the container: a failure before that leaves it running.
		if s.rt.running(ctx, cid) {
			return errs.Wrap(errs.SandboxUnavailable, op, "", err)
		}
		return errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("%w (the sandbox is gone)", err))
	}
	// The container is stopped: its files stand still for the copy.
	s.agent.Set(nil)() // the container's own stdio ended with it
	s.held.Close()
	s.held = nil
	copyErr := s.copyFiles(ctx, &ck)
	// Back in place, whatever the copy did.
	s.rt.delete(ctx, cid)
	removeCgroups(cgroupPath(s.rec.ID))
	_, reach, err := useUserNS(s.cfg, s.lay)
	if err == nil {
		s.held, _, err = s.rt.restore(ctx, cid, filepath.Join(s.lay.sandbox(s.rec.ID), "bundle"), ck.memory(), reach)
	}
	if err != nil {
		return errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("the sandbox was saved but did not come back (it is gone): %w", err))
	}
	if copyErr != nil {
		return copyErr
	}
	if ck.MemorySHA256, ck.MemoryBytes, err = hashFile(filepath.Join(ck.memory(), memoryImage)); err != nil {
		return errs.Wrap(errs.Internal, op, "", err)
	}
	data, err := json.MarshalIndent(ck, "", "  ")
	if err != nil {
		return errs.Wrap(errs.Internal, op, "", err)
	}
	if err := writeAtomic(filepath.Join(dir, checkpointFile), append(data, '\n'), 0o600); err != nil {
		return errs.Wrap(errs.Internal, op, "", err)
	}
	return nil
}

// copyFiles copies the stopped sandbox's workspace and HOME into ck's directory and records
// their digests.
func (s *Sandbox) copyFiles(ctx context.Context, ck *checkpoint) error {
	for _, d := range []struct {
		from, to string
		digest   *map[string]string
	}{{s.rec.Workspace, "workspace", &ck.Workspace}, {s.rec.Home, "home", &ck.Home}} {
		to := filepath.Join(ck.dir, d.to)
		if err := os.Mkdir(to, 0o700); err != nil {
			return errs.Wrap(errs.Internal, "oci checkpoint", "", err)
		}
		if d.from != "" {
			from, err := os.OpenRoot(d.from)
			if err != nil {
				return errs.Wrap(errs.Internal, "oci checkpoint", "", err)
			}
			err = copyInto(ctx, from, to, s.cfg.forkMaxFileBytes())
			from.Close()
			if err != nil {
				return err
			}
		}
		var err error
		if *d.digest, err = treeDigest(to); err != nil {
			return errs.Wrap(errs.Internal, "oci checkpoint", "", err)
		}
	}
	return nil
}

// treeDigest describes the tree under dir, path by path (slash-separated, relative): "dir", a
// regular file's "sha256:HEX", a symbolic link's "link:TARGET". Nothing else is in a copy that
// adapter.CopyTree made.
func treeDigest(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link:" + target
		case d.Type().IsRegular():
			sum, _, err := hashFile(p)
			if err != nil {
				return err
			}
			out[rel] = "sha256:" + sum
		default:
			out[rel] = "other:" + d.Type().String()
		}
		return nil
	})
	return out, err
}

// verifyTree checks the tree under dir against want (treeDigest): errs.VerifyFailed naming the
// paths that are missing, differ or were not in it (the first 20).
func verifyTree(dir string, want map[string]string, what string) error {
	got, err := treeDigest(dir)
	if err != nil {
		return errs.Wrap(errs.Internal, "oci restore", "", err)
	}
	var bad []string
	for p, w := range want {
		switch g, ok := got[p]; {
		case !ok:
			bad = append(bad, p+" (missing)")
		case g != w:
			bad = append(bad, p+" (differs)")
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			bad = append(bad, p+" (not in the checkpoint)")
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	n := len(bad)
	if n > 20 {
		bad = append(bad[:20], fmt.Sprintf("and %d more", n-20))
	}
	return errs.New(errs.VerifyFailed, "oci restore", "", "the restored %s is not the checkpoint's: %s", what, strings.Join(bad, ", "))
}

// verifyFiles checks a restored sandbox's workspace and HOME against ck, before it starts.
func (s *Sandbox) verifyFiles(ck *checkpoint) error {
	if err := verifyTree(s.rec.Workspace, ck.Workspace, "workspace"); err != nil {
		return err
	}
	return verifyTree(s.rec.Home, ck.Home, "HOME")
}

// rootFiles returns the root file system tree and agent binary of the sandbox's container,
// relative to the oci directory (from its bundle).
func (s *Sandbox) rootFiles() (root, agentFile string, err error) {
	if s.spec == nil || s.spec.Root == nil {
		return "", "", errors.New("the sandbox's bundle has no root")
	}
	root = rel(s.lay, s.spec.Root.Path)
	for _, m := range s.spec.Mounts {
		if m.Destination == agent.BroughtPath {
			agentFile = rel(s.lay, m.Source)
		}
	}
	return root, agentFile, nil
}

// Restore makes a new sandbox from the checkpoint in dir (see Checkpoint): a copy of the
// checkpoint's workspace and HOME, and its processes restored with their memory, going on where
// they were. It has the source's configuration but for cfg's StateDir, Persist and
// ForkMaxFileBytes; the checkpoint may be restored any number of times, each restore independent.
// Errors: errs.InvalidInput (dir is not a whole checkpoint), errs.VerifyFailed (its memory image
// is not what was saved), errs.SandboxUnavailable (another runtime build, root file system or
// agent than the checkpoint's; the runtime failed).
func Restore(ctx context.Context, cfg Config, dir string) (*Sandbox, error) {
	const op = "oci restore"
	ck, err := readCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	got, _, err := hashFile(filepath.Join(ck.memory(), memoryImage))
	if err != nil || got != ck.MemorySHA256 {
		return nil, errs.New(errs.VerifyFailed, op, dir, "checkpoint %s: its memory image is not what was saved (%s)", dir, orError(err, "SHA-256 differs"))
	}
	c := ck.Config
	c.StateDir, c.Persist, c.ForkMaxFileBytes = cfg.StateDir, cfg.Persist, cfg.ForkMaxFileBytes
	c.Runtime, c.RunscPlatform = ck.Runtime, ck.Platform
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rt, err := findRuntime(c)
	if err != nil {
		return nil, err
	}
	if v, err := rt.version(ctx); err != nil || v != ck.RuntimeVersion {
		return nil, errs.New(errs.SandboxUnavailable, op, "", "checkpoint %s was taken with %q; %s here is %q: a restore needs the same build", dir, ck.RuntimeVersion, rt.path, orError(err, v))
	}
	var src origin
	src.ck = &ck
	if src.workspace, err = os.OpenRoot(filepath.Join(dir, "workspace")); err != nil {
		return nil, errs.Wrap(errs.InvalidInput, op, dir, err)
	}
	defer src.workspace.Close()
	if src.home, err = os.OpenRoot(filepath.Join(dir, "home")); err != nil {
		return nil, errs.Wrap(errs.InvalidInput, op, dir, err)
	}
	defer src.home.Close()
	return create(ctx, c, src)
}

func orError(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// readCheckpoint reads dir's checkpoint.json.
func readCheckpoint(dir string) (checkpoint, error) {
	const op = "oci restore"
	var ck checkpoint
	data, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if err != nil {
		return ck, errs.New(errs.InvalidInput, op, dir, "%s is not a whole checkpoint: %v", dir, err)
	}
	if err := json.Unmarshal(data, &ck); err != nil {
		return ck, errs.New(errs.InvalidInput, op, dir, "%s: %s: %v", dir, checkpointFile, err)
	}
	if ck.Version != checkpointVersion {
		return ck, errs.New(errs.InvalidInput, op, dir, "%s: checkpoint version %d; this build reads %d", dir, ck.Version, checkpointVersion)
	}
	ck.dir = dir
	return ck, nil
}

// hashFile returns the hex SHA-256 and size of the file at name.
func hashFile(name string) (string, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// heldInit holds the stdio of a restored container's main agent. The agent goes on from its
// memory, in the middle of serving the stream of the handle that created the sandbox, which is
// gone: no client can take that stream over, so this handle's streams are runtime execs (as an
// attached handle's), and the main agent's stdin is held open, so that it ends when the holder
// does, as a created sandbox's agent ends with its creator's stream (a persistent one stays).
// Whatever it still writes is read and dropped. Close is idempotent; a nil heldInit is closed.
type heldInit struct {
	p      *pipes
	stderr *headBuffer
	once   sync.Once
}

func holdInit(p *pipes) *heldInit {
	h := &heldInit{p: p, stderr: newHeadBuffer(1024)}
	go h.stderr.readFrom(p.errR)
	go io.Copy(io.Discard, p.outR)
	return h
}

// Close closes the agent's stdin and this process's other ends.
func (h *heldInit) Close() error {
	if h == nil {
		return nil
	}
	h.once.Do(func() {
		h.p.inW.Close()
		h.p.outR.Close()
	})
	return nil
}

// CRIUStatus says whether CRIU (runc's and crun's checkpoint) works on this machine: "criu VERSION:
// check passed", or why not (not installed, or the first errors of `criu check`).
func CRIUStatus(ctx context.Context) string {
	path, err := exec.LookPath("criu")
	if err != nil {
		return "criu is not installed (Debian: apt-get install criu)"
	}
	out, err := exec.CommandContext(ctx, path, "check").CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 2 {
			lines = lines[:2]
		}
		return "`criu check` fails on this machine: " + strings.Join(lines, "; ")
	}
	return "criu check passed, but this adapter checkpoints runc and crun containers only through gVisor for now"
}

// endExecs kills the processes of container cid that runtime execs started (the exec'd agents,
// with what they run: every process whose topmost ancestor is not PID 1) and waits until they
// are gone. Background processes are PID 1's (the agent relays their start to it) and stay.
func (s *Sandbox) endExecs(ctx context.Context, cid string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		// The table (UID PID PPID C TTY STIME TIME CMD): runsc's json is the pids alone.
		out, err := s.rt.output(ctx, "ps", cid)
		if err != nil {
			return err
		}
		parent := map[int]int{}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			pid, err1 := strconv.Atoi(f[1])
			ppid, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%s ps: unexpected line %q", s.rt.name, line)
			}
			parent[pid] = ppid
		}
		var execs []int
		for pid := range parent {
			top := pid
			for n := 0; parent[top] != 0 && n < len(parent); n++ {
				top = parent[top]
			}
			if top != 1 {
				execs = append(execs, pid)
			}
		}
		if len(execs) == 0 {
			return nil
		}
		for _, pid := range execs {
			_, _ = s.rt.output(ctx, "kill", "--pid", strconv.Itoa(pid), cid, "KILL")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the runtime's execs in the sandbox did not end: pids %v", execs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
