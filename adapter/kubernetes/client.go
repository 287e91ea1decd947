package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandboxer/sandboxer/errs"
)

// kube is a connection to one namespace of a cluster: a REST client per API group the adapter
// uses, over a scheme of its own.
type kube struct {
	rest   *rest.Config
	ns     string
	core   *rest.RESTClient // /api/v1: pods, exec
	net    *rest.RESTClient // networking.k8s.io/v1: network policies
	authz  *rest.RESTClient // authorization.k8s.io/v1: self subject access reviews (doctor)
	node   *rest.RESTClient // node.k8s.io/v1: runtime classes (doctor)
	params runtime.ParameterCodec
}

// scheme knows the few types the adapter sends and receives.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkingv1.AddToScheme, authzv1.AddToScheme, nodev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

// loadConfig reads the kubeconfig (Config.Kubeconfig, KUBECONFIG, ~/.kube/config, or in-cluster)
// and returns the REST configuration and the namespace to use.
func loadConfig(cfg Config) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", errs.Wrap(errs.SandboxUnavailable, "kubernetes", "", fmt.Errorf("no cluster configuration (set --kubeconfig or KUBECONFIG): %w", err))
	}
	ns := cfg.Namespace
	if ns == "" {
		if n, _, err := cc.Namespace(); err == nil && n != "" {
			ns = n
		} else {
			ns = DefaultNamespace
		}
	}
	rc.UserAgent = "sandboxer"
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100 // client-go's default of 5 would throttle a pool's claims
	}
	return rc, ns, nil
}

func connect(cfg Config) (*kube, error) {
	rc, ns, err := loadConfig(cfg)
	if err != nil {
		return nil, err
	}
	k := &kube{rest: rc, ns: ns, params: runtime.NewParameterCodec(scheme)}
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	for _, c := range []struct {
		dst  **rest.RESTClient
		path string
		gv   schema.GroupVersion
	}{
		{&k.core, "/api", corev1.SchemeGroupVersion},
		{&k.net, "/apis", networkingv1.SchemeGroupVersion},
		{&k.authz, "/apis", authzv1.SchemeGroupVersion},
		{&k.node, "/apis", nodev1.SchemeGroupVersion},
	} {
		gc := rest.CopyConfig(rc)
		gc.APIPath, gc.GroupVersion, gc.NegotiatedSerializer = c.path, &c.gv, codecs
		if gc.ContentType == "" {
			gc.ContentType = runtime.ContentTypeJSON
		}
		rcl, err := rest.RESTClientFor(gc)
		if err != nil {
			return nil, errs.Wrap(errs.SandboxUnavailable, "kubernetes", "", err)
		}
		*c.dst = rcl
	}
	return k, nil
}

// classify turns an apiserver error into the errs code of the adapter contract.
func (k *kube) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch {
	case apierrors.IsNotFound(err):
		return errs.Wrap(errs.NotFound, op, "", err)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return errs.Wrap(errs.SandboxUnavailable, op, "", fmt.Errorf("the cluster refused (docs/kubernetes.md lists the RBAC role the adapter needs): %w", err))
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return errs.Wrap(errs.InvalidInput, op, "", err)
	}
	return errs.Wrap(errs.SandboxUnavailable, op, "", err)
}

func (k *kube) getPod(ctx context.Context, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	err := k.core.Get().Namespace(k.ns).Resource("pods").Name(name).Do(ctx).Into(&p)
	return &p, err
}

func (k *kube) createPod(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	var out corev1.Pod
	err := k.core.Post().Namespace(k.ns).Resource("pods").Body(p).Do(ctx).Into(&out)
	return &out, err
}

// listPods lists the namespace's pods that match a label selector.
func (k *kube) listPods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	var l corev1.PodList
	err := k.core.Get().Namespace(k.ns).Resource("pods").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, k.params).Do(ctx).Into(&l)
	return l.Items, err
}

// patchPod applies a JSON merge patch.
func (k *kube) patchPod(ctx context.Context, name string, patch []byte) (*corev1.Pod, error) {
	var out corev1.Pod
	err := k.core.Patch(types.MergePatchType).Namespace(k.ns).Resource("pods").Name(name).Body(patch).Do(ctx).Into(&out)
	return &out, err
}

// deletePod deletes a pod at once (grace 0: its PID 1, the agent, ignores SIGTERM anyway).
func (k *kube) deletePod(ctx context.Context, name string) error {
	zero := int64(0)
	err := k.core.Delete().Namespace(k.ns).Resource("pods").Name(name).
		Body(&metav1.DeleteOptions{GracePeriodSeconds: &zero}).Do(ctx).Error()
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (k *kube) createPolicy(ctx context.Context, np *networkingv1.NetworkPolicy) error {
	err := k.net.Post().Namespace(k.ns).Resource("networkpolicies").Body(np).Do(ctx).Error()
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (k *kube) deletePolicy(ctx context.Context, name string) error {
	err := k.net.Delete().Namespace(k.ns).Resource("networkpolicies").Name(name).Do(ctx).Error()
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (k *kube) listPolicies(ctx context.Context, selector string) ([]networkingv1.NetworkPolicy, error) {
	var l networkingv1.NetworkPolicyList
	err := k.net.Get().Namespace(k.ns).Resource("networkpolicies").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, k.params).Do(ctx).Into(&l)
	return l.Items, err
}

// deleteSandbox deletes a sandbox's pod and network policy (both named namePrefix + id).
func (k *kube) deleteSandbox(ctx context.Context, id string) error {
	perr := k.deletePod(ctx, namePrefix+id)
	nerr := k.deletePolicy(ctx, namePrefix+id)
	return k.classify("stop", errors.Join(perr, nerr))
}

// exec runs argv in the pod's sandbox container over the apiserver's exec (WebSocket, or SPDY for
// an older apiserver) until it exits or ctx ends.
func (k *kube) exec(ctx context.Context, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	u := k.core.Post().Namespace(k.ns).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: containerName, Command: argv,
			Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil,
		}, k.params).URL()
	ws, err := remotecommand.NewWebSocketExecutor(k.rest, http.MethodGet, u.String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(k.rest, http.MethodPost, u)
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// selector is a label selector of the adapter's pods, with more terms.
func selector(terms ...string) string {
	return strings.Join(append([]string{LabelManaged + "=" + managedByValue}, terms...), ",")
}
