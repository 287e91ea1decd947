package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/errs"
)

// What the egress probe found (AnnotNetwork).
const (
	netEnforced   = "enforced"   // an address that answered before the deny-all policy no longer does
	netUnenforced = "unenforced" // it still answers: the cluster ignores the policy
	netUnverified = "unverified" // no address answered even before the policy: nothing proves the cut
	netAllowed    = "allowed"    // AllowNetwork: no policy, nothing to probe
	netProxied    = "proxied"    // AllowHosts, with the policy enforced: the proxy is the only way out
)

// baseEnv is the minimal environment of every command (and of the container itself).
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + adapter.DefaultHome,
	"LANG=C.UTF-8",
	"TZ=UTC",
}

// homeVolume is the volume of the commands' HOME (adapter.DefaultHome).
const homeVolume = "home"

// commandEnv is baseEnv, without its PATH in a pod of any image (AgentImage): the container's
// environment, which the agent passes on, then has the image's.
func commandEnv(anyImage bool) []string {
	if !anyImage {
		return baseEnv
	}
	return slices.DeleteFunc(slices.Clone(baseEnv), func(e string) bool { return strings.HasPrefix(e, "PATH=") })
}

// mountsHome reports whether pod p's sandbox container has HOME mounted (a pod made before
// commands had a HOME of their own has not).
func mountsHome(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == containerName {
			return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == adapter.DefaultHome })
		}
	}
	return false
}

// agentBin is where the sandbox container finds the agent an init container brought, "" when
// its image has it (agent.Path).
func (c Config) agentBin() string {
	if c.AgentImage == "" {
		return ""
	}
	return agent.BroughtPath
}

// bringAgent adds to p the init container that copies the agent out of AgentImage into a
// memory-backed emptyDir, mounted read-only (the file alone) at agent.BroughtPath.
func (c Config) bringAgent(p *corev1.Pod, sc *corev1.SecurityContext, res corev1.ResourceRequirements) {
	const vol, dir = "sandboxer-agent", "/sandboxer-agent"
	size := resource.MustParse("64Mi")
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: vol,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}})
	uid := c.uid()
	isc := sc.DeepCopy()
	isc.RunAsUser, isc.RunAsGroup, isc.Capabilities = &uid, &uid, &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
		Name:            "agent",
		Image:           c.AgentImage,
		ImagePullPolicy: corev1.PullPolicy(c.pullPolicy()),
		Command:         []string{"cp", agent.Path, dir + "/sandboxer-agent"},
		Resources:       res,
		SecurityContext: isc,
		VolumeMounts:    []corev1.VolumeMount{{Name: vol, MountPath: dir}},
	})
	main := &p.Spec.Containers[0]
	main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: agent.BroughtPath, SubPath: "sandboxer-agent", ReadOnly: true})
	p.Annotations[AnnotAgentPath] = agent.BroughtPath
}

// labels are a sandbox pod's labels.
func (c Config) labels(id, pool string) map[string]string {
	l := maps.Clone(c.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelManaged] = managedByValue
	l[LabelID] = id
	l[LabelPersist] = strconv.FormatBool(c.Persist)
	if pool != "" {
		l[LabelPool] = pool
	}
	return l
}

// agentCaps are agent.Caps as a pod names them.
func agentCaps() []corev1.Capability {
	caps := make([]corev1.Capability, len(agent.Caps))
	for i, c := range agent.Caps {
		caps[i] = corev1.Capability(c)
	}
	return caps
}

