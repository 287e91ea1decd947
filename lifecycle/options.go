package lifecycle

import (
	"os"
	"path/filepath"

	"github.com/sandboxer/sandboxer/egress"

	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/oci"
)

// Options is what the adapters need to open, create, attach, remove, prune and fork sandboxes.
// Its zero value opens a local sandbox in a temporary directory with the local adapter's
// defaults; a field an adapter does not use is ignored by it.
type Options struct {
	// Adapter names the adapter (see Adapters): local, docker, oci, kubernetes, memory or remote.
	// "" is local. Manager's calls on an existing sandbox use its Record's adapter instead.
	Adapter string
	// StateDir is where the docker adapter keeps its capped workspaces and the oci adapter
	// everything (images, containers, workspaces); "" is each adapter's default.
	StateDir string
	// Image is the image of docker sandboxes ("" is image.DefaultTag) and the root file system of
	// oci ones ("" is the oci adapter's own). Kubernetes takes Kubernetes.Image.
	Image string
	// AllowNetwork gives commands the network; AllowHosts instead gives them an egress proxy to
	// these hosts only (package egress). They exclude each other.
	AllowNetwork bool
	AllowHosts   []string
	// Secrets are credentials the egress proxy writes into requests to the hosts Inject binds
	// them to (package egress: commands hold only placeholders). Each is read on the host when
	// the sandbox is opened (egress.SecretRef: env:VAR with LookupEnv, or file:PATH); they need
	// AllowHosts. A long-lived sandbox keeps them by name and source in its record (Network).
	Secrets []egress.SecretRef
	Inject  []egress.Injection
	// LookupEnv reads the environment of the Secrets' env: sources; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool) `json:"-"`
	// EgressTuning tunes the egress proxies (their resolver and upstream trust store: tests); its
	// AllowHosts, Secrets and Inject are ignored.
	EgressTuning egress.Config   `json:"-"`
	secretValues []egress.Secret // Secrets, read by resolveEgress
	// Disk caps the workspace, in bytes: how much a local sandbox's may grow (0: no cap), the
	// size of a docker or oci sandbox's (0: the adapter's default, 10 GiB), a kubernetes pod's
	// emptyDir (0: none); -1 is no cap on any adapter.
	Disk int64
	// RequireIsolation refuses a command (local) or a pod (kubernetes) whose isolation cannot be
	// applied or verified.
	RequireIsolation bool
	// ForkMaxFileBytes is the largest file Fork copies on the host (local, oci): a larger one
	// fails the fork. 0 is the adapter's default.
	ForkMaxFileBytes int64

	Local      LocalOptions
	OCI        OCIOptions
	Kubernetes KubernetesOptions
	Remote     RemoteOptions
}

// LocalOptions are the local adapter's (local.Config has the full story of each field).
type LocalOptions struct {
	// Root is the workspace of a sandbox Open makes: kept by Stop. "" is a temporary directory
	// that Stop removes. A long-lived sandbox's workspace is in the state directory.
	Root string
	// Isolation is "auto" ("" too) for the kernel isolation layers, or "off".
	Isolation string
	// CPUs, Memory (bytes) and Pids limit the sandbox's commands together: for Memory and Pids,
	// 0 is the adapter's default and local.NoLimit none; for CPUs 0 is no cap.
	CPUs   float64
	Memory int64
	Pids   int
	// DisableLayers names isolation layers left out (local.Layer constants).
	DisableLayers []string
	// ReadPaths and WritePaths are host paths commands also see, read-only or read-write.
	ReadPaths, WritePaths []string
	// NoCaches shows commands none of the caller's build and module caches.
	NoCaches bool
	// DenyRead are host paths commands may never read; Protect the caller's own files that no
	// workspace may contain (its configuration, state, journal).
	DenyRead, Protect []string
}

