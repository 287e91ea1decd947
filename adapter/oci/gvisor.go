package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/errs"
)

// gVisor's platforms (Config.RunscPlatform): how runsc's user-space kernel traps the sandbox's
// system calls and runs its address spaces.
const (
	// PlatformAuto picks kvm where /dev/kvm exists and a probe sandbox runs on it within
	// DefaultPlatformProbeTimeout, and runsc's own default otherwise.
	PlatformAuto = "auto"
	// PlatformKVM runs the sandbox as a guest of /dev/kvm (hardware virtualisation).
	PlatformKVM = "kvm"
	// PlatformPtrace traps with ptrace (the default of runsc before mid-2023, Debian 12's).
	PlatformPtrace = "ptrace"
	// PlatformSystrap traps with seccomp's SIGSYS (the default of newer runsc).
	PlatformSystrap = "systrap"
)

// platformNames are the values Config.RunscPlatform accepts; whether this host's runsc has one is
// checked when a sandbox is made.
var platformNames = []string{PlatformAuto, PlatformKVM, PlatformPtrace, PlatformSystrap}

// PlatformNames lists the values of Config.RunscPlatform, auto first.
func PlatformNames() []string { return slices.Clone(platformNames) }

// DefaultPlatformProbeTimeout bounds the probe sandbox that decides whether gVisor's kvm platform
// works here: it is killed past it (nested virtualisation can make it hang).
const DefaultPlatformProbeTimeout = 10 * time.Second

// kvmDevice is where the kvm platform finds hardware virtualisation.
const kvmDevice = "/dev/kvm"

// PlatformChoice is the gVisor platform runsc runs sandboxes on, and why.
type PlatformChoice struct {
	Platform string `json:"platform"` // kvm, ptrace, systrap
	Reason   string `json:"reason"`
	// Forced: Config.RunscPlatform named it; no probe was made.
	Forced bool `json:"forced,omitempty"`
	// Probed is when the probe that decided it ran (zero when none was needed).
	Probed time.Time `json:"probed,omitzero"`
	// Cached: taken from the state directory's record of an earlier probe (runsc-platform.json).
	Cached bool `json:"cached,omitempty"`
}

func (c PlatformChoice) String() string { return c.Platform + " (" + c.Reason + ")" }

// runscPlatforms is what a runsc binary says of its platforms: their names and its default.
type runscPlatforms struct {
	names []string
	def   string
}

var (
	runscInfoMu sync.Mutex
	runscInfo   = map[string]runscPlatforms{} // by path, size and modification time
)

// platformsOf asks runsc (`runsc flags`) which platforms it has and which is its default, once per
// binary. A runsc whose flags cannot be read is taken to have ptrace (its default) and kvm.
func platformsOf(ctx context.Context, path string) runscPlatforms {
	key := path
	if fi, err := os.Stat(path); err == nil {
		key = fmt.Sprintf("%s:%d:%d", path, fi.Size(), fi.ModTime().UnixNano())
	}
	runscInfoMu.Lock()
	p, ok := runscInfo[key]
	runscInfoMu.Unlock()
	if ok {
		return p
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "flags")
	cmd.Env = runtimeEnv()
	out, err := cmd.CombinedOutput()
	p = parsePlatforms(string(out))
	if err != nil || len(p.names) == 0 {
		return runscPlatforms{names: []string{PlatformPtrace, PlatformKVM}, def: PlatformPtrace}
	}
	runscInfoMu.Lock()
	runscInfo[key] = p
	runscInfoMu.Unlock()
	return p
}

