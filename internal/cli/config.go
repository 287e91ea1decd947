package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/journal"
	"github.com/sandboxer/sandboxer/sync/filesync"
)

// Setting keys: the flag names, which are also the config file keys and, upper-cased with '-' as
// '_' behind SANDBOXER_, the environment variables (SANDBOXER_MAX_OUTPUT_BYTES).
const (
	keyAdapter        = "adapter"
	keyRoot           = "root"
	keyImage          = "image"
	keyAllowNetwork   = "allow-network"
	keyAllowHosts     = "allow-hosts" // flag --allow-host (repeatable), env SANDBOXER_ALLOW_HOSTS (comma-separated)
	flagAllowHost     = "allow-host"
	flagSecret        = "secret"         // flag only: never from a config file or the environment
	flagInject        = "inject"         // flag only, like --secret
	keyDisableLayers  = "disable-layers" // flag --disable-layer (repeatable), env SANDBOXER_DISABLE_LAYERS (comma-separated)
	flagDisableLayer  = "disable-layer"
	keyMaxOutputBytes = "max-output-bytes"
	keyTimeout        = "timeout"
	keyJournal        = "journal"
	keyJournalKey     = "journal-key-file" // the key that signs the journal's rows; never the key itself
	keyStateDir       = "state-dir"
	keyRunID          = "run-id"
	keyNodeID         = "node-id"
	keyIteration      = "iteration"
	keyAttempt        = "attempt"
	keySandbox        = "sandbox"
	keyStore          = "store"
	keySyncMaxFile    = "sync-max-file-bytes"
	keyIsolation      = "isolation"
	keyRequireIso     = "require-isolation"
	keyMemory         = "memory"
	keyPids           = "pids"
	keyCPUs           = "cpus"
	keyDisk           = "disk"
	keyROBind         = "ro-bind"
	keyRWBind         = "rw-bind"
	keyNoCaches       = "no-caches"
	keyNoPathDiff     = "no-path-diff"
	keyMCPMaxMessage  = "mcp-max-message-bytes"
	keyRuntime        = "runtime"
	keyRunscPlatform  = "runsc-platform"
	// The kubernetes adapter's (kubernetes.Config). KUBECONFIG is read by client-go itself when
	// --kubeconfig is not given.
	keyKubeconfig      = "kubeconfig"
	keyKubeContext     = "kube-context"
	keyNamespace       = "namespace"
	keyKubeImage       = "kubernetes-image"
	keyKubeAgentImage  = "kubernetes-agent-image"
	keyImagePullPolicy = "image-pull-policy"
	keyRuntimeClass    = "runtime-class"
	// The remote adapter's (lifecycle.RemoteOptions). The token itself is never a key: it is
	// read from token-file or SANDBOXER_TOKEN (tokenVar), never from a config file.
	keyURL           = "url"
	keyTokenFile     = "token-file"
	keyRemoteCA      = "remote-ca"
	keyRemoteAdapter = "remote-adapter"
	keyRemoteTTL     = "remote-ttl"
	keyRemoteIdle    = "remote-idle-timeout"
	tokenVar         = "SANDBOXER_TOKEN"
	// keyOTLPEndpoint is where tool call spans are exported (internal/telemetry); the
	// OTEL_EXPORTER_OTLP_* variables configure it too.
	keyOTLPEndpoint = "otlp-endpoint"
)

var knownKeys = map[string]bool{
	keyAdapter: true, keyRoot: true, keyImage: true, keyAllowNetwork: true, keyMaxOutputBytes: true,
	keyTimeout: true, keyJournal: true, keyJournalKey: true, keyStateDir: true, keyRunID: true, keyNodeID: true,
	keyIteration: true, keyAttempt: true, keySandbox: true, keyStore: true, keySyncMaxFile: true,
	keyIsolation: true, keyRequireIso: true, keyMemory: true, keyPids: true, keyCPUs: true, keyDisk: true,
	keyROBind: true, keyRWBind: true, keyNoCaches: true, keyNoPathDiff: true, keyMCPMaxMessage: true, keyRuntime: true, keyRunscPlatform: true, keyAllowHosts: true, keyDisableLayers: true,
	keyKubeconfig: true, keyKubeContext: true, keyNamespace: true, keyKubeImage: true, keyKubeAgentImage: true,
	keyImagePullPolicy: true, keyRuntimeClass: true,
	keyURL: true, keyTokenFile: true, keyRemoteCA: true, keyRemoteAdapter: true, keyRemoteTTL: true, keyRemoteIdle: true,
	keyOTLPEndpoint: true,
}

// imagePullPolicies are the values of --image-pull-policy (a pod's imagePullPolicy).
var imagePullPolicies = []string{"Always", "IfNotPresent", "Never"}

// configAliases are config file spellings accepted for a key (SPEC.md writes require_isolation).
var configAliases = map[string]string{"require_isolation": keyRequireIso}

// Defaults of the settings (the lowest layer).
const (
	DefaultAdapter        = "local"
	DefaultImage          = image.DefaultTag
	DefaultMaxOutputBytes = adapter.DefaultMaxOutputBytes
	DefaultTimeout        = 60 * time.Second
	DefaultRunID          = "default"
	DefaultNodeID         = "default"
	// MaxOutputBytesLimit and TimeoutLimit are the upper bounds of SPEC.md section 3.
	MaxOutputBytesLimit = 10485760
	TimeoutLimit        = time.Hour
	// MCPMaxMessageBytesMin and MCPMaxMessageBytesMax bound --mcp-max-message-bytes.
	MCPMaxMessageBytesMin = 1 << 10
	MCPMaxMessageBytesMax = 1 << 30
	// ConfigFileName is the name of the user's config file (UserConfigFile), read when neither
	// --config nor SANDBOXER_CONFIG names one.
	ConfigFileName = "sandboxer.yaml"
	// JournalOff as --journal turns the journal off.
	JournalOff = "off"
)

