package lifecycle

import (
	"context"
	"errors"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/errs"
)

const kubernetesEnforces = "each sandbox is a pod: a non-root user, all capabilities dropped, no privilege " +
	"escalation, a read-only root with emptyDir /workspace and /tmp, the runtime's default seccomp " +
	"profile, no service account token, memory/CPU limits, --runtime-class if given (gVisor, Kata); " +
	"unless --allow-network a deny-all egress NetworkPolicy, verified from inside the pod at creation " +
	"against an address the pod reached before it: results report the network cut only when that " +
	"address stopped answering, and --require-isolation refuses otherwise (docs/kubernetes.md)."

// kubernetesLasting is the configuration of the long-lived sandbox rec: its pod's namespace is
// the one it was created in, whatever o says.
func kubernetesLasting(o Options, rec Record) kubernetes.Config {
	cfg := o.KubernetesConfig()
	cfg.Persist = true
	if rec.Namespace != "" {
		cfg.Namespace = rec.Namespace
	}
	return cfg
}

// kubernetesDriver: one pod per sandbox in the namespace of the cluster of the kubeconfig. An
// ephemeral sandbox's pod is deleted by Stop; a long-lived one is created with Persist (the
// adapter's prune leaves it) and found again by its sandbox id (the pod's label), which the
// record keeps as Backend, with its namespace. The kubeconfig and context come from the Options
// of each call.
var kubernetesDriver = driver{
	open: func(ctx context.Context, o Options) (adapter.Sandbox, error) {
		return kubernetes.New(ctx, o.KubernetesConfig())
	},
	create: func(ctx context.Context, o Options, rs records, rec *Record) error {
		sb, err := kubernetes.New(ctx, kubernetesLasting(o, Record{}))
		if err != nil {
			return err
		}
		rec.Backend, rec.Workspace, rec.Image, rec.Namespace = sb.ID(), sb.Workspace(), o.Kubernetes.Image, sb.Namespace()
		if rec.Image == "" {
			rec.Image = image.DefaultTag
		}
		return sb.Detach()
	},
	attach: func(ctx context.Context, o Options, rec Record) (adapter.Sandbox, error) {
		cfg := kubernetesLasting(o, rec)
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
	destroy: func(ctx context.Context, o Options, rec Record) error {
		err := kubernetes.Remove(ctx, kubernetesLasting(o, rec), rec.Backend)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		return err
	},
	alive: func(ctx context.Context, o Options, rec Record) (bool, error) {
		infos, err := kubernetes.List(ctx, kubernetesLasting(o, rec))
		return runningIn(infos, err, rec.Backend, func(i kubernetes.Info) (string, string) { return i.ID, i.State })
	},
	fork: func(ctx context.Context, o Options, rs records, src adapter.Sandbox, rec *Record) (adapter.CopyReport, error) {
		c, err := forkAs[*kubernetes.Sandbox](ctx, "kubernetes", src)
		if err != nil {
			return adapter.CopyReport{}, err
		}
		rec.Backend, rec.Workspace, rec.Namespace = c.ID(), c.Workspace(), c.Namespace()
		return adapter.CopyReport{}, c.Detach()
	},
	prune: func(ctx context.Context, o Options) ([]string, error) {
		if o.KubeconfigSource() == "" {
			return nil, nil // no cluster configured: nothing of ours can be there
		}
		return kubernetes.Prune(ctx, o.KubernetesConfig(), kubernetes.PruneOptions{})
	},
}
