// Package testenv reads the test switches of the environment: SANDBOXER_TEST_REQUIRE lists, comma
// separated, the backends whose absence must fail the tests instead of skipping them (CI sets
// "docker,oci,isolation,prometheus"; a single name works as before).
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Required reports whether SANDBOXER_TEST_REQUIRE names name.
func Required(name string) bool {
	for _, n := range strings.Split(os.Getenv("SANDBOXER_TEST_REQUIRE"), ",") {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}

// NeedOCIRuntime skips t when the oci adapter cannot run under the runtime rt here (not on PATH,
// or not root), or fails it where SANDBOXER_TEST_REQUIRE names oci.
func NeedOCIRuntime(t testing.TB, rt string) {
	t.Helper()
	_, err := exec.LookPath(rt)
	if err == nil && os.Geteuid() != 0 {
		err = os.ErrPermission
	}
	if err == nil {
		return
	}
	if Required("oci") {
		t.Fatalf("OCI runtime %s not usable: %v", rt, err)
	}
	t.Skipf("OCI runtime %s not usable (SANDBOXER_TEST_REQUIRE=oci fails instead): %v", rt, err)
}

// NeedPrometheus returns the path of the prometheus server (Debian's package), or skips t when
// it is not installed, or fails it where SANDBOXER_TEST_REQUIRE names prometheus.
func NeedPrometheus(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err == nil {
		return p
	}
	if Required("prometheus") {
		t.Fatalf("prometheus not usable: %v", err)
	}
	t.Skipf("prometheus not installed (apt-get install prometheus; SANDBOXER_TEST_REQUIRE=prometheus fails instead): %v", err)
	return ""
}