// Settings is the resolved configuration of one invocation.
type Settings struct {
	Adapter      string
	Root         string // absolute
	Image        string
	AllowNetwork bool
	// AllowHosts is the egress allowlist (issue 16): the network stays cut and the sandbox's
	// egress proxy lets commands reach only these hosts. Exclusive with AllowNetwork.
	AllowHosts []string
	// Secrets are credentials the egress proxy writes into requests to the hosts Inject binds
	// them to (issue 37): by name and source (egress.SecretRef), read when the sandbox is opened;
	// flags only.
	Secrets []egress.SecretRef
	Inject  []egress.Injection
	// DisableLayers names local isolation layers the caller opts out of (fail closed requires
	// every other one); only a flag or the environment may name them, never a config file alone.
	DisableLayers  []string
	MaxOutputBytes int
	Timeout        time.Duration
	Journal        string // absolute path, or "" when off
	// journalKey signs the journal's rows and checks their signatures (journal.Options.Key),
	// read from journalKeyFile (absolute), which no workspace may hold and no local command may
	// read: unexported, so that no printing of the settings shows it.
	journalKey     []byte
	journalKeyFile string
	StateDir       string // absolute
	RunID          string
	NodeID         string
	Iteration      int
	Attempt        int
	Sandbox        string
	Store          string
	// SyncMaxFileBytes is the largest file --store syncs either way (filesync.Options.MaxFileBytes).
	SyncMaxFileBytes int64
	// Isolation ("auto" or "off") and RequireIsolation configure the local adapter's kernel
	// isolation; RequireIsolation refuses a command when a layer cannot be applied.
	Isolation        string
	RequireIsolation bool
	// Memory (bytes), Pids and CPUs limit a local sandbox's commands together; 0 is no limit.
	Memory int64
	Pids   int
	CPUs   float64
	// Disk caps the workspace, in bytes: how much a local sandbox's may grow (0: no cap), the size
	// of a docker or oci sandbox's (0: the adapter's default, 10 GiB), a kubernetes pod's emptyDir
	// (0: none); -1 ("none") is no cap on any adapter.
	Disk int64
	// ROBind and RWBind are host paths a local sandbox's commands also see, read-only or
	// read-write (absolute).
	ROBind, RWBind []string
	// NoCaches shows a local sandbox's commands none of the caller's build and module caches
	// (local.Config.NoCaches).
	NoCaches bool
	// NoPathDiff leaves the workspace paths a bash call created, changed and deleted out of its
	// receipt (tools.Context.NoPathDiff): two stat walks of the workspace a call are saved.
	NoPathDiff bool
	// MCPMaxMessageBytes is the longest message `sandboxer mcp` reads (a longer one gets an
	// error reply and is skipped).
	MCPMaxMessageBytes int
	// Runtime is the OCI runtime of the oci adapter (runc, runsc or crun).
	Runtime string
	// RunscPlatform is gVisor's platform under runsc (oci.Config.RunscPlatform): auto, kvm,
	// ptrace or systrap.
	RunscPlatform string
	// The kubernetes adapter's cluster and pods: the kubeconfig file ("" is KUBECONFIG, then
	// ~/.kube/config, then in-cluster; absolute), its context, the namespace, the sandbox image,
	// its pull policy and an optional runtime class; "" is the adapter's default for each.
	Kubeconfig, KubeContext, Namespace                                   string
	KubernetesImage, KubernetesAgentImage, ImagePullPolicy, RuntimeClass string
	// The remote adapter's server (its URL, and a CA file for https: absolute), the adapter
	// it runs the sandbox with ("": the server's default), the sandbox's lifetime there and its
	// idle timeout (0: the server's defaults; RemoteIdle < 0: none).
	RemoteURL, RemoteCA, RemoteAdapter string
	RemoteTTL, RemoteIdle              time.Duration
	ConfigFile                         string // the file that was read, if any
	// OTLPEndpoint is the OpenTelemetry collector tool call spans are exported to (its base URL,
	// http://127.0.0.1:4318); "" leaves it to the OTEL_EXPORTER_OTLP_* variables.
	OTLPEndpoint string

	// remoteToken is the server's token (token-file, else SANDBOXER_TOKEN): unexported, so that
	// no printing of the settings shows it. tokenFile is the file it was read from (absolute),
	// which no workspace may hold and no local command may read.
	remoteToken, tokenFile string
	// set says which of the sandbox's settings (image, runtime, memory, pids) the call gave (a
	// flag, the environment or the config file) rather than left to the default: a remote
	// sandbox asks the server for these only.
	set map[string]bool
	inv invocation // where the settings were read: relative paths given later are resolved in its directory
}

// DefaultStateDir is $XDG_STATE_HOME/sandboxer, or ~/.local/state/sandboxer, or (without a home
// directory) sandboxer-state under the system temporary directory.
func DefaultStateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sandboxer")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "sandboxer")
	}
	return filepath.Join(os.TempDir(), "sandboxer-state")
}

// UserConfigFile is the config file read when neither --config nor SANDBOXER_CONFIG names one:
// $XDG_CONFIG_HOME/sandboxer/sandboxer.yaml, or ~/.config/sandboxer/sandboxer.yaml. It is never
// looked up in the current directory, which is usually the workspace: a command in the sandbox
// could write it and so configure the next call.
func UserConfigFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sandboxer", ConfigFileName)
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".config", "sandboxer", ConfigFileName)
	}
	return ""
}

