package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/workspace"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/oneshot"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// optionsOf is the lifecycle's Options of the settings: the one place where the CLI's settings
// become what the adapters are configured with.
func optionsOf(s Settings) lifecycle.Options {
	o := lifecycle.Options{Adapter: s.Adapter, StateDir: s.StateDir, Image: s.Image,
		AllowNetwork: s.AllowNetwork, AllowHosts: s.AllowHosts, Secrets: s.Secrets, Inject: s.Inject,
		LookupEnv: s.inv.lookupEnv, EgressTuning: egressTuning(s.inv),
		Disk: s.Disk, RequireIsolation: s.RequireIsolation,
		// A fork copies no file larger than a --store sync would (sandbox fork declares the setting).
		ForkMaxFileBytes: s.SyncMaxFileBytes,
		Local: lifecycle.LocalOptions{Root: s.Root, Isolation: s.Isolation, CPUs: s.CPUs, Memory: s.Memory, Pids: s.Pids,
			DisableLayers: s.DisableLayers, ReadPaths: s.ROBind, WritePaths: s.RWBind, NoCaches: s.NoCaches,
			// The resident servers' sockets and keys: a command never uses a server (see oneshot.Request.Key).
			// And the remote adapter's token file: a command never reads it.
			DenyRead: denyRead(s), Protect: ownFiles(s)},
		OCI: lifecycle.OCIOptions{Runtime: s.Runtime, RunscPlatform: s.RunscPlatform},
		Kubernetes: lifecycle.KubernetesOptions{Kubeconfig: s.Kubeconfig, Context: s.KubeContext, Namespace: s.Namespace,
			Image: s.KubernetesImage, AgentImage: s.KubernetesAgentImage, ImagePullPolicy: s.ImagePullPolicy,
			RuntimeClass: s.RuntimeClass},
		Remote: lifecycle.RemoteOptions{URL: s.RemoteURL, Token: s.remoteToken, CAFile: s.RemoteCA, Adapter: s.RemoteAdapter,
			TTL: s.RemoteTTL, IdleTimeout: s.RemoteIdle},
	}
	// --image's default is the docker adapter's default image: the oci adapter then runs its
	// own root file system (the same recipe), docker that image.
	if s.Image == DefaultImage {
		o.Image = ""
	}
	// Settings say 0 for no limit; the local adapter says NoLimit (its 0 is its default).
	if o.Local.Memory == 0 {
		o.Local.Memory = local.NoLimit
	}
	if o.Local.Pids == 0 {
		o.Local.Pids = local.NoLimit
	}
	if s.Adapter == "remote" {
		// The server's flags are the defaults of its sandboxes: a remote one asks for what the
		// call set, not for this CLI's defaults.
		if !s.set[keyMemory] {
			o.Local.Memory = 0
		}
		if !s.set[keyPids] {
			o.Local.Pids = 0
		}
		if !s.set[keyImage] {
			o.Image = ""
		}
		if !s.set[keyRuntime] {
			o.OCI.Runtime = ""
		}
	}
	return o
}

// plannedAdapters are adapter names of the contract that this build does not include, with the
// error --adapter gives for them. Empty while every adapter is built in.
var plannedAdapters = map[string]string{}

// testAdapters are adapters a test binary adds (panic_test.go): each opens the ephemeral
// sandbox of a call. sandboxer itself has none.
var testAdapters = map[string]func(ctx context.Context) (adapter.Sandbox, error){}

// knownAdapter reports whether --adapter name is one of this build's (lifecycle.Adapters).
func knownAdapter(name string) bool {
	_, ok := lifecycle.Lookup(name)
	return ok || testAdapters[name] != nil
}

