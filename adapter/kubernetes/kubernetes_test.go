package kubernetes_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/sandboxer/sandboxer/tools/toolstest"
)

func TestConfigValidate(t *testing.T) {
	assert.NoError(t, kubernetes.Config{}.Validate())
	for _, c := range []kubernetes.Config{
		{ImagePullPolicy: "Sometimes"}, {AllowNetwork: true, AllowHosts: []string{"example.com"}},
		{AllowHosts: []string{"bad host"}}, {UID: -1}, {MemoryBytes: 1024}, {MemoryBytes: -2},
		{MilliCPUs: 1}, {TmpBytes: -1}, {WorkspaceBytes: -2}, {WorkspaceBytes: 1 << 20}, {Env: []string{"NOEQUALS"}},
		{Labels: map[string]string{kubernetes.LabelID: "x"}}, {Labels: map[string]string{kubernetes.LabelManaged: "x"}},
	} {
		assert.ErrorIs(t, c.Validate(), errs.InvalidInput, "%+v", c)
		_, err := kubernetes.New(context.Background(), c)
		assert.ErrorIs(t, err, errs.InvalidInput, "%+v", c)
	}
}

// A kubeconfig that does not exist, or a cluster that does not answer, is SANDBOX_UNAVAILABLE.
func TestClusterUnreachable(t *testing.T) {
	ctx := ctxT(t)
	_, err := kubernetes.New(ctx, kubernetes.Config{Kubeconfig: t.TempDir() + "/none"})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	kc := t.TempDir() + "/kubeconfig"
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	_, err = kubernetes.New(ctx, kubernetes.Config{Kubeconfig: kc})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	r := kubernetes.Probe(ctx, kubernetes.Config{Kubeconfig: kc}, false)
	assert.ErrorIs(t, r.Err, errs.SandboxUnavailable)
	_, err = kubernetes.Prune(ctx, kubernetes.Config{Kubeconfig: kc}, kubernetes.PruneOptions{})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}

func TestConformance(t *testing.T) {
	needCluster(t)
	adaptertest.Run(t, adaptertest.Harness{
		New:         func(t *testing.T) adapter.Sandbox { return newSandbox(t, base) },
		Outside:     outside,
		Grace:       5 * time.Second,
		PrivateHome: true,
	})
}

// TestTools runs the tool layer (read, write, edit, grep, bash, processes) over pods.
func TestTools(t *testing.T) {
	needCluster(t)
	toolstest.Run(t, func(t *testing.T) adapter.Sandbox { return newSandbox(t, base) })
}

// TestFileSync runs the FileSync cases over pods, through the bulk reads and writes.
func TestFileSync(t *testing.T) {
	needCluster(t)
	filesynctest.Run(t, filesynctest.Harness{New: func(t *testing.T) adapter.Sandbox { return newSandbox(t, base) }})
}

// The pod is hardened as the issue lists, seen from the API and from inside.
func TestHardenedPod(t *testing.T) {
	sb := newSandbox(t, base)
	ctx := ctxT(t)
	p, err := kubernetes.PodOf(ctx, sb)
	require.NoError(t, err)
	spec := p.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.False(t, *spec.AutomountServiceAccountToken)
	assert.False(t, *spec.EnableServiceLinks) // no other service's variables (the apiserver's own are always set)
	assert.EqualValues(t, 0, *spec.SecurityContext.RunAsUser, "the agent is root of the container (agent.RunAs)")
	assert.ElementsMatch(t, []corev1.Capability{"SETUID", "SETGID", "KILL"}, c.SecurityContext.Capabilities.Add)
	assert.EqualValues(t, "RuntimeDefault", spec.SecurityContext.SeccompProfile.Type)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, []string{"ALL"}, []string{string(c.SecurityContext.Capabilities.Drop[0])})
	assert.False(t, c.Resources.Limits.Memory().IsZero())
	assert.False(t, c.Resources.Limits.Cpu().IsZero())
	assert.Equal(t, int64(kubernetes.DefaultWorkspaceBytes), c.Resources.Limits.StorageEphemeral().Value(), "the workspace is capped by default")
	assert.Equal(t, "sandboxer", p.Labels[kubernetes.LabelManaged])
	assert.Equal(t, sb.ID(), p.Labels[kubernetes.LabelID])
	assert.NotEmpty(t, p.Annotations[kubernetes.AnnotOwner])

	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", `