// configFlagUsage is the usage of --config.
const configFlagUsage = "config file (default $XDG_CONFIG_HOME/sandboxer/" + ConfigFileName + " or ~/.config/sandboxer/" + ConfigFileName + " when present; never one inside the workspace)"

// addCommonFlags declares the flags every sandbox-using command shares.
func addCommonFlags(f *pflag.FlagSet) {
	f.String("config", "", configFlagUsage)
	f.String(keyAdapter, DefaultAdapter, "sandbox adapter: "+strings.Join(adapterNames(), "|"))
	f.String(keyRoot, "", "workspace directory of the local adapter (default the current directory)")
	f.String(keyImage, DefaultImage, "image of the docker adapter; of the oci adapter when given (default: its own root file system): oci-layout:PATH[:TAG|@DIGEST], docker-archive:PATH or a name of the local docker daemon, unpacked once, no registry")
	f.Bool(keyAllowNetwork, false, "let commands reach the network")
	f.StringArray(flagAllowHost, nil, "let commands reach this host (modules.example.com, or *.suffix) through the sandbox's egress proxy, and no other; rules may follow: 'api.example.com GET,POST /v1/'; repeatable (env SANDBOXER_ALLOW_HOSTS, comma-separated)")
	addSecretFlags(f)
	f.Int(keyMaxOutputBytes, DefaultMaxOutputBytes, "per-stream output cap and file/content/patch size limit, in bytes")
	f.Duration(keyTimeout, DefaultTimeout, "timeout of one command (bash, grep, exec)")
	f.String(keyJournal, "", `tool-call journal (SQLite) path, or "off" (default STATE_DIR/journal.db)`)
	addJournalKeyFlag(f)
	f.String(keyStateDir, "", "where long-lived sandboxes and the default journal live (default $XDG_STATE_HOME/sandboxer or ~/.local/state/sandboxer)")
	f.String(keyRunID, DefaultRunID, "run id recorded in the journal and used in idempotency keys")
	f.String(keyNodeID, DefaultNodeID, "node (task) id recorded in the journal and used in idempotency keys")
	f.Int(keyIteration, 0, "loop iteration of the task")
	f.Int(keyAttempt, 1, "retry attempt of the task (>1 adds the retry warning)")
	f.String(keySandbox, "", "id of a long-lived sandbox (see `sandboxer sandbox create`)")
	f.String(keyStore, "", "FileSync store to hydrate the workspace from and flush back to")
	f.String(keySyncMaxFile, "100MiB", "--store: the largest file synced either way (bytes, or with KiB, MiB, GiB); larger ones are skipped and reported")
	f.String(keyIsolation, "auto", "local adapter kernel isolation: auto (every layer the kernel allows) or off")
	f.Bool(keyRequireIso, false, "kept for old scripts: the local adapter always fails closed now (a command runs only with every layer not turned off by --disable-layer)")
	f.StringArray(flagDisableLayer, nil, "local adapter: run without this isolation layer (a name `sandboxer doctor` lists), which is otherwise required; repeatable (env SANDBOXER_DISABLE_LAYERS, comma-separated)")
	f.String(keyMemory, "2GiB", "local adapter: memory limit of the sandbox's commands together (bytes, or with KiB, MiB, GiB); 0 = none")
	f.Int(keyPids, 1024, "local adapter: limit of processes and threads of the sandbox's commands together; 0 = none")
	f.Float64(keyCPUs, 0, "local adapter: CPU time of the sandbox's commands together, in CPUs; 0 = no cap")
	f.String(keyDisk, "0", "workspace cap (bytes, or with KiB, MiB, GiB; none = no cap): docker and oci, a file system of that size (root, a loop device), 0 = 10 GiB; local, how much it may grow, a project quota (root, ext4 or xfs with project quotas), 0 = no cap; kubernetes, the workspace's size past which the pod is evicted, 0 = 10 GiB")
	f.StringArray(keyROBind, nil, "local adapter: a host path commands also see, read-only (repeatable; refused when it holds a unix socket)")
	f.StringArray(keyRWBind, nil, "local adapter: a host directory commands may also write (repeatable; refused when it holds a unix socket)")
	f.Bool(keyNoCaches, false, "local adapter: show commands none of the caller's build and module caches (Go, pip, npm, cargo), which they otherwise read copy-on-write")
	f.Bool(keyNoPathDiff, false, "leave the workspace paths a bash call created, changed and deleted out of its receipt (saves two stat walks of the workspace a call; docs/receipts.md)")
	f.String(keyRuntime, oci.Runc, "OCI runtime of the oci adapter: "+strings.Join(oci.Runtimes, "|"))
	addRunscPlatformFlag(f)
	addKubernetesFlags(f)
	addRemoteFlags(f)
	f.String(keyOTLPEndpoint, "", "export a span per tool call over OTLP/HTTP to this collector (http://127.0.0.1:4318; default the OTEL_EXPORTER_OTLP_ENDPOINT variable, else no export; docs/observability.md)")
}

// addRemoteFlags declares the remote adapter's flags (sandbox commands and doctor).
func addRemoteFlags(f *pflag.FlagSet) {
	f.String(keyURL, "", "remote adapter: the sandboxer server (sandboxerd serve): http://HOST:PORT, https://HOST:PORT or unix:PATH")
	addRemoteAccessFlags(f)
	f.String(keyRemoteAdapter, "", "remote adapter: the adapter the server runs the sandbox with (default the server's)")
	f.Duration(keyRemoteTTL, 0, "remote adapter: the sandbox's lifetime on the server (0: the server's default, 1h unless its --ttl says otherwise)")
	f.String(keyRemoteIdle, "", "remote adapter: how long the server keeps the sandbox unused (default the server's, 5m unless its --idle-timeout says otherwise; none: no idle timeout)")
}