// OCIOptions are the oci adapter's.
type OCIOptions struct {
	// Runtime is the OCI runtime a new sandbox runs under: runc (""), runsc or crun. An existing
	// sandbox keeps the one it was created with.
	Runtime string
	// RunscPlatform is gVisor's platform under runsc: auto (""), kvm, ptrace or systrap.
	RunscPlatform string
}

// KubernetesOptions are the kubernetes adapter's: the cluster and the pods. "" is the adapter's
// default for each (kubernetes.Config).
type KubernetesOptions struct {
	// Kubeconfig is the kubeconfig file ("": KUBECONFIG, then ~/.kube/config, then the pod's
	// service account) and Context its context.
	Kubeconfig, Context string
	// Namespace is where new pods go; a recorded sandbox stays in the one it was created in.
	Namespace string
	// Image and AgentImage are the sandbox's image and the one that brings the agent.
	Image, AgentImage string
	// ImagePullPolicy is Kubernetes' (Always, IfNotPresent, Never).
	ImagePullPolicy string
	// RuntimeClass is the pods' runtime class (gVisor, Kata), if any.
	RuntimeClass string
}

// LocalConfig is the local adapter's configuration of o for the workspace root ("" a temporary
// directory).
func (o Options) LocalConfig(root string) local.Config {
	l := o.Local
	disk := o.Disk
	if disk < 0 { // none: local's 0
		disk = 0
	}
	return local.Config{Root: root, Isolation: l.Isolation, RequireIsolation: o.RequireIsolation,
		CPUs: l.CPUs, Memory: l.Memory, Pids: l.Pids, Disk: disk, DisableLayers: l.DisableLayers,
		ReadPaths: l.ReadPaths, WritePaths: l.WritePaths, NoCaches: l.NoCaches, AllowHosts: o.AllowHosts,
		DenyRead: l.DenyRead, Protect: l.Protect, ForkMaxFileBytes: o.ForkMaxFileBytes, Egress: o.egressConfig()}
}

// DockerConfig is the docker adapter's configuration of o for a sandbox Open makes (Persist is
// set for the long-lived ones).
func (o Options) DockerConfig() docker.Config {
	return docker.Config{Image: o.Image, AllowNetwork: o.AllowNetwork, AllowHosts: o.AllowHosts,
		WorkspaceBytes: o.Disk, StateDir: o.StateDir, Egress: o.egressConfig()}
}

// OCIConfig is the oci adapter's configuration of o for a sandbox Open makes.
func (o Options) OCIConfig() oci.Config {
	return oci.Config{Runtime: o.OCI.Runtime, RunscPlatform: o.OCI.RunscPlatform, StateDir: o.StateDir, Image: o.Image,
		AllowNetwork: o.AllowNetwork, AllowHosts: o.AllowHosts, ForkMaxFileBytes: o.ForkMaxFileBytes, WorkspaceBytes: o.Disk,
		Egress: o.egressConfig()}
}

// KubernetesConfig is the kubernetes adapter's configuration of o for a sandbox Open makes.
func (o Options) KubernetesConfig() kubernetes.Config {
	k := o.Kubernetes
	return kubernetes.Config{
		Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace,
		Image: k.Image, AgentImage: k.AgentImage, ImagePullPolicy: k.ImagePullPolicy, RuntimeClassName: k.RuntimeClass,
		AllowNetwork: o.AllowNetwork, AllowHosts: o.AllowHosts, RequireIsolation: o.RequireIsolation,
		WorkspaceBytes: o.Disk, Egress: o.egressConfig(),
	}
}

// KubeconfigSource says where the kubernetes adapter would find its cluster (Kubeconfig,
// KUBECONFIG, ~/.kube/config or the pod's service account), or "" when nowhere.
func (o Options) KubeconfigSource() string {
	switch {
	case o.Kubernetes.Kubeconfig != "":
		return o.Kubernetes.Kubeconfig
	case os.Getenv("KUBECONFIG") != "":
		return "KUBECONFIG=" + os.Getenv("KUBECONFIG")
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		return "in-cluster service account"
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		p := filepath.Join(h, ".kube", "config")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
