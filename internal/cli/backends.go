package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/workspace"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/oneshot"
	"github.com/sandboxer/sandboxer/internal/state"
)

// backend is one row of the adapter table: how the CLI opens, persists and removes sandboxes of one
// adapter. Every function gets the resolved settings.
type backend struct {
	// open returns a sandbox for one invocation without --sandbox. Its Stop must leave the
	// user's workspace in place.
	open func(ctx context.Context, s Settings) (adapter.Sandbox, error)
	// create makes a long-lived sandbox and fills rec's adapter-specific fields.
	create func(ctx context.Context, s Settings, st state.Dir, rec *state.Record) error
	// attach reopens a long-lived sandbox; errs.SandboxUnavailable when it is gone.
	attach func(ctx context.Context, s Settings, st state.Dir, rec state.Record) (adapter.Sandbox, error)
	// detach ends this process's use of an attached sandbox without destroying it.
	detach func(ctx context.Context, sb adapter.Sandbox) error
	// destroy releases what a long-lived sandbox holds outside the state directory.
	destroy func(ctx context.Context, s Settings, rec state.Record) error
	// alive reports whether the sandbox's backing (directory, container) still exists.
	alive func(ctx context.Context, s Settings, rec state.Record) (bool, error)
	// enforces says in a sentence what the adapter enforces (doctor, docs).
	enforces string
	// prune (optional) removes what crashed processes left behind, returning backend ids.
	prune func(ctx context.Context, s Settings) ([]string, error)
	// fork makes rec2 a copy of the attached sandbox src.
	// The report lists what the copy left out (adapters that copy on the host: local, oci).
	fork func(ctx context.Context, s Settings, st state.Dir, src adapter.Sandbox, rec2 *state.Record) (adapter.CopyReport, error)
}

// backends is the explicit adapter table: name -> constructor. No init() registration: what is
// listed here is what this build can run.
var backends = map[string]backend{
	"local":      localBackend,
	"docker":     dockerBackend,
	"memory":     memoryBackend,
	"oci":        ociBackend,
	"kubernetes": kubernetesBackend,
}

// plannedBackends are adapter names of the contract that this build does not include, with the
// error --adapter gives for them. Empty while every adapter is built in.
var plannedBackends = map[string]string{}

func lookupBackend(name string) (backend, bool) {
	b, ok := backends[name]
	return b, ok
}