func adapterNames() []string {
	var n []string
	for _, a := range lifecycle.Adapters() {
		n = append(n, a.Name)
	}
	for k := range testAdapters {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// served reports whether `sandboxerd serve` runs sandboxes of adapter name: every adapter but
// remote (a server does not forward its sandboxes to another, with a token of its own).
func served(name string) bool { return name != "remote" }

// servedAdapters are the adapters `sandboxerd serve` runs sandboxes of.
func servedAdapters() []string {
	var n []string
	for _, a := range adapterNames() {
		if served(a) {
			n = append(n, a)
		}
	}
	return n
}

func unknownAdapter(name string) error {
	if msg, ok := plannedAdapters[name]; ok {
		return fmt.Errorf("--adapter %q: %s (available: %v)", name, msg, adapterNames())
	}
	return fmt.Errorf("--adapter %q: want one of %v", name, adapterNames())
}

// errMemoryOneProcess: a memory sandbox lives in the memory of one process.
var errMemoryOneProcess = errs.New(errs.InvalidInput, "sandbox", "",
	"memory sandboxes live inside one process and cannot be kept across invocations: "+
		"use `sandboxer mcp --adapter memory`, or --store to keep the files")

// errMemoryNoNetwork: a memory sandbox has no network, so no way out through an egress proxy.
var errMemoryNoNetwork = errs.New(errs.SandboxUnavailable, "sandbox", "",
	"the memory adapter has no network at all, so --allow-host cannot be served: "+
		"use --adapter local (with a network namespace), docker or oci")

// inCLIWords gives the lifecycle's refusals of the memory adapter the CLI's words (its commands
// and flags); other errors are returned as they are.
func inCLIWords(err error) error {
	switch {
	case errors.Is(err, lifecycle.ErrInProcess):
		return errMemoryOneProcess
	case errors.Is(err, lifecycle.ErrNoNetwork):
		return errMemoryNoNetwork
	}
	return err
}

// openEphemeral opens the sandbox of a call without --sandbox: its Stop removes it.
func openEphemeral(ctx context.Context, s Settings) (adapter.Sandbox, error) {
	if open := testAdapters[s.Adapter]; open != nil {
		return open(ctx)
	}
	sb, err := lifecycle.Open(ctx, optionsOf(s))
	return sb, inCLIWords(err)
}

// session is the sandbox one invocation works in.
type session struct {
	Sandbox adapter.Sandbox
	Record  *lifecycle.Record  // nil for an ephemeral sandbox
	lasting *lifecycle.Session // nil for an ephemeral sandbox
	close   func(ctx context.Context) error
}

// allowHosts is the allowlist the call's commands are inspected against: the call's own, else
// the one a long-lived sandbox's record gave the session (lifecycle.Network).
func (s *session) allowHosts(set Settings) []string {
	if set.AllowNetwork || len(set.AllowHosts)+len(set.Secrets)+len(set.Inject) > 0 || s.Record == nil || s.Record.Network == nil {
		return set.AllowHosts
	}
	return s.Record.Network.AllowHosts
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
		if !knownAdapter(s.Adapter) {
			return nil, usage(unknownAdapter(s.Adapter))
		}
		if s.Adapter == "local" || copiesRoot(s) {
			if err := vetRoot(s); err != nil {
				return nil, err
			}
		}
		if s.Adapter == "local" && len(s.Secrets) == 0 { // a warm sandbox's proxy keeps the secrets it was made with
			if w := s.inv.warm; w != nil {
				return openWarmLocal(w, s)
			}
		}
		sb, err := openEphemeral(ctx, s)
		if err != nil {
			return nil, err
		}
		return &session{Sandbox: sb, close: sb.Stop}, nil
	}
	mgr := lifecycle.NewManager(s.StateDir)
	rec, err := mgr.Get(s.Sandbox)
	if err != nil {
		if errors.Is(err, errs.InvalidInput) {
			return nil, usage(err)
		}
		if errors.Is(err, errs.NotFound) {
			return nil, errs.New(errs.SandboxUnavailable, "sandbox", "", "no sandbox %q in %s (see sandboxer sandbox ls)", s.Sandbox, s.StateDir)
		}
		return nil, err
	}
	if _, ok := lifecycle.Lookup(rec.Adapter); !ok {
		return nil, fmt.Errorf("sandbox %s: %w", rec.ID, unknownAdapter(rec.Adapter))
	}
	ls, err := mgr.Attach(ctx, rec.ID, optionsOf(s))
	if err != nil {
		return nil, inCLIWords(err)
	}
	return &session{Sandbox: ls.Sandbox, Record: &ls.Record, lasting: ls, close: ls.Detach}, nil
}

// openWarmLocal opens the ephemeral local sandbox of a call the resident server runs: the one
// the last call of the same workspace and configuration left (recycled), or a new one; closing
// the session hands it back for the next call.
func openWarmLocal(w *warmth, s Settings) (*session, error) {
	cfg := optionsOf(s).LocalConfig(s.Root)
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
	own := []string{s.StateDir, s.Journal, s.ConfigFile, serverDir(s.inv), s.inv.getenv(frontVar), s.tokenFile, s.journalKeyFile}
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

// denyRead are the host paths a local sandbox's commands may never read, beyond the adapter's
// own list: the resident servers' sockets and keys, the remote adapter's token file, the
// journal's key file.
func denyRead(s Settings) []string {
	deny := []string{serverDir(s.inv)}
	for _, f := range []string{s.tokenFile, s.journalKeyFile} {
		if f != "" {
			deny = append(deny, f)
		}
	}
	return deny
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
		return usage(fmt.Errorf("%w\n(the workspace, which one-shot docker, oci, kubernetes and remote calls copy in and sync back, is --root, else the current directory: cd into a project, or pass --root DIR)", err))
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
