package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	authzv1 "k8s.io/api/authorization/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/version"
)

// Report is what Probe found about a cluster, for `sandboxer doctor`.
type Report struct {
	Server    string // the apiserver's URL
	Version   string // its Kubernetes version
	Namespace string
	// Err is why the cluster cannot be used (unreachable, no configuration); the rest is then empty.
	Err error
	// Permissions lists each verb on each resource the adapter needs, and whether RBAC allows it.
	Permissions []Permission
	// RuntimeClasses are the cluster's runtime classes (Config.RuntimeClassName picks one).
	RuntimeClasses []string
	// Network is what a probe sandbox found: "enforced" (the deny-all NetworkPolicy holds),
	// "unenforced" (the CNI ignores it: only command inspection applies), "unverified" (no
	// address answered the pod even before the policy), or "" when no probe
	// sandbox could be made (NetworkErr says why).
	Network    string
	NetworkErr error
}

// Permission is one access check.
type Permission struct {
	Verb, Group, Resource, Subresource string
	Allowed                            bool
}

func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	return p.Verb + " " + r
}

// needed is what the adapter does in its namespace.
var needed = []Permission{
	{Verb: "create", Resource: "pods"}, {Verb: "get", Resource: "pods"}, {Verb: "list", Resource: "pods"},
	{Verb: "patch", Resource: "pods"}, {Verb: "delete", Resource: "pods"},
	{Verb: "create", Resource: "pods", Subresource: "exec"}, {Verb: "get", Resource: "pods", Subresource: "exec"},
	{Verb: "create", Group: "networking.k8s.io", Resource: "networkpolicies"},
	{Verb: "list", Group: "networking.k8s.io", Resource: "networkpolicies"},
	{Verb: "delete", Group: "networking.k8s.io", Resource: "networkpolicies"},
}

// Probe checks that the cluster is reachable, that RBAC allows what the adapter needs in the
// namespace, lists runtime classes and, when probeNetwork, creates a sandbox to learn whether
// NetworkPolicy egress is enforced (a few seconds; the sandbox is deleted).
func Probe(ctx context.Context, cfg Config, probeNetwork bool) Report {
	var r Report
	k, err := connect(cfg)
	if err != nil {
		r.Err = err
		return r
	}
	r.Server, r.Namespace = k.rest.Host, k.ns
	var v version.Info
	body, err := k.core.Get().AbsPath("/version").DoRaw(ctx)
	if err == nil {
		err = json.Unmarshal(body, &v)
	}
	if err != nil {
		r.Err = k.classify("doctor", fmt.Errorf("cluster unreachable: %w", err))
		return r
	}
	r.Version = v.GitVersion
	for _, p := range needed {
		review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: k.ns, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
		}}}
		var out authzv1.SelfSubjectAccessReview
		if err := k.authz.Post().Resource("selfsubjectaccessreviews").Body(review).Do(ctx).Into(&out); err == nil {
			p.Allowed = out.Status.Allowed
		}
		r.Permissions = append(r.Permissions, p)
	}
	var rcs nodev1.RuntimeClassList
	if err := k.node.Get().Resource("runtimeclasses").Do(ctx).Into(&rcs); err == nil {
		for _, rc := range rcs.Items {
			r.RuntimeClasses = append(r.RuntimeClasses, rc.Name)
		}
	}
	if probeNetwork {
		pc := cfg
		pc.AllowNetwork, pc.AllowHosts, pc.RequireIsolation, pc.Persist = false, nil, false, false
		s, err := create(ctx, k, pc, "")
		if err != nil {
			r.NetworkErr = err
		} else {
			r.Network = s.network
			r.NetworkErr = errors.Join(s.Stop(context.WithoutCancel(ctx)))
		}
	}
	return r
}