// addRemoteAccessFlags declares what reaching the remote adapter's server takes, for the
// commands on long-lived sandboxes too (whose records name the server).
func addRemoteAccessFlags(f *pflag.FlagSet) {
	f.String(keyTokenFile, "", "remote adapter: a file holding the server's token (default the "+tokenVar+" variable; a token is never read from a config file)")
	f.String(keyRemoteCA, "", "remote adapter: PEM file of the CA an https server's certificate is checked against (default the system's)")
}

// addRunscPlatformFlag declares --runsc-platform (sandbox commands and doctor).
func addRunscPlatformFlag(f *pflag.FlagSet) {
	f.String(keyRunscPlatform, oci.PlatformAuto, "oci adapter under runsc: gVisor's platform, "+strings.Join(oci.PlatformNames(), "|")+
		" (auto: kvm where /dev/kvm exists and a probe sandbox runs on it in time, else runsc's default; `sandboxer doctor` says which and why)")
}

// addKubernetesFlags declares the kubernetes adapter's flags (sandbox commands and doctor).
func addKubernetesFlags(f *pflag.FlagSet) {
	f.String(keyKubeconfig, "", "kubernetes adapter: kubeconfig file (default $KUBECONFIG, then ~/.kube/config, then the pod's in-cluster configuration)")
	f.String(keyKubeContext, "", "kubernetes adapter: kubeconfig context (default its current context)")
	f.String(keyNamespace, "", "kubernetes adapter: namespace of the sandbox pods (default the context's, else default)")
	f.String(keyKubeImage, "", "kubernetes adapter: sandbox image as the cluster pulls it, like <your-registry>/sandboxer-sandbox:TAG (default "+image.DefaultTag+")")
	f.String(keyKubeAgentImage, "", "kubernetes adapter: the sandbox image, as the cluster pulls it, to bring the agent from (an init container): --kubernetes-image may then be any image (Debian, python, your own)")
	f.String(keyImagePullPolicy, "", "kubernetes adapter: the pods' image pull policy: "+strings.Join(imagePullPolicies, "|")+" (default IfNotPresent)")
	f.String(keyRuntimeClass, "", "kubernetes adapter: runtime class of the pods (gVisor's or Kata's, as the cluster names it; default none)")
}

// load resolves the settings: defaults < config file < SANDBOXER_* environment < flags that were
// set on the command line. Every error is a usage error.
func load(flags *pflag.FlagSet) (Settings, error) { return loadIn(processInvocation(), flags) }

