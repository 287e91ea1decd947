// Package kubernetes is the sandbox adapter that runs each sandbox as one pod of a Kubernetes
// cluster, for when one machine is not enough (issue 24).
//
// A sandbox is a hardened pod (see podSpec): the sandbox agent (package agent) as the container's
// PID 1, a non-root user, every capability dropped, no privilege escalation, a read-only root file
// system with emptyDir volumes for /workspace and /tmp, the runtime's default seccomp profile, no
// service account token, no service links, memory and CPU limits, and an optional runtime class
// (gVisor, Kata). Unless the network is allowed, a deny-all NetworkPolicy is created with the pod,
// and whether the cluster really enforces it is verified from inside the pod at creation, before
// any command runs, against a positive control: an address the pod reached before the policy must
// stop answering after it. Results report the network cut only then (a CNI without policy support,
// such as a plain bridge, is reported unenforced, a pod that reached no address unverified, and
// RequireIsolation refuses both).
//
// Commands and file calls go through the agent over one exec stream per sandbox handle (the
// apiserver's exec, WebSocket with a SPDY fallback, as kubectl does): a call costs a frame on that
// stream, not an apiserver round trip. File calls are the busybox scripts of package shellfs, shared
// with the docker adapter. Pods are labelled (managed-by, sandbox id, persist, pool) and annotated
// with their owner, so that List, Remove and Prune work across processes; a warm pool (NewPool)
// keeps ready pods that any process claims with an optimistic update of their labels.
//
// The client is client-go's REST client over a scheme of its own (core/v1, networking/v1,
// authorization/v1, node/v1), not the generated clientset, whose package initialisation alone
// costs every CLI call tens of milliseconds.
package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/internal/agentproc"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
)

// Labels and annotations put on every pod (and network policy) of this adapter.
const (
	LabelManaged   = "app.kubernetes.io/managed-by" // "sandboxer"
	LabelID        = "sandboxer.dev/sandbox"        // the sandbox id
	LabelPersist   = "sandboxer.dev/persist"        // "true": outlives its creator, Prune leaves it
	LabelPool      = "sandboxer.dev/pool"           // the warm pool a ready, unclaimed pod belongs to
	AnnotOwner     = "sandboxer.dev/owner"          // "hostname:pid" of the process that created or claimed it
	AnnotNetwork   = "sandboxer.dev/network"        // the network verdict: "enforced", "unenforced", "unverified", "proxied" or "allowed"
	AnnotAgentPath = "sandboxer.dev/agent-path"     // where the agent is when an init container brought it (agent.BroughtPath)
	managedByValue = "sandboxer"
)

// Defaults of the zero Config.
const (
	DefaultNamespace   = "default"
	DefaultMemoryBytes = 512 << 20
	DefaultMilliCPUs   = 1000
	// DefaultWorkspaceBytes caps the workspace, as on docker and oci (issue 34: a command filled
	// the host's disk).
	DefaultWorkspaceBytes = 10 << 30
	DefaultStartTimeout   = 2 * time.Minute
	DefaultPullPolicy     = "IfNotPresent"
	DefaultUID            = 1000
	namePrefix            = "sandboxer-"
	containerName         = "sandbox"
)