// podSpec is the hardened pod of a sandbox.
func (c Config) podSpec(id, pool string) *corev1.Pod {
	yes, no := true, false
	uid := c.uid()
	zero := int64(0)
	limits := corev1.ResourceList{}
	if m := orDefault(c.MemoryBytes, DefaultMemoryBytes); m > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(m, resource.BinarySI)
	}
	if cpu := orDefault(c.MilliCPUs, DefaultMilliCPUs); cpu > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
	}
	// Requests are small, so that a node packs many idle sandboxes; limits bound each one.
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(10, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(16<<20, resource.BinarySI),
	}
	var tmp *resource.Quantity // nil: the pod's memory limit bounds it
	if b := adapter.TmpBytes(c.TmpBytes, orDefault(c.MemoryBytes, DefaultMemoryBytes)); b > 0 {
		tmp = resource.NewQuantity(b, resource.BinarySI)
	}
	var ws *resource.Quantity
	if b := orDefault(c.WorkspaceBytes, DefaultWorkspaceBytes); b > 0 {
		ws = resource.NewQuantity(b, resource.BinarySI)
	}
	env := make([]corev1.EnvVar, 0, len(baseEnv))
	for _, e := range commandEnv(c.agentBin() != "") {
		k, v, _ := strings.Cut(e, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        namePrefix + id,
			Labels:      c.labels(id, pool),
			Annotations: map[string]string{AnnotOwner: owner()},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &zero,
			// The agent runs as the container's root with only the capabilities to start the
			// commands as uid, who has none and cannot touch the agent (agent.RunAs): the pod
			// meets the baseline Pod Security Standard, not the restricted one.
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      &zero,
				RunAsGroup:     &zero,
				FSGroup:        &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           c.image(),
				ImagePullPolicy: corev1.PullPolicy(c.pullPolicy()),
				// PID 1 serves no stream (its stdin is empty) but the hub that exec'd agents relay
				// to, reaps orphans and stays until the pod is deleted.
				Command:    agent.ArgvAt(cmp.Or(c.agentBin(), agent.Path), c.user(), "-init", "-idle"),
				WorkingDir: adapter.DefaultWorkspace,
				Env:        env,
				Resources:  corev1.ResourceRequirements{Limits: limits, Requests: requests},
				SecurityContext: &corev1.SecurityContext{
					Privileged:               &no,
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: agentCaps()},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: adapter.DefaultWorkspace},
					{Name: homeVolume, MountPath: adapter.DefaultHome},
					{Name: "tmp", MountPath: "/tmp"},
				},
			}},
			// HOME is an emptyDir of its own rather than a subPath of the workspace's: an
			// emptyDir is made writable by everyone (subPath directories get what the kubelet
			// version gives them), and the workspace volume stays the workspace. Both are on the
			// node's disk, where the kubelet counts them together against the pod's
			// ephemeral-storage limit (WorkspaceBytes), so HOME does not add to the cap.
			Volumes: []corev1.Volume{
				{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ws}}},
				{Name: homeVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ws}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmp}}},
			},
		},
	}
	if c.RuntimeClassName != "" {
		rc := c.RuntimeClassName
		p.Spec.RuntimeClassName = &rc
	}
	if ws != nil {
		limits[corev1.ResourceEphemeralStorage] = *ws
	}
	if c.AgentImage != "" {
		main := p.Spec.Containers[0]
		c.bringAgent(p, main.SecurityContext, main.Resources)
	}
	return p
}

// denyPolicy is the NetworkPolicy that cuts a sandbox pod's egress and ingress.
func (c Config) denyPolicy(id string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: namePrefix + id, Labels: map[string]string{LabelManaged: managedByValue, LabelID: id}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelManaged: managedByValue, LabelID: id}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress},
		},
	}
}