// parsePlatforms reads the -platform line of `runsc flags`: "specifies which platform to use:
// systrap (default), ptrace, kvm. (default "systrap")".
func parsePlatforms(flags string) runscPlatforms {
	var p runscPlatforms
	_, rest, ok := strings.Cut(flags, "which platform to use:")
	if !ok {
		return p
	}
	list, _, _ := strings.Cut(rest, ".")
	for _, f := range strings.Split(list, ",") {
		name, isDef := strings.CutSuffix(strings.TrimSpace(f), "(default)")
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, " \n\t") {
			continue
		}
		p.names = append(p.names, name)
		if isDef {
			p.def = name
		}
	}
	if p.def == "" && len(p.names) > 0 {
		p.def = p.names[0]
	}
	return p
}

// platformProbe configures the probe of the kvm platform; the zero value is the adapter's.
type platformProbe struct {
	platform string        // the platform probed: "" is kvm (the tests probe others)
	device   string        // "" is kvmDevice
	timeout  time.Duration // 0 is DefaultPlatformProbeTimeout
	args     []string      // the agent's arguments in the probe sandbox; nil: -fs stat .
	fresh    bool          // probe again even if the state directory has a decision
}

func (o platformProbe) probed() string {
	if o.platform == "" {
		return PlatformKVM
	}
	return o.platform
}

func (o platformProbe) dev() string {
	if o.device == "" {
		return kvmDevice
	}
	return o.device
}

func (o platformProbe) limit() time.Duration {
	if o.timeout <= 0 {
		return DefaultPlatformProbeTimeout
	}
	return o.timeout
}

// choosePlatform decides the gVisor platform of runsc rt for cfg: the one Config.RunscPlatform
// forces (refused when this runsc lacks it, or it is kvm and there is no KVM device), else kvm
// where the device exists and a probe sandbox runs on it in time, else runsc's default. A probe's
// decision is kept in the state directory for this boot, this runsc binary and this device, so
// that only the first sandbox pays for it; a probe that hangs is killed at its bound and never
// holds up a create for longer. Errors: errs.SandboxUnavailable (a forced platform that cannot
// run here).
func choosePlatform(ctx context.Context, cfg Config, rt *runtimeBin, o platformProbe) (PlatformChoice, error) {
	info := platformsOf(ctx, rt.path)
	forced := cfg.RunscPlatform
	if forced != "" && forced != PlatformAuto {
		if !slices.Contains(info.names, forced) {
			return PlatformChoice{}, errs.New(errs.SandboxUnavailable, "oci create", "",
				"runsc platform %s was asked for (RunscPlatform, --runsc-platform), but %s has only %s", forced, rt.path, strings.Join(info.names, ", "))
		}
		if forced == PlatformKVM {
			if _, err := os.Stat(o.dev()); err != nil {
				return PlatformChoice{}, errs.New(errs.SandboxUnavailable, "oci create", "",
					"runsc platform kvm was asked for (RunscPlatform, --runsc-platform), but %s is not usable here: %v (no hardware virtualisation in this machine or VM; leave the platform to auto)", o.dev(), err)
			}
		}
		return PlatformChoice{Platform: forced, Forced: true, Reason: "asked for by RunscPlatform (--runsc-platform)"}, nil
	}
	def := PlatformChoice{Platform: info.def}
	if !slices.Contains(info.names, o.probed()) {
		def.Reason = "this runsc has no " + o.probed() + " platform"
		return def, nil
	}
	dev, err := os.Stat(o.dev())
	if err != nil {
		def.Reason = o.probed() + ": " + o.dev() + " absent"
		return def, nil
	}
	lay := layoutOf(cfg.stateDir())
	key := platformKey(rt.path, o.probed(), o.dev(), dev)
	if !o.fresh {
		if c, ok := readPlatformCache(lay, key); ok {
			return c, nil
		}
	}
	if err := os.MkdirAll(lay.dir, 0o755); err != nil {
		return PlatformChoice{}, errs.Wrap(errs.Internal, "oci create", "", err)
	}
	// One probe at a time per state directory; the others wait for its decision, as long as a
	// probe can take (it is bounded), then go on with the default.
	unlock, err := lockFileWithin(filepath.Join(lay.dir, ".runsc-platform.lock"), o.limit()+45*time.Second)
	if err != nil {
		def.Reason = o.probed() + ": " + o.dev() + " present, but no probe decided (" + err.Error() + ")"
		return def, nil
	}
	defer unlock()
	if !o.fresh {
		if c, ok := readPlatformCache(lay, key); ok {
			return c, nil
		}
	}
	start := time.Now()
	took, perr := probeKVM(ctx, rt, lay, o)
	c := PlatformChoice{Platform: o.probed(), Probed: start.UTC(),
		Reason: fmt.Sprintf("%s: a probe sandbox ran on %s in %v", o.probed(), o.dev(), took.Round(time.Millisecond))}
	if perr != nil {
		if ctx.Err() != nil {
			return PlatformChoice{}, ctx.Err() // not a decision about the platform
		}
		c.Platform, c.Reason = info.def, o.probed()+": "+o.dev()+" present but "+perr.Error()
	}
	writePlatformCache(lay, key, c)
	return c, nil
}