// loadIn is load with the environment and working directory of inv. The SANDBOXER_* variables
// are merged over the config file's keys (viper's own environment lookup reads the process's).
func loadIn(inv invocation, flags *pflag.FlagSet) (Settings, error) {
	v := viper.New()
	if err := v.BindPFlags(flags); err != nil {
		return Settings{}, err
	}

	s := Settings{inv: inv}
	cfg, _ := flags.GetString("config")
	if cfg == "" {
		cfg = inv.getenv("SANDBOXER_CONFIG")
	}
	if cfg == "" {
		if u := UserConfigFile(); u != "" {
			if _, err := os.Stat(u); err == nil {
				cfg = u
			} else if !errors.Is(err, fs.ErrNotExist) {
				return Settings{}, fmt.Errorf("config file %s: %w", u, err)
			}
		}
	}
	var fileKeys map[string]any
	if cfg != "" {
		// Read into its own instance first, so that only the file's keys are checked.
		cv := viper.New()
		path, err := inv.abs(cfg) // relative to the invocation's directory, not the server's
		if err != nil {
			return Settings{}, fmt.Errorf("config file %s: %w", cfg, err)
		}
		cv.SetConfigFile(path)
		cv.SetConfigType("yaml")
		if err := cv.ReadInConfig(); err != nil {
			return Settings{}, fmt.Errorf("config file %s: %w", cfg, err)
		}
		settings := cv.AllSettings()
		for alias, key := range configAliases {
			if val, ok := settings[alias]; ok {
				settings[key] = val
				delete(settings, alias)
			}
		}
		for k := range settings {
			if k == "token" {
				return Settings{}, fmt.Errorf("config file %s: token: a token is never read from a config file: name a file of its own with token-file, or set %s", cfg, tokenVar)
			}
			if !knownKeys[k] {
				return Settings{}, fmt.Errorf("config file %s: unknown key %q", cfg, k)
			}
		}
		if err := v.MergeConfigMap(settings); err != nil {
			return Settings{}, fmt.Errorf("config file %s: %w", cfg, err)
		}
		s.ConfigFile, fileKeys = cfg, settings
	}
	if err := v.MergeConfigMap(envSettings(inv, flags)); err != nil {
		return Settings{}, err
	}

	has := func(k string) bool { return flags.Lookup(k) != nil }
	var err error
	s.Adapter = v.GetString(keyAdapter)
	// A file of the oci adapter's image is relative to where the command was given, not to the
	// engine's directory.
	if s.Image, err = oci.AbsImage(v.GetString(keyImage), inv.abs); err != nil {
		return Settings{}, fmt.Errorf("--%s: %w", keyImage, err)
	}
	s.RunID = v.GetString(keyRunID)
	s.NodeID = v.GetString(keyNodeID)
	s.Sandbox = v.GetString(keySandbox)
	s.OTLPEndpoint = v.GetString(keyOTLPEndpoint)
	s.Store = v.GetString(keyStore)
	if s.Runtime = v.GetString(keyRuntime); s.Runtime != "" && !slices.Contains(oci.Runtimes, s.Runtime) {
		return Settings{}, fmt.Errorf("--%s %q: want one of %v", keyRuntime, s.Runtime, oci.Runtimes)
	}
	if s.RunscPlatform = v.GetString(keyRunscPlatform); s.RunscPlatform != "" && !slices.Contains(oci.PlatformNames(), s.RunscPlatform) {
		return Settings{}, fmt.Errorf("--%s %q: want one of %v", keyRunscPlatform, s.RunscPlatform, oci.PlatformNames())
	}
	// Read whether or not the command declares the flags: sandbox rm, ls and prune reach the
	// cluster of the environment or the config file.
	s.KubeContext, s.Namespace = v.GetString(keyKubeContext), v.GetString(keyNamespace)
	s.KubernetesImage, s.RuntimeClass = v.GetString(keyKubeImage), v.GetString(keyRuntimeClass)
	s.KubernetesAgentImage = v.GetString(keyKubeAgentImage)
	if s.ImagePullPolicy = v.GetString(keyImagePullPolicy); s.ImagePullPolicy != "" && !slices.Contains(imagePullPolicies, s.ImagePullPolicy) {
		return Settings{}, fmt.Errorf("--%s %q: want one of %v", keyImagePullPolicy, s.ImagePullPolicy, imagePullPolicies)
	}
	if s.Kubeconfig = v.GetString(keyKubeconfig); s.Kubeconfig != "" {
		if s.Kubeconfig, err = inv.abs(s.Kubeconfig); err != nil {
			return Settings{}, err
		}
	}
	// The remote adapter's too: sandbox rm, ls and prune reach the server of a record.
	if err := loadRemote(inv, v, &s); err != nil {
		return Settings{}, err
	}
	s.MaxOutputBytes, s.Timeout, s.Attempt = DefaultMaxOutputBytes, DefaultTimeout, 1
	s.SyncMaxFileBytes = filesync.DefaultMaxFileBytes
	if has(keySyncMaxFile) {
		if s.SyncMaxFileBytes, err = sizeSetting(v, keySyncMaxFile); err != nil || s.SyncMaxFileBytes == 0 {
			return Settings{}, fmt.Errorf("--%s %v: want a size of at least one byte, like 100MiB", keySyncMaxFile, v.Get(keySyncMaxFile))
		}
	}
	s.MCPMaxMessageBytes = DefaultMCPMaxMessageBytes
	if has(keyNoCaches) {
		if s.NoCaches, err = boolSetting(v, keyNoCaches); err != nil {
			return Settings{}, err
		}
	}
	if has(keyNoPathDiff) {
		if s.NoPathDiff, err = boolSetting(v, keyNoPathDiff); err != nil {
			return Settings{}, err
		}
	}
	if has(keyAllowNetwork) {
		if s.AllowNetwork, err = boolSetting(v, keyAllowNetwork); err != nil {
			return Settings{}, err
		}
	}
	if has(flagAllowHost) {
		if err := v.BindPFlag(keyAllowHosts, flags.Lookup(flagAllowHost)); err != nil {
			return Settings{}, err
		}
		s.AllowHosts = listSetting(v.Get(keyAllowHosts))
		if err := egress.ValidateHosts(s.AllowHosts); len(s.AllowHosts) > 0 && err != nil {
			return Settings{}, fmt.Errorf("--%s: %s", flagAllowHost, errs.As(err).Message())
		}
		if s.AllowNetwork && len(s.AllowHosts) > 0 {
			return Settings{}, fmt.Errorf("--%s and --%s exclude each other: --%s opens every host, --%s only the ones named", keyAllowNetwork, flagAllowHost, keyAllowNetwork, flagAllowHost)
		}
	}
	if has(flagSecret) {
		if s.Secrets, s.Inject, err = secretSettings(inv, flags); err != nil {
			return Settings{}, err
		}
		if s.AllowNetwork && len(s.Secrets)+len(s.Inject) > 0 {
			return Settings{}, fmt.Errorf("--%s and --%s exclude each other: secrets go through the egress proxy of --%s", keyAllowNetwork, flagSecret, flagAllowHost)
		}
	}
	if has(flagDisableLayer) {
		if err := v.BindPFlag(keyDisableLayers, flags.Lookup(flagDisableLayer)); err != nil {
			return Settings{}, err
		}
		s.DisableLayers = listSetting(v.Get(keyDisableLayers))
	}
	if has(keyRequireIso) {
		if s.RequireIsolation, err = boolSetting(v, keyRequireIso); err != nil {
			return Settings{}, err
		}
	}
	if has(keyIsolation) {
		switch s.Isolation = v.GetString(keyIsolation); s.Isolation {
		case "auto", "off":
		default:
			return Settings{}, fmt.Errorf("--%s %q: want auto or off", keyIsolation, s.Isolation)
		}
		if s.Isolation == "off" && s.RequireIsolation {
			return Settings{}, fmt.Errorf("--%s off contradicts --%s", keyIsolation, keyRequireIso)
		}
	}
	s.Memory, s.Pids = 2<<30, 1024
	if has(keyMemory) {
		if s.Memory, err = sizeSetting(v, keyMemory); err != nil {
			return Settings{}, err
		}
		if s.Pids, err = intSetting(v, keyPids); err != nil || s.Pids < 0 {
			return Settings{}, fmt.Errorf("--%s %v: want a count, 0 for none", keyPids, v.Get(keyPids))
		}
		if s.CPUs = v.GetFloat64(keyCPUs); s.CPUs < 0 {
			return Settings{}, fmt.Errorf("--%s %v: want a positive number, 0 for no cap", keyCPUs, v.Get(keyCPUs))
		}
		if strings.TrimSpace(fmt.Sprint(v.Get(keyDisk))) == "none" {
			s.Disk = -1
		} else if s.Disk, err = sizeSetting(v, keyDisk); err != nil {
			return Settings{}, err
		}
		for _, b := range []struct {
			key string
			to  *[]string
		}{{keyROBind, &s.ROBind}, {keyRWBind, &s.RWBind}} {
			for _, p := range v.GetStringSlice(b.key) {
				abs, err := inv.abs(p)
				if err != nil || p == "" {
					return Settings{}, fmt.Errorf("--%s %q: want a path", b.key, p)
				}
				*b.to = append(*b.to, abs)
			}
		}
	}
	if has(keyMaxOutputBytes) {
		if s.MaxOutputBytes, err = intSetting(v, keyMaxOutputBytes); err != nil {
			return Settings{}, err
		}
	}
	if has(keyMCPMaxMessage) {
		if s.MCPMaxMessageBytes, err = intSetting(v, keyMCPMaxMessage); err != nil {
			return Settings{}, err
		}
		if s.MCPMaxMessageBytes < MCPMaxMessageBytesMin || s.MCPMaxMessageBytes > MCPMaxMessageBytesMax {
			return Settings{}, fmt.Errorf("--%s %d: want %d..%d", keyMCPMaxMessage, s.MCPMaxMessageBytes, MCPMaxMessageBytesMin, MCPMaxMessageBytesMax)
		}
	}
	if has(keyIteration) {
		if s.Iteration, err = intSetting(v, keyIteration); err != nil {
			return Settings{}, err
		}
	}
	if has(keyAttempt) {
		if s.Attempt, err = intSetting(v, keyAttempt); err != nil {
			return Settings{}, err
		}
	}
	if has(keyTimeout) {
		if s.Timeout, err = durationSetting(v, keyTimeout); err != nil {
			return Settings{}, err
		}
	}

	if has(keyAdapter) {
		if !knownAdapter(s.Adapter) {
			return Settings{}, unknownAdapter(s.Adapter)
		}
		if s.Adapter == "remote" && s.RemoteURL == "" && s.Sandbox == "" {
			return Settings{}, errs.New(errs.InvalidInput, "remote", "", "--adapter remote needs --%s URL (or %s, or %s: in the config file): the sandboxerd serve to run the sandbox on", keyURL, envName(keyURL), keyURL)
		}
	}
	if s.MaxOutputBytes <= 0 || s.MaxOutputBytes > MaxOutputBytesLimit {
		return Settings{}, fmt.Errorf("--max-output-bytes %d: want 1..%d", s.MaxOutputBytes, MaxOutputBytesLimit)
	}
	if s.Timeout <= 0 || s.Timeout > TimeoutLimit {
		return Settings{}, fmt.Errorf("--timeout %s: want more than 0 and at most %s", s.Timeout, TimeoutLimit)
	}
	if s.Iteration < 0 {
		return Settings{}, fmt.Errorf("--iteration %d: must not be negative", s.Iteration)
	}
	if s.Attempt < 1 {
		return Settings{}, fmt.Errorf("--attempt %d: attempts count from 1", s.Attempt)
	}
	if has(keyRunID) && has(keyAttempt) && (s.RunID == "" || s.NodeID == "") {
		return Settings{}, errors.New("--run-id and --node-id must not be empty")
	}

	if s.StateDir = v.GetString(keyStateDir); s.StateDir == "" {
		s.StateDir = DefaultStateDir()
	}
	if s.StateDir, err = inv.abs(s.StateDir); err != nil {
		return Settings{}, err
	}
	if s.Root = v.GetString(keyRoot); s.Root == "" {
		s.Root = "."
	}
	if s.Root, err = inv.abs(s.Root); err != nil {
		return Settings{}, err
	}
	if s.ConfigFile != "" {
		if err := checkConfigFile(inv, s, flags, fileKeys); err != nil {
			return Settings{}, err
		}
	}
	s.set = map[string]bool{}
	for _, k := range []string{keyImage, keyRuntime, keyMemory, keyPids} {
		_, inFile := fileKeys[k]
		s.set[k] = flags.Changed(k) || inv.getenv(envName(k)) != "" || inFile
	}
	switch j := v.GetString(keyJournal); j {
	case JournalOff:
		s.Journal = ""
	case "":
		s.Journal = filepath.Join(s.StateDir, "journal.db")
	default:
		if s.Journal, err = inv.abs(j); err != nil {
			return Settings{}, err
		}
	}
	if file := v.GetString(keyJournalKey); file != "" && s.Journal != "" {
		if s.journalKeyFile, err = inv.abs(file); err != nil {
			return Settings{}, err
		}
		if s.journalKey, err = readJournalKey(s.journalKeyFile); err != nil {
			return Settings{}, err
		}
	}
	return s, nil
}

