package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/errs"
)

// installHint says how to get a runtime on Debian.
var installHint = map[string]string{
	Runc:  "apt-get install runc",
	Runsc: "apt-get install runsc",
	Crun:  "apt-get install crun",
}

// runtimeBin is one OCI runtime binary with sandboxer's own state directory as its --root.
type runtimeBin struct {
	name  string
	path  string
	root  string
	flags []string // global flags after --root
	// detach are mounts hidden from the runtime: every command of it runs in a private mount
	// namespace without them (crun on a hybrid cgroup host: the v2 hierarchy).
	detach []string
	// platform is gVisor's platform (runsc; "" for the others, or runsc's default unchosen).
	platform string
}

// usePlatform decides gVisor's platform of a new runsc sandbox (choosePlatform) and passes it to
// every command of r; other runtimes have none (the zero choice).
func (r *runtimeBin) usePlatform(ctx context.Context, cfg Config) (PlatformChoice, error) {
	if r.name != Runsc {
		return PlatformChoice{}, nil
	}
	c, err := choosePlatform(ctx, cfg, r, platformProbe{})
	if err != nil {
		return c, err
	}
	r.setPlatform(c.Platform)
	return c, nil
}

// setPlatform passes --platform=name to every command of r (runsc).
func (r *runtimeBin) setPlatform(name string) {
	if r.name == Runsc && name != "" {
		r.platform = name
		r.flags = append(r.flags, "--platform="+name)
	}
}

// findRuntime locates cfg's runtime. A missing binary, or a system other than Linux, is
// errs.SandboxUnavailable naming it.
func findRuntime(cfg Config) (*runtimeBin, error) {
	name := cfg.runtime()
	if err := needLinux(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errs.New(errs.SandboxUnavailable, "oci", "", "the oci adapter runs its runtime as root (rootless containers are not supported)")
	}
	path := cfg.RuntimePath
	if path == "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, errs.New(errs.SandboxUnavailable, "oci", "",
				"OCI runtime %q not found on PATH (%s)", name, installHint[name])
		}
		path = p
	} else if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return nil, errs.New(errs.SandboxUnavailable, "oci", "", "OCI runtime %q: %s is not an executable file", name, path)
	}
	r := &runtimeBin{name: name, path: path, root: layoutOf(cfg.stateDir()).runtimeRoot(name)}
	if name == Crun && hybridCgroup() {
		r.detach = []string{unifiedCgroup}
	}
	if name == Runsc {
		// gVisor's network stack: none (loopback only) or the host's.
		if cfg.AllowNetwork {
			r.flags = append(r.flags, "--network=host")
		} else {
			r.flags = append(r.flags, "--network=none")
		}
	}
	return r, nil
}

func (r *runtimeBin) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--root", r.root}, r.flags...)
	cmd := exec.CommandContext(ctx, r.path, append(full, args...)...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = runtimeEnv()
	return cmd
}

// runtimeEnv is this process's environment without TMPDIR: runsc makes files in the temporary
// directory that its unprivileged sandbox process opens, and a private TMPDIR (in a directory
// others cannot search, as a test's or a CI job's often is) makes every start fail ("cannot read
// client sync file"). The runtimes get the system's /tmp.
func runtimeEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") })
}

// output runs the runtime and returns its standard output; a failure carries its stderr.
func (r *runtimeBin) output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := r.startCmd(cmd, reachPlan{})
	if err == nil {
		err = cmd.Wait()
	}
	out := stdout.Bytes()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", r.name, args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// state returns the runtime's view of container cid; a container the runtime does not know has
// the empty status.
func (r *runtimeBin) state(ctx context.Context, cid string) (specs.State, error) {
	var st specs.State
	out, err := r.output(ctx, "state", cid)
	if err != nil {
		msg := strings.ToLower(err.Error())
		if strings.Contains(msg, "not exist") || strings.Contains(msg, "no such file") {
			return specs.State{}, nil
		}
		return st, errs.Wrap(errs.SandboxUnavailable, "oci state", "", err)
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return st, errs.Wrap(errs.Internal, "oci state", "", fmt.Errorf("%s state: %w", r.name, err))
	}
	return st, nil
}

// running reports whether container cid is running.
func (r *runtimeBin) running(ctx context.Context, cid string) bool {
	st, err := r.state(ctx, cid)
	return err == nil && st.Status == specs.StateRunning
}

// delete kills container cid with everything in it and deletes it. A container that does not
// exist is not an error.
func (r *runtimeBin) delete(ctx context.Context, cid string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := r.output(ctx, "delete", "--force", cid)
	if err != nil {
		if st, serr := r.state(ctx, cid); serr == nil && st.Status == "" {
			return nil
		}
		return errs.Wrap(errs.SandboxUnavailable, "oci delete", "", err)
	}
	return nil
}

// pipes are the three pipes of an agent: the agent's stdin, stdout and stderr, as the sandbox
// (in*, out*, err*) and as the container (the other ends) hold them.
type pipes struct {
	inR, inW, outR, outW, errR, errW *os.File
}

func newPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.inR, p.inW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		p.inR.Close()
		p.inW.Close()
		return nil, err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.inR.Close()
		p.inW.Close()
		p.outR.Close()
		p.outW.Close()
		return nil, err
	}
	return &p, nil
}

// closeChild closes the ends the child process got.
func (p *pipes) closeChild() {
	p.inR.Close()
	p.outW.Close()
	p.errW.Close()
}

// closeOwn closes this process's ends.
func (p *pipes) closeOwn() {
	p.inW.Close()
	p.outR.Close()
	p.errR.Close()
}

// start runs the bundle as container cid, detached, with the agent (the container's process)
// serving this process over the container's stdio, and returns the connection to it and the
// host pid of the container's process (the sandbox's for runsc; 0 if unknown) (reach says
// how the runtime gets to the root file system from a user namespace). The
// runtime's own diagnostics go to the container's stderr, which is read into the connection's
// stderr head: a failed start says why.
func (r *runtimeBin) start(ctx context.Context, cid, bundleDir string, reach reachPlan) (*agentConn, int, error) {
	p, err := newPipes()
	if err != nil {
		return nil, 0, errs.Wrap(errs.Internal, "oci create", "", err)
	}
	conn := newAgentConn(p, nil)
	pid, err := r.launch(ctx, cid, bundleDir, reach, p, conn.stderr, "run")
	if err != nil {
		conn.Close()
		return nil, 0, err
	}
	return conn, pid, nil
}

// restore runs the bundle as container cid restored from the checkpoint image in imageDir
// (runsc's restore), detached, and returns its main agent's stdio, held (see heldInit), and the
// host pid of its sandbox.
func (r *runtimeBin) restore(ctx context.Context, cid, bundleDir, imageDir string, reach reachPlan) (*heldInit, int, error) {
	p, err := newPipes()
	if err != nil {
		return nil, 0, errs.Wrap(errs.Internal, "oci restore", "", err)
	}
	h := holdInit(p)
	pid, err := r.launch(ctx, cid, bundleDir, reach, p, h.stderr, "restore", "--image-path", imageDir)
	if err != nil {
		h.Close()
		return nil, 0, err
	}
	return h, pid, nil
}

// launch runs the runtime's verb (run, or restore with its flags) on the bundle as container
// cid, detached, its process on the child's ends of p (which launch closes), and returns the
// host pid of the container's process. The runtime's own diagnostics go to the container's
// stderr, read into stderr: a failed launch says why.
func (r *runtimeBin) launch(ctx context.Context, cid, bundleDir string, reach reachPlan, p *pipes, stderr *headBuffer, verb ...string) (int, error) {
	const op = "oci create"
	// The start itself is not cut off midway (a half-made container is worse than a late one);
	// the caller deletes the container when ctx ended meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	pidFile := filepath.Join(bundleDir, "init.pid")
	args := append(slices.Clone(verb), "--detach", "--pid-file", pidFile, "--bundle", bundleDir, cid)
	cmd := r.command(cctx, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	cmd.Dir = bundleDir
	err := r.startCmd(cmd, reach)
	p.closeChild()
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		p.inW.Close() // the process (if any) ends, and with it the stderr copy
		msg := stderr.waitString(2 * time.Second)
		what := r.name + " " + verb[0]
		if r.platform != "" {
			what += " (gVisor platform " + r.platform + ")"
		}
		return 0, errs.New(errs.SandboxUnavailable, op, "", "%s: %v: %s", what, err, strings.TrimSpace(msg))
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, nil
}

// exec starts another agent in running container cid with the process of processFile (the
// container's own user, capabilities and environment) and returns the connection to it. The
// runtime's exec runs as long as the agent does; closing the connection ends both.
func (r *runtimeBin) exec(ctx context.Context, cid, processFile string) (*agentConn, error) {
	p, err := newPipes()
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "oci exec", "", err)
	}
	// Not bound to ctx: the agent outlives the call that started it.
	cmd := r.command(context.Background(), "exec", "--process", processFile, cid)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	cmd.Dir = filepath.Dir(processFile)
	err = r.startCmd(cmd, reachPlan{})
	p.closeChild()
	if err != nil {
		p.closeOwn()
		return nil, errs.Wrap(errs.SandboxUnavailable, "oci exec", "", fmt.Errorf("%s exec: %w", r.name, err))
	}
	return newAgentConn(p, cmd), nil
}

// startCmd starts cmd, a command of the runtime, as reach says, with the runtime's own mounts
// detached.
func (r *runtimeBin) startCmd(cmd *exec.Cmd, reach reachPlan) error {
	reach.detach = r.detach
	return reach.start(cmd)
}

// version returns the first line of the runtime's --version.
func (r *runtimeBin) version(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, r.path, "--version")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", r.name, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}

// errMissing says whether err is a runtime that is not installed.
func errMissing(err error) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Code == errs.SandboxUnavailable && strings.Contains(e.Msg, "not found on PATH")
}
