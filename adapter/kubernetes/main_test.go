package kubernetes_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The tests run against the cluster of KUBECONFIG (CI: the fixture of .ci/kubernetes.sh), in the
// namespace SANDBOXER_TEST_K8S_NAMESPACE (default sandboxer-test, which must exist), with the
// image SANDBOXER_TEST_K8S_IMAGE and pull policy SANDBOXER_TEST_K8S_PULL.
var (
	clusterErr error
	base       kubernetes.Config
)

// TestMain checks that the cluster answers and, after the run, that no pod or network policy of
// this process is left in the namespace.
func TestMain(m *testing.M) {
	base = kubernetes.Config{
		Namespace:       envOr("SANDBOXER_TEST_K8S_NAMESPACE", "sandboxer-test"),
		Image:           os.Getenv("SANDBOXER_TEST_K8S_IMAGE"),
		ImagePullPolicy: os.Getenv("SANDBOXER_TEST_K8S_PULL"),
		StartTimeout:    3 * time.Minute,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	clusterErr = kubernetes.Probe(ctx, base, false).Err
	cancel()
	if clusterErr != nil && testenv.Required("kubernetes") {
		fmt.Fprintln(os.Stderr, "SANDBOXER_TEST_REQUIRE=kubernetes but the cluster is not usable:", clusterErr)
		os.Exit(1)
	}
	code := m.Run()
	if clusterErr == nil {
		if left := leftovers(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "left behind by the tests:", left)
			code = 1
		}
	}
	os.Exit(code)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// leftovers lists (and deletes) the sandboxes this process made and did not remove.
func leftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	infos, err := kubernetes.List(ctx, base)
	if err != nil {
		return []string{err.Error()}
	}
	host, _ := os.Hostname()
	me := fmt.Sprintf("%s:%d", host, os.Getpid())
	var out []string
	for _, i := range infos {
		if i.Owner == me && i.State != "terminating" {
			out = append(out, i.Pod)
			kubernetes.Remove(ctx, base, i.ID)
		}
	}
	left, err := kubernetes.LeftPolicies(ctx, base)
	if err != nil {
		return append(out, err.Error())
	}
	return append(out, left...)
}

func needCluster(t testing.TB) {
	t.Helper()
	if clusterErr != nil {
		t.Skip("no usable cluster (set KUBECONFIG; SANDBOXER_TEST_REQUIRE=kubernetes fails instead):", clusterErr)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func cfgWith(f func(*kubernetes.Config)) kubernetes.Config {
	c := base
	if f != nil {
		f(&c)
	}
	return c
}

func newSandbox(t testing.TB, cfg kubernetes.Config) *kubernetes.Sandbox {
	t.Helper()
	needCluster(t)
	sb, err := kubernetes.New(ctxT(t), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sb.Stop(ctx)
	})
	return sb
}

// outside makes a directory in the pod's /tmp (outside /workspace) holding "secret".
func outside(t *testing.T, sb adapter.Sandbox) (string, func(string) ([]byte, bool)) {
	var b [6]byte
	rand.Read(b[:])
	dir := "/tmp/outside-" + hex.EncodeToString(b[:])
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{
		Args: []string{"sh", "-c", `mkdir -p "$1" && printf %s "$2" > "$1/secret"`, "sh", dir, adaptertest.SecretContent},
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	return dir, func(name string) ([]byte, bool) {
		res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"cat", dir + "/" + name}})
		if err != nil || res.ExitCode != 0 {
			return nil, false
		}
		return res.Stdout, true
	}
}

// debianImage is the Debian toolchain image of the fixture (SANDBOXER_TEST_K8S_DEBIAN_IMAGE:
// .ci/debian-image.sh builds it, .ci/kubernetes.sh gives it to the fixture): without it, tb is
// skipped, or fails where SANDBOXER_TEST_REQUIRE names debian-image or kubernetes.
func debianImage(tb testing.TB) string {
	tb.Helper()
	img := os.Getenv("SANDBOXER_TEST_K8S_DEBIAN_IMAGE")
	if img == "" {
		if testenv.Required("debian-image") || testenv.Required("kubernetes") {
			tb.Fatal("SANDBOXER_TEST_REQUIRE names debian-image or kubernetes but SANDBOXER_TEST_K8S_DEBIAN_IMAGE is unset")
		}
		tb.Skip("SANDBOXER_TEST_K8S_DEBIAN_IMAGE unset (.ci/kubernetes.sh sets it when the Debian image exists)")
	}
	return img
}