// addJournalKeyFlag declares --journal-key-file.
func addJournalKeyFlag(f *pflag.FlagSet) {
	f.String(keyJournalKey, "", fmt.Sprintf("a file holding the key that signs each journal row (HMAC-SHA256; at least %d bytes, surrounding white space trimmed) and that `sandboxer log --verify` checks them with; the journal stores only its id", minJournalKey))
}

// minJournalKey is the shortest journal key accepted, in bytes.
const minJournalKey = 16

// readJournalKey reads the journal key of the file p (absolute). Errors never show the content.
func readJournalKey(p string) ([]byte, error) {
	key, err := readSecretFile(keyJournalKey, p)
	if err == nil && len(key) < minJournalKey {
		err = fmt.Errorf("--%s %s: the key is %d bytes, want at least %d (like the output of `openssl rand -hex 32`)", keyJournalKey, p, len(key), minJournalKey)
	}
	return []byte(key), err
}

// journalOptions are the options the journal of s is opened with.
func (s Settings) journalOptions() journal.Options {
	return journal.Options{MaxFieldBytes: s.MaxOutputBytes, Key: s.journalKey}
}

// loadRemote reads the remote adapter's settings into s: the server, its CA and token, and what
// to ask it for.
func loadRemote(inv invocation, v *viper.Viper, s *Settings) error {
	var err error
	s.RemoteURL = strings.TrimSpace(v.GetString(keyURL))
	if s.RemoteCA = v.GetString(keyRemoteCA); s.RemoteCA != "" {
		if s.RemoteCA, err = inv.abs(s.RemoteCA); err != nil {
			return err
		}
	}
	if s.RemoteAdapter = v.GetString(keyRemoteAdapter); s.RemoteAdapter == "remote" {
		return fmt.Errorf("--%s remote: a server runs its sandboxes itself, it does not forward them to another", keyRemoteAdapter)
	}
	if v.Get(keyRemoteTTL) != nil {
		if s.RemoteTTL, err = durationSetting(v, keyRemoteTTL); err != nil {
			return err
		}
		if s.RemoteTTL < 0 {
			return fmt.Errorf("--%s %s: must not be negative (0: the server's default)", keyRemoteTTL, s.RemoteTTL)
		}
	}
	switch idle := strings.TrimSpace(v.GetString(keyRemoteIdle)); idle {
	case "":
	case "none":
		s.RemoteIdle = -1
	default:
		if s.RemoteIdle, err = time.ParseDuration(idle); err != nil || s.RemoteIdle < 0 {
			return fmt.Errorf("--%s %q: want a duration (like 30m), or none", keyRemoteIdle, idle)
		}
	}
	s.remoteToken = inv.getenv(tokenVar)
	if file := v.GetString(keyTokenFile); file != "" {
		if s.tokenFile, err = inv.abs(file); err != nil {
			return err
		}
		if s.remoteToken, err = readToken(s.tokenFile); err != nil {
			return err
		}
	}
	return nil
}