// Config configures a Kubernetes sandbox. The zero value is the hardened default against the
// cluster of KUBECONFIG (or ~/.kube/config, or the pod's own service account in a cluster), in
// the kubeconfig context's namespace or "default", with image.DefaultTag.
type Config struct {
	// Kubeconfig is the kubeconfig file; "" uses KUBECONFIG, then ~/.kube/config, then the
	// in-cluster configuration.
	Kubeconfig string `mapstructure:"kubeconfig"`
	// Context is the kubeconfig context; "" is its current context.
	Context string `mapstructure:"context"`
	// Namespace holds the sandboxes' pods; "" is the context's namespace, else DefaultNamespace.
	Namespace string `mapstructure:"namespace"`
	// Image is the sandbox image (it must hold the agent at agent.Path and busybox, as the image
	// `sandboxer image build` makes); "" is image.DefaultTag, which a cluster has to be given
	// (docs/kubernetes.md: push it to the cluster's registry, or import it into its nodes).
	Image string `mapstructure:"image"`
	// AgentImage, when set, lets Image be any image (Debian, python, a user's own): an init
	// container of AgentImage (the sandbox image, which holds the agent at agent.Path and cp)
	// copies the agent into a memory-backed emptyDir that the sandbox container mounts read-only
	// at agent.BroughtPath. The commands then get the image's environment (its PATH), HOME aside.
	AgentImage string `mapstructure:"agent_image"`
	// ImagePullPolicy is the pod's: "Always", "IfNotPresent" (the default) or "Never".
	ImagePullPolicy string `mapstructure:"image_pull_policy"`
	// RuntimeClassName runs the pod under a runtime class (gVisor's "gvisor", Kata's "kata").
	RuntimeClassName string `mapstructure:"runtime_class"`
	// AllowNetwork leaves the pod's network as the cluster gives it (no NetworkPolicy).
	AllowNetwork bool `mapstructure:"allow_network"`
	// AllowHosts gives the sandbox an egress proxy (package egress) reached through the agent,
	// with the network otherwise cut as when it is off. Exclusive with AllowNetwork.
	AllowHosts []string `mapstructure:"allow_hosts"`
	// Egress tunes the egress proxy; its AllowHosts is ignored.
	Egress egress.Config `mapstructure:"-" json:"-"`
	// UID runs the pod's processes (and is its fsGroup); 0 is DefaultUID. Root is refused.
	UID int64 `mapstructure:"uid"`
	// MemoryBytes limits memory; 0 is DefaultMemoryBytes, -1 is no limit.
	MemoryBytes int64 `mapstructure:"memory_bytes"`
	// MilliCPUs limits CPU in thousandths of a CPU; 0 is DefaultMilliCPUs, -1 is no limit.
	MilliCPUs int64 `mapstructure:"milli_cpus"`
	// TmpBytes is the size of the memory-backed /tmp; 0 is half the memory limit (adapter.TmpBytes).
	TmpBytes int64 `mapstructure:"tmp_bytes"`
	// WorkspaceBytes is the workspace emptyDir's size limit and the container's ephemeral-storage
	// limit: the kubelet evicts the pod once the workspace holds more (a write does not fail with
	// ENOSPC; the sandbox ends, its calls fail with SANDBOX_UNAVAILABLE naming the eviction; see
	// docs/kubernetes.md). 0 is DefaultWorkspaceBytes, -1 is no limit.
	WorkspaceBytes int64 `mapstructure:"workspace_bytes"`
	// ProbeTargets are addresses ("host:port") that a pod of this namespace reaches when nothing
	// cuts its network, for the verification of the cut when none of the usual ones (the node's
	// kubelet and apiserver, the gateway, the apiserver's service) answers a pod: each is tried
	// before the deny-all policy, and the one that answered must stop answering after it.
	ProbeTargets []string `mapstructure:"probe_targets"`
	// RequireIsolation refuses to create a sandbox whose network cut is not verified (a cluster
	// whose CNI ignores NetworkPolicy, or where no probe address answers a pod), with
	// errs.IsolationUnavailable.
	RequireIsolation bool `mapstructure:"require_isolation"`
	// Persist marks the pod as outliving the process that created it: Prune leaves it unless
	// asked for all.
	Persist bool `mapstructure:"persist"`
	// StartTimeout bounds how long New waits for the pod to run; 0 is DefaultStartTimeout.
	StartTimeout time.Duration `mapstructure:"start_timeout"`
	// Env is added to the minimal environment of every command.
	Env []string `mapstructure:"env"`
	// Labels are added to the pod's labels (the adapter's own cannot be overridden).
	Labels map[string]string `mapstructure:"labels"`
}