func backendNames() []string {
	var n []string
	for k := range backends {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func unknownAdapter(name string) error {
	if msg, ok := plannedBackends[name]; ok {
		return fmt.Errorf("--adapter %q: %s (available: %v)", name, msg, backendNames())
	}
	return fmt.Errorf("--adapter %q: want one of %v", name, backendNames())
}

// localEnforces says what the local adapter enforces in this build: kernel isolation on Linux,
// none elsewhere (macOS).
func localEnforces() string {
	if !local.KernelIsolation {
		return "NO kernel isolation on " + runtime.GOOS + ": file calls are jailed to the workspace by os.Root, " +
			"but commands are plain processes of your user (they can read and write whatever you can, and reach " +
			"the network), in a process group killed when they end; every result reports network, filesystem, " +
			"processTree and limits as not enforced. Isolation fails closed: with --isolation auto every command is refused " +
			"(ISOLATION_UNAVAILABLE); --isolation off runs them as plain processes."
	}
	return "file calls jailed to the workspace by os.Root; with --isolation auto (the default) " +
		"each command also runs in its own user, PID and network namespaces (loopback only unless " +
		"--allow-network), under Landlock (writes only to the workspace and a private TMPDIR, " +
		"home directories and credentials unreadable) and in a cgroup killed as a whole; " +
		"it fails closed: a command runs only with every layer doctor lists, less those turned off by --disable-layer " +
		"(else ISOLATION_UNAVAILABLE naming them). Every result says which layers applied."
}

var localBackend = backend{
	enforces: localEnforces(),
	open: func(ctx context.Context, s Settings) (adapter.Sandbox, error) {
		return local.New(localConfig(s, s.Root))
	},
	create: func(ctx context.Context, s Settings, st state.Dir, rec *state.Record) error {
		rec.Workspace = st.WorkspaceDir(rec.ID)
		return os.MkdirAll(rec.Workspace, 0o755)
	},
	attach: func(ctx context.Context, s Settings, st state.Dir, rec state.Record) (adapter.Sandbox, error) {
		fi, err := os.Stat(rec.Workspace)
		if err != nil || !fi.IsDir() {
			return nil, errs.New(errs.SandboxUnavailable, "attach", "", "sandbox %s: workspace %s is gone", rec.ID, rec.Workspace)
		}
		return local.New(localConfig(s, rec.Workspace))
	},
	detach: func(ctx context.Context, sb adapter.Sandbox) error {
		return sb.Stop(ctx) // a configured Root is kept by Stop
	},
	destroy: func(ctx context.Context, s Settings, rec state.Record) error {
		return nil // the workspace lives in the state directory, removed with the record
	},
	alive: func(ctx context.Context, s Settings, rec state.Record) (bool, error) {
		fi, err := os.Stat(rec.Workspace)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return fi.IsDir(), nil
	},
	fork: func(ctx context.Context, s Settings, st state.Dir, src adapter.Sandbox, rec *state.Record) (adapter.CopyReport, error) {
		l, ok := src.(*local.Sandbox)
		if !ok {
			return adapter.CopyReport{}, errs.New(errs.Internal, "fork", "", "not a local sandbox")
		}
		rec.Workspace = st.WorkspaceDir(rec.ID)
		return l.CopyWorkspace(ctx, rec.Workspace) // bounded by localConfig's ForkMaxFileBytes
	},
}

// session is the sandbox one invocation works in.
type session struct {
	Sandbox adapter.Sandbox
	Record  *state.Record // nil for an ephemeral sandbox
	close   func(ctx context.Context) error
}

// Close ends this invocation's use of the sandbox: an ephemeral one is stopped, a long-lived one
// is detached and stays.
func (s *session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.close(ctx)
}

// openSession opens the sandbox named by --sandbox, or an ephemeral one of --adapter.
func openSession(ctx context.Context, s Settings) (*session, error) {
	if s.Sandbox == "" {
		b, ok := lookupBackend(s.Adapter)
		if !ok {
			return nil, usage(unknownAdapter(s.Adapter))
		}
		if s.Adapter == "local" || copiesRoot(s) {
			if err := vetRoot(s); err != nil {
				return nil, err
			}
		}
		if s.Adapter == "local" {
			if w := s.inv.warm; w != nil {
				return openWarmLocal(w, s)
			}
		}
		sb, err := b.open(ctx, s)
		if err != nil {
			return nil, err
		}
		return &session{Sandbox: sb, close: sb.Stop}, nil
	}
	st := state.Open(s.StateDir)
	rec, err := st.Get(s.Sandbox)
	if err != nil {
		if errors.Is(err, errs.InvalidInput) {
			return nil, usage(err)
		}
		if errors.Is(err, errs.NotFound) {
			return nil, errs.New(errs.SandboxUnavailable, "sandbox", "", "no sandbox %q in %s (see sandboxer sandbox ls)", s.Sandbox, s.StateDir)
		}
		return nil, err
	}
	b, ok := lookupBackend(rec.Adapter)
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", rec.ID, unknownAdapter(rec.Adapter))
	}
	sb, err := b.attach(ctx, s, st, rec)
	if err != nil {
		return nil, err
	}
	return &session{Sandbox: sb, Record: &rec, close: func(ctx context.Context) error { return b.detach(ctx, sb) }}, nil
}

// openWarmLocal opens the ephemeral local sandbox of a call the resident server runs: the one
// the last call of the same workspace and configuration left (recycled), or a new one; closing
// the session hands it back for the next call.
func openWarmLocal(w *warmth, s Settings) (*session, error) {
	cfg := localConfig(s, s.Root)
	key := fmt.Sprintf("%#v", cfg)
	dir, _ := os.Stat(cfg.Root) // nil when absent: local.New says why
	sb := w.takeLocal(key, dir)
	if sb == nil {
		var err error
		if sb, err = local.New(cfg); err != nil {
			return nil, err
		}
	}
	return &session{Sandbox: sb, close: func(context.Context) error {
		w.putLocal(key, dir, sb)
		return nil
	}}, nil
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// serverDir is the directory of the resident servers of inv's user (internal/oneshot.Dir).
func serverDir(inv invocation) string {
	return oneshot.Dir(func(k string) string {
		if k == "SANDBOXER_SERVER_DIR" {
			return inv.getenv(k)
		}
		return os.Getenv(k)
	}, os.Getuid())
}

// ownFiles are sandboxer's own files for the settings: no workspace may contain them (a command
// could replace or forge them). local.Config adds the engine's executable and $XDG_RUNTIME_DIR.
func ownFiles(s Settings) []string {
	own := []string{s.StateDir, s.Journal, s.ConfigFile, serverDir(s.inv), s.inv.getenv(frontVar)}
	if f := UserConfigFile(); f != "" {
		own = append(own, filepath.Dir(f))
	}
	if s.Store != "" {
		if _, store, err := storePath(s.inv, s.Store); err == nil {
			own = append(own, store)
		}
	}
	return own
}

// frontVar names the front's executable (cmd/sandboxer sets it for the engine): a workspace
// holding the front would let a command replace the program the next call runs.
const frontVar = "SANDBOXER_FRONT"

// vetRoot refuses a workspace (--root, or the current directory) that must not be one (of the
// local adapter, or copied into a one-shot container: copiesRoot), before any sandbox exists, with a usage error that says how to pick another.
func vetRoot(s Settings) error {
	err := workspace.Vet(s.Root, ownFiles(s)...)
	if err == nil {
		if st, e := filepath.EvalSymlinks(s.StateDir); e == nil && within(st, s.Root) {
			err = errs.New(errs.InvalidInput, "workspace", s.Root, "%s lies inside the state directory %s, whose records a command could forge; use a project directory of its own", s.Root, s.StateDir)
		}
	}
	if err != nil {
		return usage(fmt.Errorf("%w\n(the workspace, which one-shot docker, oci and kubernetes calls copy in and sync back, is --root, else the current directory: cd into a project, or pass --root DIR)", err))
	}
	return nil
}

// within reports whether p is dir or lies inside it (both absolute; p is resolved).
func within(dir, p string) bool {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// localConfig is the local adapter's configuration for the settings and a workspace.
func localConfig(s Settings, root string) local.Config {
	iso := s.Isolation
	if iso == "auto" {
		iso = local.IsolationAuto
	}
	cfg := local.Config{Root: root, Isolation: iso, RequireIsolation: s.RequireIsolation, CPUs: s.CPUs, Disk: s.Disk,
		Memory: s.Memory, Pids: s.Pids, DisableLayers: s.DisableLayers, ReadPaths: s.ROBind, WritePaths: s.RWBind, NoCaches: s.NoCaches, AllowHosts: s.AllowHosts,
		// The resident servers' sockets and keys: a command never uses a server (see oneshot.Request.Key).
		DenyRead: []string{serverDir(s.inv)}, Protect: ownFiles(s),
		// A fork copies no file larger than a --store sync would (sandbox fork declares the setting).
		ForkMaxFileBytes: s.SyncMaxFileBytes}
	// Settings say 0 for none; local.Config says NoLimit (its 0 is the default).
	if cfg.Memory == 0 {
		cfg.Memory = local.NoLimit
	}
	if cfg.Pids == 0 {
		cfg.Pids = local.NoLimit
	}
	if cfg.Disk < 0 { // "none"
		cfg.Disk = 0
	}
	return cfg
}
