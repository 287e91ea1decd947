package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// Without a cluster, --adapter kubernetes is SANDBOX_UNAVAILABLE with the exit status each command
// gives it (exec 125, tool and sandbox create 1), never a panic; a bad setting is a usage error.
func TestKubernetesWithoutCluster(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	missing := filepath.Join(e.base, "no-such.kubeconfig")
	k8s := []string{"--adapter", "kubernetes", "--kubeconfig", missing}
	noPanic := func(r result) {
		t.Helper()
		assert.NotContains(t, r.stderr, "panic")
		assert.NotContains(t, r.stderr, "goroutine")
	}

	r := e.run("", nil, append(append([]string{"exec"}, k8s...), "--", "true")...)
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "SANDBOX_UNAVAILABLE")
	assert.Contains(t, r.stderr, missing, "the error names the file")
	noPanic(r)

	r = e.run("", nil, append([]string{"tool", "bash", "--input", `{"cmd":"true"}`}, k8s...)...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Equal(t, "SANDBOX_UNAVAILABLE", code(decodeReply(t, r)))
	noPanic(r)

	// The same from the environment; nothing is recorded for a sandbox that could not be made.
	r = e.run("", []string{"SANDBOXER_ADAPTER=kubernetes", "SANDBOXER_KUBECONFIG=" + missing}, "sandbox", "create")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "SANDBOX_UNAVAILABLE")
	noPanic(r)
	r = e.run("", nil, "sandbox", "ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[]", strings.TrimSpace(r.stdout))
	r = e.run("", []string{"SANDBOXER_KUBECONFIG=" + missing}, "sandbox", "prune")
	assert.Equal(t, 0, r.code, "an unreachable cluster does not fail prune: %s", r.stderr)

	r = e.run("", nil, append(append([]string{"exec"}, k8s...), "--image-pull-policy", "Sometimes", "--", "true")...)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--image-pull-policy")

	// doctor describes the cluster it cannot use and does not fail for it.
	r = e.run("", nil, append([]string{"doctor", "--json"}, k8s...)...)
	noPanic(r)
	var rep struct {
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
		Kubernetes struct {
			Kubeconfig string `json:"kubeconfig"`
			Error      string `json:"error"`
		} `json:"kubernetes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout+r.stderr)
	allOK := true
	for _, c := range rep.Checks {
		assert.NotContains(t, c.Name, "kube")
		allOK = allOK && c.OK
	}
	assert.Equal(t, allOK, r.code == 0, "only the checks decide doctor's status: %s", r.stderr)
	assert.Equal(t, missing, rep.Kubernetes.Kubeconfig)
	assert.Contains(t, rep.Kubernetes.Error, "SANDBOX_UNAVAILABLE")
}

// k8sEnv is the cluster of the kubernetes adapter's tests (KUBECONFIG; CI: the fixture of
// .ci/kubernetes.sh) as SANDBOXER_* variables, or a skip without one (a failure where
// SANDBOXER_TEST_REQUIRE=kubernetes), and its namespace.
func k8sEnv(t *testing.T) ([]string, string) {
	t.Helper()
	ns := os.Getenv("SANDBOXER_TEST_K8S_NAMESPACE")
	if ns == "" {
		ns = "sandboxer-test"
	}
	vars := []string{"SANDBOXER_NAMESPACE=" + ns}
	err := os.ErrNotExist
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = kubernetes.Probe(ctx, kubernetes.Config{Kubeconfig: kc, Namespace: ns}, false).Err
		vars = append(vars, "KUBECONFIG="+kc)
	}
	if err != nil {
		if testenv.Required("kubernetes") {
			t.Fatalf("no usable cluster (KUBECONFIG): %v", err)
		}
		t.Skipf("no usable cluster (set KUBECONFIG; SANDBOXER_TEST_REQUIRE=kubernetes fails instead): %v", err)
	}
	if v := os.Getenv("SANDBOXER_TEST_K8S_IMAGE"); v != "" {
		vars = append(vars, "SANDBOXER_KUBERNETES_IMAGE="+v)
	}
	if v := os.Getenv("SANDBOXER_TEST_K8S_PULL"); v != "" {
		vars = append(vars, "SANDBOXER_IMAGE_PULL_POLICY="+v)
	}
	return vars, ns
}

// The CLI over a real cluster: an ephemeral pod per invocation, and a long-lived one that keeps
// its files across invocations, forks, is listed, survives prune and is removed with its pod.
func TestKubernetesAdapter(t *testing.T) {
	t.Parallel()
	vars, ns := k8sEnv(t)
	e := newEnv(t)
	e.vars = append(e.vars, vars...)
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })

	r := e.run("", nil, "exec", "--adapter", "kubernetes", "--", "sh", "-c", "id -u; pwd")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "1000\n/workspace\n", r.stdout, "a non-root user in the pod's workspace")

	r = e.run("", nil, "sandbox", "create", "--adapter", "kubernetes")
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "tool", "write", "--sandbox", id, "--input", `{"path":"dir/f.txt","content":"kept"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	r = e.run("", nil, "tool", "grep", "--sandbox", id, "--input", `{"pattern":"kep"}`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "dir/f.txt:1:kept\n", decodeReply(t, r).Output)
	r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", "cat dir/f.txt; echo more >> dir/f.txt")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "kept", r.stdout)

	r = e.run("", nil, "sandbox", "fork", id)
	require.Equal(t, 0, r.code, r.stderr)
	fork := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", fork) })
	r = e.run("", nil, "exec", "--sandbox", fork, "--", "sh", "-c", "cat dir/f.txt; echo fork > dir/f.txt")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "keptmore\n", r.stdout)
	r = e.run("", nil, "exec", "--sandbox", id, "--", "cat", "dir/f.txt")
	assert.Equal(t, "keptmore\n", r.stdout, "the source is unchanged")

	r = e.run("", nil, "sandbox", "ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 2, strings.Count(r.stdout, `"adapter":"kubernetes"`), r.stdout)
	assert.Equal(t, 2, strings.Count(r.stdout, `"alive":true`), r.stdout)
	r = e.run("", nil, "sandbox", "prune")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, id, "a live sandbox is not pruned")

	var rec struct {
		Backend   string `json:"backend"`
		Namespace string `json:"namespace"`
	}
	raw, err := os.ReadFile(filepath.Join(e.state, "sandboxes", id, "sandbox.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rec))
	assert.Equal(t, ns, rec.Namespace, "the record keeps the pod's namespace: later calls find it whatever their settings")
	for _, sb := range []string{id, fork} {
		r = e.run("", nil, "sandbox", "rm", sb)
		require.Equal(t, 0, r.code, r.stderr)
	}
	r = e.run("", nil, "tool", "read", "--sandbox", id, "--input", `{"path":"dir/f.txt"}`)
	assert.Equal(t, "SANDBOX_UNAVAILABLE", code(decodeReply(t, r)), "the sandbox is gone")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	infos, err := kubernetes.List(ctx, kubernetes.Config{Namespace: ns})
	require.NoError(t, err)
	for _, i := range infos {
		if i.ID == rec.Backend {
			assert.Equal(t, "terminating", i.State, "sandbox rm deletes the pod")
		}
	}
}

// A snapshot taken on local restores into two pods (verified), one pod's own changes are taken
// there and restored back onto local (issue 38: portable between adapters, kubernetes included).
func TestKubernetesSnapshots(t *testing.T) {
	t.Parallel()
	vars, _ := k8sEnv(t)
	e := newEnv(t)
	e.vars = append(e.vars, vars...)
	t.Cleanup(func() { e.run("", nil, "sandbox", "prune") })
	r := e.run("", nil, "sandbox", "create")
	require.Equal(t, 0, r.code, r.stderr)
	local := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", local) })
	r = e.run("", nil, "exec", "--sandbox", local, "--", "sh", "-c",
		`mkdir -p src/empty && printf 'print("hi")\n' > src/main.py && printf '#!/bin/sh\necho run\n' > run.sh && chmod +x run.sh && ln -s src/main.py link`)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "snapshot", "take", local, "base")
	require.Equal(t, 0, r.code, r.stderr)

	r = e.run("", nil, "sandbox", "create", "--adapter", "kubernetes", "--from-snapshot", "base", "--count", "2")
	require.Equal(t, 0, r.code, r.stderr)
	var made struct{ IDs []string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &made), r.stdout)
	require.Len(t, made.IDs, 2)
	for _, id := range made.IDs {
		t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
		r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", `./run.sh && cat link && test -d src/empty && readlink link`)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "run\nprint(\"hi\")\nsrc/main.py\n", r.stdout)
	}
	r = e.run("", nil, "exec", "--sandbox", made.IDs[0], "--", "sh", "-c", `echo pod > src/main.py && rm run.sh`)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "snapshot", "take", made.IDs[0], "from-pod")
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "exec", "--sandbox", made.IDs[1], "--", "cat", "src/main.py")
	assert.Equal(t, "print(\"hi\")\n", r.stdout, "the other pod is its own")

	r = e.run("", nil, "snapshot", "restore", "from-pod", local, "--replace")
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run("", nil, "exec", "--sandbox", local, "--", "sh", "-c", `cat src/main.py; test -e run.sh || echo gone`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "pod\ngone\n", r.stdout)
}