// Validate reports a configuration that cannot be used, as errs.InvalidInput.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return errs.New(errs.InvalidInput, "kubernetes", "", format, a...)
	}
	switch c.ImagePullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return bad("image pull policy %q is not Always, IfNotPresent or Never", c.ImagePullPolicy)
	}
	if c.AllowNetwork && len(c.AllowHosts) > 0 {
		return bad("allow-network and allow-hosts exclude each other")
	}
	if err := egress.ValidateHosts(c.AllowHosts); err != nil {
		return err
	}
	if c.UID < 0 {
		return bad("uid %d is negative (0 is the default, root is refused)", c.UID)
	}
	if c.MemoryBytes < -1 || (c.MemoryBytes > 0 && c.MemoryBytes < 16<<20) {
		return bad("memory limit %d: at least 16 MiB, 0 for the default or -1 for none", c.MemoryBytes)
	}
	if c.MilliCPUs < -1 || (c.MilliCPUs > 0 && c.MilliCPUs < 10) {
		return bad("CPU limit %dm: at least 10m, 0 for the default or -1 for none", c.MilliCPUs)
	}
	if c.TmpBytes < 0 || c.StartTimeout < 0 {
		return bad("negative size or timeout")
	}
	if c.WorkspaceBytes < -1 || (c.WorkspaceBytes > 0 && c.WorkspaceBytes < 16<<20) {
		return bad("workspace limit %d: at least 16 MiB, 0 for the default or -1 for none", c.WorkspaceBytes)
	}
	for _, t := range c.ProbeTargets {
		if h, p, err := net.SplitHostPort(t); err != nil || h == "" || p == "" {
			return bad("probe target %q is not host:port", t)
		}
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return bad("env entry %q is not KEY=VALUE", e)
		}
	}
	for k := range c.Labels {
		if k == LabelManaged || strings.HasPrefix(k, "sandboxer.dev/") {
			return bad("label %q is the adapter's own", k)
		}
	}
	return nil
}

func (c Config) image() string {
	if c.Image == "" {
		return image.DefaultTag
	}
	return c.Image
}

func (c Config) pullPolicy() string {
	if c.ImagePullPolicy == "" {
		return DefaultPullPolicy
	}
	return c.ImagePullPolicy
}

func (c Config) uid() int64 {
	if c.UID == 0 {
		return DefaultUID
	}
	return c.UID
}

// user is the user commands run as, as the agent takes it (agent.RunAs).
func (c Config) user() string { return fmt.Sprintf("%d:%d", c.uid(), c.uid()) }

func (c Config) startTimeout() time.Duration {
	if c.StartTimeout == 0 {
		return DefaultStartTimeout
	}
	return c.StartTimeout
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// Sandbox is one pod. Its methods are safe for concurrent use.
type Sandbox struct {
	k   *kube
	cfg Config
	id  string
	pod string // the pod's name (namePrefix + id)
	// agentBin is where the agent is in the pod when an init container brought it ("": the
	// image's, agent.Path; AnnotAgentPath).
	agentBin string
	// network is the egress probe's verdict (AnnotNetwork).
	network string
	rv      string // the pod's resourceVersion when create finished (a pool's claim precondition)
	// workspaceHome: the pod has nothing at adapter.DefaultHome (made before commands had a HOME
	// of their own): its commands' HOME stays the workspace.
	workspaceHome bool

	agent agentproc.Slot[*agentConn]

	egress egress.Holder // the proxy of cfg.AllowHosts

	mu      sync.Mutex
	stopped bool
}

var (
	_ adapter.Sandbox    = (*Sandbox)(nil)
	_ adapter.Capable    = (*Sandbox)(nil)
	_ adapter.Forker     = (*Sandbox)(nil)
	_ adapter.Identified = (*Sandbox)(nil)
)

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// owner is this process, as AnnotOwner records it.
func owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// New creates a sandbox: its NetworkPolicy (unless the network is allowed), its pod, waits until
// the pod runs, starts the agent stream and, for a network that should be cut, verifies the cut.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	return create(ctx, k, cfg, "")
}

