package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Info describes one sandbox pod.
type Info struct {
	ID      string // sandbox id
	Pod     string
	Image   string
	State   string // the pod's phase in lower case: "pending", "running", "succeeded", "failed"
	Owner   string // hostname:pid of the process that created or claimed it
	Persist bool
	Pool    string // the warm pool it waits in, if it is not claimed yet
	Network string // what the egress probe found (AnnotNetwork)
	Created time.Time
}

func info(p corev1.Pod) Info {
	i := Info{
		ID: p.Labels[LabelID], Pod: p.Name, State: strings.ToLower(string(p.Status.Phase)),
		Owner: p.Annotations[AnnotOwner], Persist: p.Labels[LabelPersist] == "true", Pool: p.Labels[LabelPool],
		Network: p.Annotations[AnnotNetwork], Created: p.CreationTimestamp.Time,
	}
	if p.DeletionTimestamp != nil {
		i.State = "terminating"
	}
	if len(p.Spec.Containers) > 0 {
		i.Image = p.Spec.Containers[0].Image
	}
	return i
}

// List returns the sandbox pods of cfg's namespace.
func List(ctx context.Context, cfg Config) ([]Info, error) {
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	return k.list(ctx)
}

func (k *kube) list(ctx context.Context) ([]Info, error) {
	pods, err := k.listPods(ctx, selector())
	if err != nil {
		return nil, k.classify("list", err)
	}
	out := make([]Info, 0, len(pods))
	for _, p := range pods {
		out = append(out, info(p))
	}
	return out, nil
}

// Remove deletes a sandbox's pod and network policy by id; an unknown id is errs.NotFound.
func Remove(ctx context.Context, cfg Config, id string) error {
	k, err := connect(cfg)
	if err != nil {
		return err
	}
	if _, err := k.getPod(ctx, namePrefix+id); err != nil {
		return k.classify("remove", err)
	}
	return k.deleteSandbox(ctx, id)
}

// PruneOptions choose what Prune removes.
type PruneOptions struct {
	// All removes every sandbox pod of the namespace, persistent ones and those of live processes
	// included.
	All bool
}

// Prune deletes the sandboxes left behind by processes that ended without Stop: pods not marked
// Persist whose owner (hostname:pid) is gone from this host, and pods that have ended. Pods owned
// on another host are left alone unless o.All. Network policies whose pod is gone are deleted too.
// It returns the ids of the removed sandboxes.
func Prune(ctx context.Context, cfg Config, o PruneOptions) ([]string, error) {
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	all, err := k.list(ctx)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errList []error
	live := map[string]bool{}
	for _, i := range all {
		if !o.All && !abandoned(i) {
			live[i.ID] = true
			continue
		}
		if err := k.deleteSandbox(ctx, i.ID); err != nil {
			errList = append(errList, fmt.Errorf("remove %s: %w", i.ID, err))
			continue
		}
		removed = append(removed, i.ID)
	}
	policies, err := k.listPolicies(ctx, selector())
	if err != nil {
		errList = append(errList, err)
	}
	for _, np := range policies {
		if id := np.Labels[LabelID]; !live[id] {
			if err := k.deletePolicy(ctx, np.Name); err != nil {
				errList = append(errList, err)
			}
		}
	}
	return removed, k.classify("prune", errors.Join(errList...))
}

// abandoned reports whether a sandbox was left behind: not persistent, and either its owner (a
// process on this host) is gone, or its owner is unknown here and its pod has ended. A pod of a
// live process is never abandoned, whatever its phase: it may be starting.
func abandoned(i Info) bool {
	if i.Persist {
		return false
	}
	ended := i.State == "succeeded" || i.State == "failed"
	host, pidText, ok := strings.Cut(i.Owner, ":")
	me, _ := os.Hostname()
	if !ok || host != me {
		return ended
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return ended
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// LeftPolicies lists the adapter's network policies whose pod is gone (Prune deletes them), for
// tests and doctor.
func LeftPolicies(ctx context.Context, cfg Config) ([]string, error) {
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	pods, err := k.listPods(ctx, selector())
	if err != nil {
		return nil, k.classify("list", err)
	}
	live := map[string]bool{}
	for _, p := range pods {
		live[p.Name] = true
	}
	nps, err := k.listPolicies(ctx, selector())
	if err != nil {
		return nil, k.classify("list", err)
	}
	var out []string
	for _, np := range nps {
		if !live[np.Name] {
			out = append(out, "networkpolicy/"+np.Name)
		}
	}
	return out, nil
}