// readToken reads the token of the file p (--token-file, absolute): its content without
// surrounding white space. Errors never show the content.
func readToken(p string) (string, error) {
	tok, err := readSecretFile(keyTokenFile, p)
	if err == nil && strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("--%s %s: a token is one line without spaces", keyTokenFile, p)
	}
	return tok, err
}

// readSecretFile reads the secret of the file p (absolute) that the setting key names: its
// content without surrounding white space, at most 64 KiB, not empty. Errors never show the
// content.
func readSecretFile(key, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", key, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if err != nil {
		return "", fmt.Errorf("--%s %s: %w", key, p, err)
	}
	secret := strings.TrimSpace(string(b))
	switch {
	case len(b) > 64<<10:
		return "", fmt.Errorf("--%s %s: more than 64 KiB", key, p)
	case secret == "":
		return "", fmt.Errorf("--%s %s is empty", key, p)
	}
	return secret, nil
}

// The typed getters of viper turn a malformed value into zero silently; these refuse it instead,
// so SANDBOXER_TIMEOUT=soon is a usage error rather than "no timeout".

func intSetting(v *viper.Viper, key string) (int, error) {
	switch x := v.Get(key).(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case float64:
		if x != float64(int(x)) {
			return 0, fmt.Errorf("--%s %v: not an integer", key, x)
		}
		return int(x), nil
	case string:
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(x), &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(x) {
			return 0, fmt.Errorf("--%s %q: not an integer", key, x)
		}
		return n, nil
	default:
		return 0, fmt.Errorf("--%s %v: not an integer", key, x)
	}
}

func boolSetting(v *viper.Viper, key string) (bool, error) {
	switch x := v.Get(key).(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "t", "true", "yes", "on":
			return true, nil
		case "", "0", "f", "false", "no", "off":
			return false, nil
		}
		return false, fmt.Errorf("--%s %q: not a boolean", key, x)
	default:
		return false, fmt.Errorf("--%s %v: not a boolean", key, x)
	}
}

func durationSetting(v *viper.Viper, key string) (time.Duration, error) {
	switch x := v.Get(key).(type) {
	case time.Duration:
		return x, nil
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("--%s %q: not a duration (like 30s or 2m)", key, x)
		}
		return d, nil
	default:
		return 0, fmt.Errorf("--%s %v: not a duration (like 30s or 2m)", key, x)
	}
}

