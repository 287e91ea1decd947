package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/internal/state"
)

// recordConfig is the configuration for a recorded sandbox: its pod's namespace is the one it was
// created in, whatever the settings of this call say.
func recordConfig(s Settings, rec state.Record) kubernetes.Config {
	cfg := kubeConfig(s, true)
	if rec.Namespace != "" {
		cfg.Namespace = rec.Namespace
	}
	return cfg
}

// kubeConfig is the kubernetes adapter's configuration for the settings.
func kubeConfig(s Settings, persist bool) kubernetes.Config {
	return kubernetes.Config{
		Kubeconfig: s.Kubeconfig, Context: s.KubeContext, Namespace: s.Namespace,
		Image: s.KubernetesImage, AgentImage: s.KubernetesAgentImage, ImagePullPolicy: s.ImagePullPolicy, RuntimeClassName: s.RuntimeClass,
		AllowNetwork: s.AllowNetwork, AllowHosts: s.AllowHosts, RequireIsolation: s.RequireIsolation,
		Persist: persist, WorkspaceBytes: s.Disk,
	}
}

// kubeconfigSource says where the kubernetes adapter would find its cluster (--kubeconfig,
// KUBECONFIG, ~/.kube/config or the pod's service account), or "" when nowhere.
func kubeconfigSource(s Settings) string {
	switch {
	case s.Kubeconfig != "":
		return s.Kubeconfig
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

// kubernetesBackend: one pod per sandbox in --namespace of the cluster of --kubeconfig. An
// ephemeral sandbox's pod is deleted when the invocation ends; a long-lived one is created with
// Persist (the adapter's prune leaves it) and found again by its sandbox id (the pod's label),
// which the record keeps as Backend, with its namespace. The kubeconfig and context come from the
// settings of each call: sandbox rm, ls and prune take them from SANDBOXER_* or the config file.
var kubernetesBackend = backend{
	enforces: "each sandbox is a pod: a non-root user, all capabilities dropped, no privilege " +
		"escalation, a read-only root with emptyDir /workspace and /tmp, the runtime's default seccomp " +
		"profile, no service account token, memory/CPU limits, --runtime-class if given (gVisor, Kata); " +
		"unless --allow-network a deny-all egress NetworkPolicy, verified from inside the pod at creation " +
		"against an address the pod reached before it: results report the network cut only when that " +
		"address stopped answering, and --require-isolation refuses otherwise (docs/kubernetes.md).",
	open: func(ctx context.Context, s Settings) (adapter.Sandbox, error) {
		return kubernetes.New(ctx, kubeConfig(s, false))
	},
	create: func(ctx context.Context, s Settings, st state.Dir, rec *state.Record) error {
		sb, err := kubernetes.New(ctx, kubeConfig(s, true))
		if err != nil {
			return err
		}
		rec.Backend, rec.Workspace, rec.Image, rec.Namespace = sb.ID(), sb.Workspace(), s.KubernetesImage, sb.Namespace()
		if rec.Image == "" {
			rec.Image = image.DefaultTag
		}
		return sb.Detach()
	},
	attach: func(ctx context.Context, s Settings, st state.Dir, rec state.Record) (adapter.Sandbox, error) {
		cfg := recordConfig(s, rec)
		if rec.Image != "" {
			cfg.Image = rec.Image // a fork runs the image its source was created from
		}
		sb, err := kubernetes.Attach(ctx, cfg, rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil, errs.New(errs.SandboxUnavailable, "attach", "", "sandbox %s: its pod is gone (or in another namespace than --namespace)", rec.ID)
		}
		return sb, err
	},
	detach: func(ctx context.Context, sb adapter.Sandbox) error {
		if k, ok := sb.(*kubernetes.Sandbox); ok {
			return k.Detach()
		}
		return nil
	},
	destroy: func(ctx context.Context, s Settings, rec state.Record) error {
		err := kubernetes.Remove(ctx, recordConfig(s, rec), rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		return err
	},
	alive: func(ctx context.Context, s Settings, rec state.Record) (bool, error) {
		infos, err := kubernetes.List(ctx, recordConfig(s, rec))
		if err != nil {
			return false, err
		}
		for _, i := range infos {
			if i.ID == rec.Backend {
				return i.State == "running", nil
			}
		}
		return false, nil
	},
	fork: func(ctx context.Context, s Settings, st state.Dir, src adapter.Sandbox, rec *state.Record) (adapter.CopyReport, error) {
		k, ok := src.(*kubernetes.Sandbox)
		if !ok {
			return adapter.CopyReport{}, errs.New(errs.Internal, "fork", "", "not a kubernetes sandbox")
		}
		child, err := k.Fork(ctx)
		if err != nil {
			return adapter.CopyReport{}, err
		}
		c, ok := child.(*kubernetes.Sandbox)
		if !ok {
			child.Stop(context.WithoutCancel(ctx))
			return adapter.CopyReport{}, errs.New(errs.Internal, "fork", "", "forked kubernetes sandbox is not a pod")
		}
		rec.Backend, rec.Workspace, rec.Namespace = c.ID(), c.Workspace(), c.Namespace()
		return adapter.CopyReport{}, c.Detach()
	},
	prune: func(ctx context.Context, s Settings) ([]string, error) {
		if kubeconfigSource(s) == "" {
			return nil, nil // no cluster configured: nothing of ours can be there
		}
		return kubernetes.Prune(ctx, kubeConfig(s, false), kubernetes.PruneOptions{})
	},
}