// create makes a sandbox: the pod, the wait until it runs, the agent stream and, unless the network
// is allowed, the deny-all policy with its verification (see verifyCut). pool, when set, labels the pod as a warm
// pool's (its probe result is then kept for the claimer). Whatever fails, nothing is left behind.
func create(ctx context.Context, k *kube, cfg Config, pool string) (*Sandbox, error) {
	id := newID()
	s := &Sandbox{k: k, cfg: cfg, id: id, pod: namePrefix + id, network: netAllowed, agentBin: cfg.agentBin()}
	ok := false
	defer func() {
		if !ok {
			s.agent.Close()
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			k.deleteSandbox(dctx, id)
		}
	}()
	if _, err := k.createPod(ctx, cfg.podSpec(id, pool)); err != nil {
		return nil, k.classify("create", err)
	}
	p, err := k.waitRunning(ctx, s.pod, cfg.startTimeout())
	if err != nil {
		return nil, err
	}
	if !cfg.AllowNetwork {
		// Before any command runs: find an address the pod reaches (the positive control), cut
		// the network, and see that the address no longer answers.
		control, err := s.probe(ctx, s.probeCandidates(p))
		if err != nil {
			return nil, err
		}
		if err := k.createPolicy(ctx, cfg.denyPolicy(id)); err != nil {
			return nil, k.classify("create", err)
		}
		if s.network, err = s.verifyCut(ctx, control); err != nil {
			return nil, err
		}
		if s.network != netEnforced && cfg.RequireIsolation {
			why := "no probe address answered the pod before the cut, so the cut cannot be verified (Config.ProbeTargets names one)"
			if s.network == netUnenforced {
				why = "the cluster's CNI does not enforce NetworkPolicy: " + control + " still answered the pod after its deny-all policy"
			}
			return nil, errs.New(errs.IsolationUnavailable, "create", "", "required isolation cannot be applied: network (%s)", why)
		}
		if s.network == netEnforced && len(cfg.AllowHosts) > 0 {
			s.network = netProxied
		}
	}
	// The annotation records the verdict for other handles, and marks a pool's pod ready.
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotNetwork: s.network}}})
	got, err := k.patchPod(ctx, s.pod, patch)
	if err != nil {
		return nil, k.classify("create", err)
	}
	s.rv = got.ResourceVersion
	ok = true
	return s, nil
}

// fatalWaiting are container waiting reasons that never resolve by themselves.
var fatalWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "CrashLoopBackOff": true,
}

// waitRunning polls the pod until its container runs; a pod that cannot start (image, config,
// exit) is reported with the kubelet's reason at once, not after the timeout.
func (k *kube) waitRunning(ctx context.Context, name string, timeout time.Duration) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 20 * time.Millisecond
	for {
		p, err := k.getPod(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, k.classify("create", err)
		}
		if p.Status.Phase == corev1.PodRunning {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == containerName && cs.State.Running != nil {
					return p, nil
				}
			}
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return nil, errs.New(errs.SandboxUnavailable, "create", "", "pod %s ended before it ran: %s", name, podState(p))
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
				return nil, errs.New(errs.SandboxUnavailable, "create", "", "pod %s cannot start: %s: %s", name, w.Reason, w.Message)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
			delay = min(delay*3/2, 100*time.Millisecond) // a GET every 100 ms at most: cheap, and the start is what a caller waits for
			continue
		}
		break
	}
	p, _ := k.getPod(context.WithoutCancel(ctx), name)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && p != nil {
		return nil, errs.New(errs.SandboxUnavailable, "create", "", "pod %s did not run within %s: %s", name, timeout, podState(p))
	}
	return nil, ctx.Err()
}

// podEnding reports whether the pod is gone or going: deleted, no longer running, or marked for
// termination (the kubelet's eviction sets the DisruptionTarget condition before it kills).
func podEnding(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podState says where a pod is, for messages.
func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "being deleted"
	}
	s := strings.ToLower(string(p.Status.Phase))
	if p.Status.Reason != "" { // "Evicted": the message says why (the workspace over its limit)
		s += fmt.Sprintf(" (%s: %s)", p.Status.Reason, strings.TrimSpace(p.Status.Message))
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			s += fmt.Sprintf(" (waiting: %s %s)", cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			s += fmt.Sprintf(" (terminated: %s, exit %d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
			s += " (unschedulable: " + c.Message + ")"
		}
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && p.Status.Reason == "" {
			s += fmt.Sprintf(" (being ended, %s: %s)", c.Reason, c.Message) // the kubelet evicts it
		}
	}
	return s
}