id -u
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t ' ' '
touch /etc/x 2>/dev/null && echo rootfs-writable
ls /var/run/secrets/kubernetes.io 2>/dev/null && echo token
env | grep _SERVICE_PORT= | grep -vc ^KUBERNETES_SERVICE || true
touch /workspace/w /tmp/t && echo writable`}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Equal(t, "1000\nCapEff: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2\n0\nwritable\n", string(res.Stdout))
}

// The network is reported as what the probe found. The fixture's pods reach none of the usual
// probe addresses (kubelet and apiserver on 127.0.0.1, no kube-proxy): unverified, not claimed cut.
// With a listener of the test's own on the node as the positive control, the fixture's bridge CNI
// is seen ignoring the policy: unenforced, and RequireIsolation refuses. On a cluster that enforces
// policies the control stops answering: enforced.
func TestNetworkIsReportedHonestly(t *testing.T) {
	sb := newSandbox(t, base)
	ctx := ctxT(t)
	verdict := annotation(t, sb)
	require.Contains(t, []string{"enforced", "unenforced", "unverified"}, verdict)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	require.NoError(t, err)
	assert.Equal(t, verdict == "enforced", res.Isolation.Network, "layers %v", res.Isolation.Layers)
	if verdict == "enforced" {
		assert.Contains(t, res.Isolation.Layers, "network-policy:deny-all")
		assert.Equal(t, adapter.NetContainer, sb.Capabilities().Network)
	} else {
		assert.Contains(t, res.Isolation.Layers, "network:"+verdict)
		assert.Equal(t, adapter.NetHost, sb.Capabilities().Network)
	}

	// The positive control: a listener on the node, at the address pods reach it by (their
	// gateway, learnt from a pod with the network allowed).
	var conns atomic.Int64
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	open := newSandbox(t, cfgWith(func(c *kubernetes.Config) { c.AllowNetwork = true }))
	res, err = open.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c",
		`awk '$2 == "00000000" { h = $3; printf "%d.%d.%d.%d", "0x" substr(h,7,2), "0x" substr(h,5,2), "0x" substr(h,3,2), "0x" substr(h,1,2); exit }' /proc/net/route`}})
	require.NoError(t, err)
	gw := strings.TrimSpace(string(res.Stdout))
	require.NotEmpty(t, gw, "no default route in the pod: %s", res.Stderr)
	target := net.JoinHostPort(gw, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	probed := cfgWith(func(c *kubernetes.Config) { c.ProbeTargets = []string{target} })

	ctl := newSandbox(t, probed)
	assert.Positive(t, conns.Load(), "the control was probed")
	got := annotation(t, ctl)
	require.Contains(t, []string{"enforced", "unenforced"}, got, "with a control that answers, the verdict is known")
	res, err = ctl.ExecuteCommand(ctx, adapter.Command{Args: []string{"nc", "-w", "2", gw, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), "-e", "/bin/true"}})
	require.NoError(t, err)
	assert.Equal(t, got == "unenforced", res.ExitCode == 0, "a command reaches the control exactly when the verdict says the cut does not hold (%s)", res.Stderr)
	if got == "enforced" {
		return
	}
	before, err := kubernetes.List(ctx, base)
	require.NoError(t, err)
	_, err = kubernetes.New(ctx, cfgWith(func(c *kubernetes.Config) { c.ProbeTargets, c.RequireIsolation = []string{target}, true }))
	require.ErrorIs(t, err, errs.IsolationUnavailable)
	assert.Contains(t, err.Error(), "does not enforce NetworkPolicy")
	after, err := kubernetes.List(ctx, base)
	require.NoError(t, err)
	assert.LessOrEqual(t, countLive(after), countLive(before), "the refused sandbox's pod is deleted")
}

func annotation(t *testing.T, sb *kubernetes.Sandbox) string {
	p, err := kubernetes.PodOf(ctxT(t), sb)
	require.NoError(t, err)
	return p.Annotations[kubernetes.AnnotNetwork]
}

func countLive(infos []kubernetes.Info) int {
	n := 0
	for _, i := range infos {
		if i.State != "terminating" {
			n++
		}
	}
	return n
}

// With the network allowed there is no policy and nothing claims a cut network.
func TestAllowNetwork(t *testing.T) {
	sb := newSandbox(t, cfgWith(func(c *kubernetes.Config) { c.AllowNetwork = true }))
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"true"}})
	require.NoError(t, err)
	assert.False(t, res.Isolation.Network)
	left, err := kubernetes.LeftPolicies(ctxT(t), base)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// A sandbox made by one process is attached to by another one (a child process here): files and
// background processes are there.
func TestAttachFromAnotherProcess(t *testing.T) {
	sb := newSandbox(t, cfgWith(func(c *kubernetes.Config) { c.Persist = true }))
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "keep.txt", []byte("kept")))
	p, err := sb.Start(ctx, adapter.Command{Args: []string{"sleep", "300"}})
	require.NoError(t, err)
	require.NoError(t, sb.Detach())

	out, err := child(t, "attach", sb.ID()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.True(t, strings.HasPrefix(string(out), "kept\n"+p.ID()+" running\n"), "%s", out)

	again, err := kubernetes.Attach(ctx, base, sb.ID())
	require.NoError(t, err)
	require.NoError(t, again.Stop(ctx))
	_, err = kubernetes.Attach(ctx, base, sb.ID())
	assert.Error(t, err, "a stopped sandbox cannot be attached to")
	_, err = kubernetes.Attach(ctx, base, "000000000000")
	assert.ErrorIs(t, err, errs.NotFound)
}

// child runs this test binary as another process with a job for TestChild.
func child(t *testing.T, job, arg string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SANDBOXER_K8S_CHILD="+job, "SANDBOXER_K8S_CHILD_ARG="+arg)
	return cmd
}

// TestChild is the other process of the cross-process tests; it does nothing in a normal run.
func TestChild(t *testing.T) {
	job := os.Getenv("SANDBOXER_K8S_CHILD")
	if job == "" {
		return
	}
	ctx := ctxT(t)
	switch job {
	case "attach":
		sb, err := kubernetes.Attach(ctx, base, os.Getenv("SANDBOXER_K8S_CHILD_ARG"))
		require.NoError(t, err)
		defer sb.Detach()
		data, err := sb.ReadFile(ctx, "keep.txt")
		require.NoError(t, err)
		ps, err := sb.Processes(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		state := "exited"
		if ps[0].Running {
			state = "running"
		}
		os.Stdout.WriteString(string(data) + "\n" + ps[0].ID + " " + state + "\n")
	case "create":
		sb, err := kubernetes.New(ctx, base)
		require.NoError(t, err)
		os.Stdout.WriteString(sb.ID() + "\n")
		time.Sleep(10 * time.Minute) // until the parent kills it
	}
}

// Prune removes the sandbox of an owner that was SIGKILLed, and leaves a live owner's alone.
func TestPruneAfterKilledOwner(t *testing.T) {
	needCluster(t)
	mine := newSandbox(t, base)
	cmd := child(t, "create", "")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the child printed no sandbox id")
	id := strings.TrimSpace(line)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	removed, err := kubernetes.Prune(ctxT(t), base, kubernetes.PruneOptions{})
	require.NoError(t, err)
	assert.Contains(t, removed, id)
	assert.NotContains(t, removed, mine.ID())
	_, err = kubernetes.Attach(ctxT(t), base, id)
	assert.Error(t, err)
}

// A pod deleted under a running command ends the call with SANDBOX_UNAVAILABLE, quickly.
func TestPodDeletedUnderRunningCommand(t *testing.T) {
	sb := newSandbox(t, base)
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sleep", "120"}})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, kubernetes.DeletePod(ctx, sb))
	select {
	case err := <-done:
		require.ErrorIs(t, err, errs.SandboxUnavailable)
	case <-time.After(90 * time.Second):
		t.Fatal("the call did not end after its pod was deleted")
	}
	_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}

// An image that cannot be had fails at once with the kubelet's reason, and leaves nothing.
func TestBadImage(t *testing.T) {
	needCluster(t)
	start := time.Now()
	_, err := kubernetes.New(ctxT(t), cfgWith(func(c *kubernetes.Config) {
		c.Image, c.ImagePullPolicy = "localhost/sandboxer-no-such-image:never", "Never"
	}))
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.Contains(t, err.Error(), "ErrImageNeverPull")
	assert.Less(t, time.Since(start), 90*time.Second)
	var e *errs.Error
	assert.True(t, errors.As(err, &e))
}

// A command cannot stop, signal, trace or read the agents of its pod (PID 1 and the exec'd one
// serving the call), nor reach their hub: it could answer the host in their place (issue 34).
func TestAgentUntouchable(t *testing.T) {
	sb := newSandbox(t, base)
	adaptertest.CheckAgentUntouchable(t, sb, nil)
}

// A handle whose agent breaks the protocol (a bad exit frame, a result flood from a stand-in agent)
// fails that call and every later one with SANDBOX_UNAVAILABLE: no other agent exec is started
// (issue 34).
func TestAgentThatBreaksTheProtocolIsNotReplaced(t *testing.T) {
	adaptertest.CheckProtocolBreaker(t,
		func(t *testing.T) adapter.Sandbox { return newSandbox(t, base) },
		func(sb adapter.Sandbox, c *agent.Client) func() {
			return kubernetes.UseAgent(sb.(*kubernetes.Sandbox), c)
		})
}