// platformKey names what a probe's decision holds for: this boot, the runsc binary, the platform
// probed and its device.
func platformKey(runsc, platform, device string, dev os.FileInfo) string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	key := fmt.Sprintf("boot=%s runsc=%s", strings.TrimSpace(string(boot)), runsc)
	if fi, err := os.Stat(runsc); err == nil {
		key += fmt.Sprintf(":%d:%d", fi.Size(), fi.ModTime().UnixNano())
	}
	key += " platform=" + platform + " device=" + device
	if st, ok := dev.Sys().(*syscall.Stat_t); ok {
		key += ":" + strconv.FormatUint(uint64(st.Rdev), 10)
	}
	return key
}

// platformCacheFile keeps the probes' decisions (STATE/oci/runsc-platform.json), by platformKey.
func (l layout) platformCacheFile() string { return filepath.Join(l.dir, "runsc-platform.json") }

func readPlatformCache(lay layout, key string) (PlatformChoice, bool) {
	var m map[string]PlatformChoice
	b, err := os.ReadFile(lay.platformCacheFile())
	if err != nil || json.Unmarshal(b, &m) != nil {
		return PlatformChoice{}, false
	}
	c, ok := m[key]
	c.Cached = true
	return c, ok && c.Platform != ""
}

// writePlatformCache records c for key, dropping the decisions of other boots.
func writePlatformCache(lay layout, key string, c PlatformChoice) {
	m := map[string]PlatformChoice{}
	if b, err := os.ReadFile(lay.platformCacheFile()); err == nil {
		json.Unmarshal(b, &m)
	}
	boot, _, _ := strings.Cut(key, " ")
	for k := range m {
		if !strings.HasPrefix(k, boot+" ") {
			delete(m, k)
		}
	}
	m[key] = c
	if b, err := json.MarshalIndent(m, "", "  "); err == nil {
		writeAtomic(lay.platformCacheFile(), append(b, '\n'), 0o644)
	}
}

// probes is where probe sandboxes live while they run (STATE/oci/probes/runsc-*).
func (l layout) probes() string { return filepath.Join(l.dir, "probes") }

