package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/egress"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/doctor"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// doctorReport is `sandboxer doctor --json`.
type doctorReport struct {
	Checks   []doctor.Check  `json:"checks"`
	Adapters []adapterReport `json:"adapters"`
	// LocalIsolation: each kernel isolation layer of the local adapter, and why it is missing here.
	LocalIsolation local.Report `json:"localIsolation"`
	// OCIRuntimes: each runtime of the oci adapter, found or not, and what it enforces here.
	OCIRuntimes []oci.RuntimeReport `json:"ociRuntimes"`
	// Kubernetes: the cluster of the kubernetes adapter, if one is configured (never a failed check).
	Kubernetes kubeReport `json:"kubernetes"`
}

// kubeReport is what kubernetes.Probe found, with its errors as text.
type kubeReport struct {
	// Kubeconfig is where the cluster's configuration comes from; "" when nowhere (not probed).
	Kubeconfig string `json:"kubeconfig"`
	Server     string `json:"server,omitempty"`
	Version    string `json:"version,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	// Error is why the cluster cannot be used, or why it was not probed.
	Error string `json:"error,omitempty"`
	// Permissions: each verb the adapter needs in the namespace ("create pods/exec") and whether
	// RBAC allows it.
	Permissions    []kubePermission `json:"permissions,omitempty"`
	RuntimeClasses []string         `json:"runtimeClasses"`
	// Network is what a probe pod found of the deny-all egress NetworkPolicy: "enforced",
	// "unenforced", "unverified", or "" when not probed (only with --adapter kubernetes) or the probe failed
	// (NetworkError).
	Network      string `json:"network,omitempty"`
	NetworkError string `json:"networkError,omitempty"`
}

type kubePermission struct {
	Permission string `json:"permission"`
	Allowed    bool   `json:"allowed"`
}

// probeKubernetes probes the cluster of the kubernetes adapter when --adapter kubernetes or a
// kubeconfig is found, and with a probe pod for the network only with --adapter kubernetes.
func probeKubernetes(ctx context.Context, s Settings) kubeReport {
	r := kubeReport{Kubeconfig: optionsOf(s).KubeconfigSource()}
	if r.Kubeconfig == "" && s.Adapter != "kubernetes" {
		r.Error = "no kubeconfig (--kubeconfig, KUBECONFIG or ~/.kube/config) and not in a cluster: not probed"
		return r
	}
	probeNetwork := s.Adapter == "kubernetes"
	limit := 30 * time.Second
	if probeNetwork {
		limit = kubernetes.DefaultStartTimeout + time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	rep := kubernetes.Probe(ctx, optionsOf(s).KubernetesConfig(), probeNetwork)
	r.Server, r.Version, r.Namespace, r.RuntimeClasses, r.Network = rep.Server, rep.Version, rep.Namespace, rep.RuntimeClasses, rep.Network
	if rep.Err != nil {
		r.Error = rep.Err.Error()
	}
	for _, p := range rep.Permissions {
		r.Permissions = append(r.Permissions, kubePermission{Permission: p.String(), Allowed: p.Allowed})
	}
	switch {
	case rep.NetworkErr != nil:
		r.NetworkError = rep.NetworkErr.Error()
	case !probeNetwork && rep.Err == nil:
		r.NetworkError = "not probed (doctor --adapter kubernetes starts a probe pod)"
	}
	return r
}

type adapterReport struct {
	Name         string                `json:"name"`
	Available    bool                  `json:"available"`
	Enforces     string                `json:"enforces"`
	Capabilities *adapter.Capabilities `json:"capabilities,omitempty"`
	// Allowlist says whether --allow-host is enforced by this adapter here (issue 16).
	Allowlist allowlistReport `json:"allowlist"`
	Error     string          `json:"error,omitempty"`
	// NotProbed says why no probe sandbox was made (kubernetes: a pod, only with --adapter
	// kubernetes; remote: not configured, no --url).
	NotProbed string `json:"notProbed,omitempty"`
	// Server is the remote adapter's server as its health answer describes it (URL, version,
	// adapters), when --url names one.
	Server string `json:"server,omitempty"`
}

// allowlistReport: whether an allowlist is enforced (the egress proxy is the sandbox's only way
// out), and why not.
type allowlistReport struct {
	Enforced bool   `json:"enforced"`
	Detail   string `json:"detail"`
}

// allowlistOf says whether sb enforces an allowlist: it needs a network of its own that is cut
// (a network namespace or a container's network none), a listener on that network's loopback
// (adapter.PortListener) and an egress proxy of its own (egress.Egressed).
func allowlistOf(sb adapter.Sandbox, caps adapter.Capabilities) allowlistReport {
	_, listens := sb.(adapter.PortListener)
	_, proxied := sb.(egress.Egressed)
	switch {
	case caps.Network == adapter.NetVirtual:
		return allowlistReport{Detail: "no network at all: --allow-host is refused (SANDBOX_UNAVAILABLE)"}
	case caps.Network == adapter.NetHost:
		return allowlistReport{Detail: "NOT enforced: commands share the host's network here (no network namespace), so only command inspection checks the hosts"}
	case !listens || !proxied:
		return allowlistReport{Detail: "NOT available in this build: the adapter cannot yet carry the egress proxy"}
	}
	return allowlistReport{Enforced: true, Detail: fmt.Sprintf("enforced: the network stays cut and the egress proxy on the sandbox's 127.0.0.1:%d is the only way out", egress.Port)}
}

func newDoctorCmd(std Streams) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Show what works on this machine and what each adapter enforces",
		Long: `Probe this machine: ripgrep, the Docker daemon and the --image, network namespaces (a child
is started in new user+network namespaces) and Landlock (the kernel's ABI version), then list
each adapter of this build with the capabilities it declares here, and each OCI runtime of the
oci adapter (runc, runsc, crun): found or not, its version, and the isolation layers a probe
sandbox had in force (for runsc also gVisor's platform and why: kvm is probed afresh, bounded,
where /dev/kvm exists; --runsc-platform forces one), whether the local adapter takes the workspace (--root, or the current
directory: not /, a system or home directory, nor one holding sandboxer's own files), and the
local adapter's isolation layers: in force here, or missing and why (a command that needs a
missing layer is refused unless --disable-layer names it). With a kubeconfig (--kubeconfig,
KUBECONFIG, ~/.kube/config) or --adapter kubernetes, the cluster of the kubernetes adapter: its
server and version, whether RBAC allows what the adapter needs in --namespace, its runtime
classes and, with --adapter kubernetes only, whether a probe pod finds NetworkPolicy egress
enforced. With --url, the remote adapter's server: its health (version, adapters), whether it
takes the token (--token-file or SANDBOXER_TOKEN) and a probe sandbox's capabilities. Exit status
0 when every probe passed, 1 otherwise (the report is printed either way; the cluster and the
server are never failed probes).`,
		Args: exactArgs(0),
		RunE: runE(func(c *cobra.Command, args []string) error {
			s, err := settingsOf(c)
			if err != nil {
				return err
			}
			ctx := c.Context()
			daemon, img := doctor.Docker(ctx, s.Image)
			rep := doctorReport{Checks: []doctor.Check{
				configCheck(s), workspaceCheck(s), doctor.Platform(), doctor.Ripgrep(ctx), daemon, img, doctor.NetworkNamespace(ctx), doctor.Landlock(),
			}}
			for _, name := range allAdapterNames() {
				rep.Adapters = append(rep.Adapters, describeAdapter(ctx, s, name))
			}
			rep.LocalIsolation = local.Probe()
			rep.OCIRuntimes = oci.Probe(ctx, optionsOf(s).OCIConfig())
			rep.Kubernetes = probeKubernetes(ctx, s)
			if asJSON {
				if err := printJSON(std, rep); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
				for _, ch := range rep.Checks {
					status := "ok"
					if !ch.OK {
						status = "FAIL"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Name, status, ch.Detail)
				}
				tw.Flush()
				for _, a := range rep.Adapters {
					fmt.Fprintf(std.Out, "\nadapter %s: ", a.Name)
					switch {
					case !a.Available:
						fmt.Fprintf(std.Out, "not available: %s\n", a.Error)
						continue
					case a.Error != "":
						fmt.Fprintf(std.Out, "cannot start here: %s\n", a.Error)
					case a.NotProbed != "":
						fmt.Fprintf(std.Out, "not probed: %s\n", a.NotProbed)
					default:
						fmt.Fprintf(std.Out, "fs=%s network=%s exec=%s signals=%t workspace=%s\n",
							a.Capabilities.FSIsolation, a.Capabilities.Network, a.Capabilities.Exec,
							a.Capabilities.Signals, a.Capabilities.Workspace)
					}
					if a.Server != "" {
						fmt.Fprintf(std.Out, "  server %s\n", a.Server)
					}
					fmt.Fprintf(std.Out, "  %s\n", a.Enforces)
					if a.Allowlist.Detail != "" {
						fmt.Fprintf(std.Out, "  allowlist (--allow-host): %s\n", a.Allowlist.Detail)
					}
				}
				printLocalLayers(std, rep.LocalIsolation)
				printOCIRuntimes(std, rep.OCIRuntimes)
				printKubernetes(std, rep.Kubernetes)
			}
			for _, ch := range rep.Checks {
				if !ch.OK {
					return exit(1)
				}
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON report")
	c.Flags().String("config", "", configFlagUsage)
	c.Flags().String(keyImage, DefaultImage, "image of the docker adapter to look for")
	c.Flags().String(keyAdapter, DefaultAdapter, "the adapter to probe in depth (kubernetes: a probe pod tells whether the cluster enforces NetworkPolicy egress)")
	addRunscPlatformFlag(c.Flags())
	addKubernetesFlags(c.Flags())
	addRemoteFlags(c.Flags())
	return c
}

// printKubernetes prints the kubernetes adapter's cluster: one line when there is none.
func printKubernetes(std Streams, r kubeReport) {
	if r.Kubeconfig == "" && r.Server == "" {
		fmt.Fprintf(std.Out, "\nkubernetes: %s\n", r.Error)
		return
	}
	where := r.Kubeconfig
	if where == "" {
		where = "no kubeconfig"
	}
	if r.Error != "" {
		fmt.Fprintf(std.Out, "\nkubernetes (%s): not usable: %s\n", where, r.Error)
		return
	}
	fmt.Fprintf(std.Out, "\nkubernetes (%s): %s %s, namespace %s\n", where, r.Server, r.Version, r.Namespace)
	var missing []string
	for _, p := range r.Permissions {
		if !p.Allowed {
			missing = append(missing, p.Permission)
		}
	}
	if len(missing) == 0 {
		fmt.Fprintf(std.Out, "  rbac: ok (%d permissions the adapter needs)\n", len(r.Permissions))
	} else {
		fmt.Fprintf(std.Out, "  rbac: MISSING %s (docs/kubernetes.md has the Role)\n", strings.Join(missing, ", "))
	}
	classes := "none"
	if len(r.RuntimeClasses) > 0 {
		classes = strings.Join(r.RuntimeClasses, ", ")
	}
	fmt.Fprintf(std.Out, "  runtime classes (--runtime-class): %s\n", classes)
	switch r.Network {
	case "enforced":
		fmt.Fprintf(std.Out, "  network policy egress: enforced (an address a probe pod reached stopped answering under the deny-all policy)\n")
	case "unverified":
		fmt.Fprintf(std.Out, "  network policy egress: UNVERIFIED: no probe address answered a pod even without the policy, so nothing shows the cut holds; results report the network as not cut and --require-isolation refuses (a library caller names an address pods reach in kubernetes.Config.ProbeTargets)\n")
	case "unenforced":
		fmt.Fprintf(std.Out, "  network policy egress: NOT enforced: this cluster's CNI ignores NetworkPolicy, so results report the network as not cut and --require-isolation refuses\n")
	case "":
		fmt.Fprintf(std.Out, "  network policy egress: %s\n", r.NetworkError)
	default:
		fmt.Fprintf(std.Out, "  network policy egress: %s\n", r.Network)
	}
}

// printLocalLayers lists the local adapter's isolation layers: in force here or missing, and why.
func printLocalLayers(std Streams, rep local.Report) {
	fmt.Fprintf(std.Out, "\nlocal isolation layers (--isolation auto):\n")
	tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
	for _, l := range rep.Layers {
		if l.Available {
			fmt.Fprintf(tw, "  %s\tok\n", l.Name)
		} else {
			fmt.Fprintf(tw, "  %s\tMISSING\t%s\n", l.Name, l.Reason)
		}
	}
	tw.Flush()
}

// printOCIRuntimes lists the oci adapter's runtimes: found or not, version, and the layers a
// probe sandbox had in force.
func printOCIRuntimes(std Streams, reps []oci.RuntimeReport) {
	for _, r := range reps {
		fmt.Fprintf(std.Out, "\noci runtime %s: ", r.Name)
		switch {
		case r.Path == "":
			fmt.Fprintf(std.Out, "not found: %s\n", r.Error)
		case !r.Works:
			fmt.Fprintf(std.Out, "%s (%s) cannot run a sandbox here: %s\n", r.Version, r.Path, r.Error)
		default:
			fmt.Fprintf(std.Out, "%s (%s), kernel %s\n  enforces: %s\n", r.Version, r.Path, r.Kernel, strings.Join(r.Layers, ", "))
		}
		if r.Platform != nil {
			fmt.Fprintf(std.Out, "  gVisor platform: %s\n", r.Platform)
		}
		if r.Checkpoint != "" {
			fmt.Fprintf(std.Out, "  checkpoint with memory: %s\n", r.Checkpoint)
		}
	}
}

// allAdapterNames lists the adapters of this build and those of the contract it lacks.
func allAdapterNames() []string {
	names := adapterNames()
	for n := range plannedAdapters {
		names = append(names, n)
	}
	return sortedUnique(names)
}

func describeAdapter(ctx context.Context, s Settings, name string) adapterReport {
	if !knownAdapter(name) {
		return adapterReport{Name: name, Error: plannedAdapters[name]}
	}
	a, _ := lifecycle.Lookup(name) // a test binary's adapter enforces nothing it could say
	r := adapterReport{Name: name, Available: true, Enforces: a.Enforces}
	if name == "kubernetes" && s.Adapter != name {
		r.NotProbed = "no probe pod without --adapter kubernetes (the cluster is described below)"
		return r
	}
	if name == "remote" {
		if s.RemoteURL == "" {
			r.NotProbed = "not configured: --url (or SANDBOXER_URL) names a sandboxerd serve to probe"
			return r
		}
		if r.Server, r.Error = probeServer(ctx, s); r.Error != "" {
			return r
		}
	}
	probe := s
	probe.Adapter = name // each row probes its own adapter, whatever --adapter says
	probe.Root = ""      // local: a temporary workspace, removed by Stop
	sb, err := openEphemeral(ctx, probe)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer sb.Stop(context.WithoutCancel(ctx))
	if cp, ok := sb.(adapter.Capable); ok {
		caps := cp.Capabilities()
		r.Capabilities = &caps
		r.Allowlist = allowlistOf(sb, caps)
	}
	return r
}

// probeServer asks the remote adapter's server for its health (a description of it), then
// whether it takes the token: the error says why the server cannot be used.
func probeServer(ctx context.Context, s Settings) (server, failure string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg, err := optionsOf(s).RemoteConfig()
	if err != nil {
		return "", errs.As(err).Message()
	}
	h, err := remote.Health(ctx, cfg)
	if err != nil {
		return "", fmt.Sprintf("server %s: %s", cfg.URL, errs.As(err).Message())
	}
	server = fmt.Sprintf("%s: sandboxerd %s, adapters %s", cfg.URL, h.Version, strings.Join(h.Adapters, ", "))
	if _, err := remote.List(ctx, cfg); err != nil {
		how := ":"
		if errs.CodeOf(err) == api.CodeUnauthorized {
			how = " refused the token (--token-file or SANDBOXER_TOKEN):"
		}
		return server, fmt.Sprintf("server %s%s %s", cfg.URL, how, errs.As(err).Message())
	}
	return server, ""
}

// configCheck says which config file was read, and fails when a sandboxer.yaml lies in the
// current directory or the workspace: such a file is never read (a sandbox could write it), which
// its author may not know.
// workspaceCheck says whether the local adapter takes the workspace (--root, or the current
// directory): the rules of adapter/workspace, as an ephemeral call applies them.
func workspaceCheck(s Settings) doctor.Check {
	if err := vetRoot(s); err != nil {
		return doctor.Check{Name: "workspace", Detail: errs.As(err).Message() + "; cd into a project, or pass --root DIR"}
	}
	return doctor.Check{Name: "workspace", OK: true, Detail: s.Root + " (the local adapter's)"}
}

func configCheck(s Settings) doctor.Check {
	ch := doctor.Check{Name: "config", OK: true, Detail: "no config file"}
	if s.ConfigFile != "" {
		ch.Detail = "read " + s.ConfigFile
	}
	var ignored []string
	for _, dir := range []string{".", s.Root} {
		p, err := filepath.Abs(filepath.Join(dir, ConfigFileName))
		if _, serr := os.Stat(p); err == nil && serr == nil && !slices.Contains(ignored, p) {
			ignored = append(ignored, p)
		}
	}
	if len(ignored) > 0 {
		ch.OK = false
		ch.Detail += "; NOT read: " + strings.Join(ignored, ", ") + " (a config file in the workspace could be written by a sandbox; use " + UserConfigFile() + " or --config outside it)"
	}
	return ch
}