// Attach returns a handle on an existing sandbox by id (another process's, typically a persistent
// one): its pod must be running.
func Attach(ctx context.Context, cfg Config, id string) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	p, err := k.getPod(ctx, namePrefix+id)
	if err != nil {
		return nil, k.classify("attach", err)
	}
	if p.Labels[LabelManaged] != managedByValue || p.Labels[LabelID] != id {
		return nil, errs.New(errs.NotFound, "attach", "", "pod %s is not a sandboxer sandbox", p.Name)
	}
	if p.Status.Phase != "Running" || p.DeletionTimestamp != nil {
		return nil, errs.New(errs.SandboxUnavailable, "attach", "", "sandbox %s: its pod is %s", id, podState(p))
	}
	return &Sandbox{k: k, cfg: cfg, id: id, pod: p.Name, network: p.Annotations[AnnotNetwork], agentBin: p.Annotations[AnnotAgentPath],
		workspaceHome: !mountsHome(p)}, nil
}

// ID returns the sandbox id (the pod is namePrefix + id).
func (s *Sandbox) ID() string { return s.id }

// PodName returns the pod's name.
func (s *Sandbox) PodName() string { return s.pod }

// Namespace returns the pod's namespace.
func (s *Sandbox) Namespace() string { return s.k.ns }

// Workspace is the workspace as commands see it.
func (s *Sandbox) Workspace() string { return adapter.DefaultWorkspace }

// Capabilities describes the adapter. The network is NetContainer when the pod's cut was verified,
// NetHost (only command inspection applies) when it was not.
func (s *Sandbox) Capabilities() adapter.Capabilities {
	network := adapter.NetContainer
	if s.network == netUnenforced || s.network == netUnverified {
		network = adapter.NetHost
	}
	return adapter.Capabilities{
		Adapter:     "kubernetes",
		FSIsolation: adapter.FSImage,
		Network:     network,
		Exec:        adapter.ExecContainer,
		Signals:     true,
		Symlinks:    true,
		Workspace:   adapter.DefaultWorkspace,
		Ports:       true,
		Processes:   true,
	}
}

func (s *Sandbox) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func (s *Sandbox) errStopped(op string) error {
	return errs.New(errs.SandboxUnavailable, op, "", "sandbox %s is stopped", s.id)
}

// end marks the handle finished; false when it already was.
func (s *Sandbox) end() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.stopped = true
	return true
}

// Stop deletes the pod (no grace: the agent as PID 1 ignores SIGTERM) and its NetworkPolicy. It is
// idempotent; every other call fails with errs.SandboxUnavailable afterwards. A pod that is already
// gone is not an error.
func (s *Sandbox) Stop(ctx context.Context) error {
	if !s.end() {
		return nil
	}
	s.egress.Close()
	s.agent.Close()
	return s.k.deleteSandbox(ctx, s.id)
}

// Detach ends this handle's use of the sandbox and leaves the pod running for another handle (or
// process) to Attach to: what the handle ran in the foreground is killed, background processes
// stay with the pod's agent.
func (s *Sandbox) Detach() error {
	if !s.end() {
		return nil
	}
	s.egress.Close()
	s.agent.Close()
	return nil
}

// Fork starts a new sandbox with the same configuration whose workspace is a copy of this one's at
// this moment (a tar stream from this pod's agent into the new pod's).
func (s *Sandbox) Fork(ctx context.Context) (adapter.Sandbox, error) {
	if s.isStopped() {
		return nil, s.errStopped("fork")
	}
	f, err := create(ctx, s.k, s.cfg, "")
	if err != nil {
		return nil, err
	}
	if err := copyWorkspace(ctx, s, f); err != nil {
		f.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return f, nil
}