// probeKVM runs a probe sandbox on gVisor's kvm platform (a bundle of its own: a read-only root
// holding only the host's agent, which stats its /workspace) and returns how long it took. It
// is bounded by o's timeout: past it, the runtime's process group is killed, the container is
// deleted, every process still naming the probe's directory is killed, and the directory is
// removed. Whatever a crashed probe left (this runs under the probe lock: nothing else probes) goes
// first.
func probeKVM(ctx context.Context, rt *runtimeBin, lay layout, o platformProbe) (time.Duration, error) {
	if stale, _ := filepath.Glob(filepath.Join(lay.probes(), "runsc-*")); len(stale) > 0 {
		for _, d := range stale {
			removeProbe(rt, d)
		}
	}
	bin, err := rootfs.AgentFile(lay.agent())
	if err != nil {
		return 0, fmt.Errorf("no probe sandbox could be made: %w", err)
	}
	if err := os.MkdirAll(lay.probes(), 0o755); err != nil {
		return 0, fmt.Errorf("no probe sandbox could be made: %w", err)
	}
	dir := filepath.Join(lay.probes(), "runsc-"+newID())
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, fmt.Errorf("no probe sandbox could be made: %w", err)
	}
	defer removeProbe(rt, dir)
	if err := writeProbeBundle(dir, bin, o.args); err != nil {
		return 0, fmt.Errorf("no probe sandbox could be made: %w", err)
	}
	args := []string{"--root", filepath.Join(dir, "state"), "--network=none", "--platform=" + o.probed()}
	if o.probed() == PlatformKVM && o.dev() != kvmDevice {
		args = append(args, "--platform_device_path="+o.dev())
	}
	args = append(args, "run", "--bundle", filepath.Join(dir, "bundle"), probeName(dir))
	cmd := exec.Command(rt.path, args...)
	cmd.Env = runtimeEnv()
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	w := &limitedWriter{w: &out, n: 8 << 10}
	cmd.Stdout, cmd.Stderr = w, w // one writer: exec copies both through one pipe
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("the probe sandbox did not start: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(o.limit())
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return time.Since(start), fmt.Errorf("a probe sandbox did not run in %v (killed)", o.limit())
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return time.Since(start), ctx.Err()
	}
	took := time.Since(start)
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return took, fmt.Errorf("a probe sandbox failed: %v: %s", err, msg)
	}
	return took, nil
}

// writeProbeBundle makes dir/bundle: config.json and a root holding the agent (a hard link of
// bin, or a copy) and the mount points; the probe runs the agent with args (-fs stat . by
// default: a Go program's start, a file system call through the gofer, output).
func writeProbeBundle(dir, bin string, args []string) error {
	root := filepath.Join(dir, "bundle", "rootfs")
	for _, d := range []string{"proc", "dev", "sys", "tmp", "workspace"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	agentPath := filepath.Join(root, "sandboxer-agent")
	if err := os.Link(bin, agentPath); err != nil {
		if err := copyFile(bin, agentPath); err != nil {
			return err
		}
	}
	if args == nil {
		args = []string{agent.FSFlag, "stat", "."}
	}
	spec := &specs.Spec{
		Version:  specVersion,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "sandboxer-probe",
		Process: &specs.Process{
			Args: append([]string{"/sandboxer-agent"}, args...),
			Env:  []string{"PATH=/"},
			Cwd:  "/",
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755", "size=64k"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "size=1m"}},
		},
		Linux: &specs.Linux{CgroupsPath: "/" + probeName(dir), Namespaces: []specs.LinuxNamespace{
			{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
			{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace},
		}},
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bundle", "config.json"), data, 0o600)
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	return errors.Join(err, dst.Close())
}

// probeName is the container id and the cgroup of the probe of directory dir (runsc-ID).
func probeName(dir string) string {
	return "sandboxer-probe-" + strings.TrimPrefix(filepath.Base(dir), "runsc-")
}

// removeProbe removes probe directory dir and everything that ran from it: the container
// (deleted by the runtime, bounded), then any process whose command line names dir (runsc's
// sandbox and gofer carry its --root), killed, then its cgroups and the directory.
func removeProbe(rt *runtimeBin, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cmd := exec.CommandContext(ctx, rt.path, "--root", filepath.Join(dir, "state"), "delete", "--force", probeName(dir))
	cmd.Env = runtimeEnv()
	cmd.WaitDelay = time.Second
	cmd.Run()
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := processesNaming(dir)
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	removeCgroups("/" + probeName(dir))
	os.RemoveAll(dir)
}

// processesNaming lists the processes of this host with an argument that names a file below dir.
func processesNaming(dir string) []int {
	below := []byte(dir + "/")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, below) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