// checkConfigFile refuses a config file that a sandbox could have written, and one that lowers
// isolation or raises network access on its own. A sandbox can write its workspace (the local
// adapter's root, and the state directory's long-lived workspaces; with isolation off, anything
// its user can); a file there must never decide the next call's isolation, so it is not read. A file elsewhere may still only raise isolation: turning
// it off, or the network on, takes a flag or the environment.
func checkConfigFile(inv invocation, s Settings, flags *pflag.FlagSet, keys map[string]any) error {
	file, err := inv.abs(s.ConfigFile)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real
	}
	writable := []string{s.StateDir}           // local long-lived sandboxes' workspaces live here
	if s.Adapter == "local" || copiesRoot(s) { // a container's changes are synced back to it
		writable = append(writable, s.Root)
	}
	for _, dir := range writable {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if rel, err := filepath.Rel(dir, file); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return fmt.Errorf("config file %s is inside %s, where a sandbox can write it: it is never read (keep it outside the workspace, or use flags and SANDBOXER_* variables)", s.ConfigFile, dir)
		}
	}
	explicit := func(key string) bool {
		return flags.Changed(key) || inv.getenv(envName(key)) != ""
	}
	if _, ok := keys[keyIsolation]; ok && s.Isolation == "off" && !explicit(keyIsolation) {
		return fmt.Errorf("config file %s: isolation: off lowers isolation, which only --%s off or SANDBOXER_ISOLATION=off may do", s.ConfigFile, keyIsolation)
	}
	if _, ok := keys[keyAllowHosts]; ok && len(s.AllowHosts) > 0 && !flags.Changed(flagAllowHost) && inv.getenv(envName(keyAllowHosts)) == "" {
		return fmt.Errorf("config file %s: allow-hosts opens the network to hosts, which only --%s or SANDBOXER_ALLOW_HOSTS may do", s.ConfigFile, flagAllowHost)
	}
	if _, ok := keys[keyDisableLayers]; ok && len(s.DisableLayers) > 0 && !flags.Changed(flagDisableLayer) && inv.getenv(envName(keyDisableLayers)) == "" {
		return fmt.Errorf("config file %s: disable-layers lowers isolation, which only --%s or SANDBOXER_DISABLE_LAYERS may do", s.ConfigFile, flagDisableLayer)
	}
	if _, ok := keys[keyAllowNetwork]; ok && s.AllowNetwork && !explicit(keyAllowNetwork) {
		return fmt.Errorf("config file %s: allow-network: true opens the network, which only --%s or SANDBOXER_ALLOW_NETWORK=true may do", s.ConfigFile, keyAllowNetwork)
	}
	return nil
}

// listSetting reads a list setting: a flag's values, a comma-separated environment variable or
// a config file's list or string; each entry is split at commas and trimmed, and empty ones are
// dropped.
func listSetting(x any) []string {
	var raw []string
	switch x := x.(type) {
	case nil:
	case string:
		raw = []string{x}
	case []string:
		raw = x
	case []any:
		for _, e := range x {
			raw = append(raw, fmt.Sprint(e))
		}
	default:
		raw = []string{fmt.Sprint(x)}
	}
	var out []string
	for _, r := range raw {
		for e := range strings.SplitSeq(r, ",") {
			e = strings.TrimSpace(e)
			switch {
			case e == "":
			case len(out) > 0 && strings.Contains(out[len(out)-1], " ") && isMethod(strings.Fields(e)[0]):
				// an allow-hosts entry's rule: "api.example.com GET,POST /v1/" keeps its methods
				out[len(out)-1] += "," + e
			default:
				out = append(out, e)
			}
		}
	}
	return out
}

// isMethod reports whether w is an HTTP method as allow-hosts rules name them (upper-case letters).
func isMethod(w string) bool {
	return w != "" && strings.Trim(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}

// addSecretFlags declares --secret and --inject.
func addSecretFlags(f *pflag.FlagSet) {
	f.StringArray(flagSecret, nil, "a credential the egress proxy writes into requests to the hosts --inject binds it to, never inside the sandbox (commands see the placeholder sandboxer-secret-NAME): NAME=env:VAR or NAME=file:PATH; repeatable; never from a config file")
	f.StringArray(flagInject, nil, "bind secrets to a host of --allow-host: 'HOST:HEADER=TEMPLATE', as in 'api.example.com:Authorization=Bearer {{NAME}}'; repeatable")
}

// secretSettings reads --secret (a file: source made absolute in the invocation's directory)
// and --inject; the values are read when the sandbox is opened (lifecycle).
func secretSettings(inv invocation, flags *pflag.FlagSet) ([]egress.SecretRef, []egress.Injection, error) {
	raw, err := flags.GetStringArray(flagSecret)
	if err != nil {
		return nil, nil, err
	}
	var refs []egress.SecretRef
	for _, r := range raw {
		name, source, _ := strings.Cut(r, "=")
		if path, ok := strings.CutPrefix(source, "file:"); ok && path != "" {
			if path, err = inv.abs(path); err != nil {
				return nil, nil, err
			}
			r = name + "=file:" + path
		}
		ref, err := egress.ParseSecretRef(r)
		if err != nil {
			return nil, nil, fmt.Errorf("--%s: %s", flagSecret, errs.As(err).Message())
		}
		refs = append(refs, ref)
	}
	rawInject, err := flags.GetStringArray(flagInject)
	if err != nil {
		return nil, nil, err
	}
	inject, err := egress.ParseInjections(rawInject)
	if err != nil {
		return nil, nil, fmt.Errorf("--%s: %s", flagInject, errs.As(err).Message())
	}
	return refs, inject, nil
}

// sizeSetting reads a byte size: a number of bytes, or one with a KiB, MiB, GiB (or K, M, G)
// suffix; 0 means none.
func sizeSetting(v *viper.Viper, key string) (int64, error) {
	raw := strings.TrimSpace(fmt.Sprint(v.Get(key)))
	n, err := parseSize(raw)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: want bytes, or a size like 512MiB or 2GiB; 0 for none", key, raw)
	}
	return n, nil
}

// parseSize reads a byte size: a number of bytes, or one with a KiB, MiB, GiB (or K, M, G) suffix.
func parseSize(raw string) (int64, error) {
	num, mult := raw, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n, ok := strings.CutSuffix(raw, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size: want bytes, or a size like 512MiB or 2GiB", raw)
	}
	return n * mult, nil
}

// envSettings are the settings the SANDBOXER_* variables of inv give (empty ones are unset).
func envSettings(inv invocation, flags *pflag.FlagSet) map[string]any {
	m := map[string]any{}
	set := func(key string) {
		if val := inv.getenv(envName(key)); val != "" {
			m[key] = val
		}
	}
	for key := range knownKeys {
		set(key)
	}
	flags.VisitAll(func(f *pflag.Flag) { set(f.Name) })
	return m
}