// probeCandidates are addresses outside the pod that a pod reaches when nothing cuts its egress, in
// most clusters: the node's kubelet and apiserver ports, the pod network's gateway on the same
// ports, the apiserver's service and the apiserver as this client reaches it, and
// Config.ProbeTargets. "gw" and "svc" are resolved inside the pod (the default gateway, and
// KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT).
func (s *Sandbox) probeCandidates(p *corev1.Pod) []string {
	c := []string{"gw:10250", "gw:6443", "svc"}
	if ip := net.ParseIP(p.Status.HostIP); ip != nil && !ip.IsLoopback() {
		c = append(c, net.JoinHostPort(p.Status.HostIP, "10250"), net.JoinHostPort(p.Status.HostIP, "6443"))
	}
	if u, err := url.Parse(s.k.rest.Host); err == nil && u.Hostname() != "" {
		if ip := net.ParseIP(u.Hostname()); (ip == nil && u.Hostname() != "localhost") || (ip != nil && !ip.IsLoopback()) {
			port := u.Port()
			if port == "" {
				port = "443"
			}
			c = append(c, net.JoinHostPort(u.Hostname(), port))
		}
	}
	return append(c, s.cfg.ProbeTargets...)
}

// probeScript tries every target at once (busybox nc, 1 s to connect; -e, which busybox takes
// after the address, ends the connection at once) and prints "open TARGET" for each that answered.
const probeScript = `
gw=$(awk '$2 == "00000000" { h = $3; printf "%d.%d.%d.%d", "0x" substr(h,7,2), "0x" substr(h,5,2), "0x" substr(h,3,2), "0x" substr(h,1,2); exit }' /proc/net/route 2>/dev/null)
for t in "$@"; do
	case $t in
	gw:*) [ -n "$gw" ] || continue; a=$gw; p=${t#gw:} ;;
	svc) [ -n "$KUBERNETES_SERVICE_HOST" ] || continue; a=$KUBERNETES_SERVICE_HOST; p=${KUBERNETES_SERVICE_PORT:-443} ;;
	*) a=${t%:*}; p=${t##*:} ;;
	esac
	a=${a#[}; a=${a%]}
	(nc -w 1 "$a" "$p" -e /bin/true </dev/null >/dev/null 2>&1 && echo "open $t") &
done
wait
`

// probe runs probeScript in the pod (commands see the container's environment, which has
// KUBERNETES_SERVICE_HOST) and
// returns the first target that answered, or "".
func (s *Sandbox) probe(ctx context.Context, targets []string) (string, error) {
	out := adapter.NewCappedBuffer(4096)
	_, err := s.run(ctx, "create", rawExec{args: append([]string{"/bin/sh", "-c", probeScript, "probe"}, targets...), env: baseEnv, stdout: out})
	if err != nil {
		return "", err
	}
	b, _, _ := out.Result()
	open := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if t, ok := strings.CutPrefix(line, "open "); ok {
			open[t] = true
		}
	}
	for _, t := range targets { // in the order of the candidates, not of the answers
		if open[t] {
			return t, nil
		}
	}
	return "", nil
}

// cutWait bounds how long the CNI may take to apply a new policy to a running pod.
const cutWait = 5 * time.Second

// verifyCut reports what the deny-all policy did to control, the address that answered the pod
// before it: unverified without one, enforced once it stops answering, unenforced if it still does
// after cutWait.
func (s *Sandbox) verifyCut(ctx context.Context, control string) (string, error) {
	if control == "" {
		return netUnverified, nil
	}
	deadline := time.Now().Add(cutWait)
	for {
		open, err := s.probe(ctx, []string{control})
		if err != nil {
			return "", err
		}
		if open == "" {
			return netEnforced, nil
		}
		if time.Now().After(deadline) {
			return netUnenforced, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
