//go:build linux && !sandboxer_portable

package local

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// ProjectOf is the project id of path (a directory or regular file) and whether it has the
// inherit flag.
func ProjectOf(path string) (id uint32, inherit bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	a, err := getFsxattr(int(f.Fd()))
	return a.projid, a.xflags&xflagProjinherit != 0, err
}

// SetProject gives path (a directory or regular file) the project id, a directory with the
// inherit flag, as the disk layer does.
func SetProject(path string, id uint32) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	a, err := getFsxattr(int(f.Fd()))
	if err != nil {
		return err
	}
	a.projid = id
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		a.xflags |= xflagProjinherit
	}
	return setFsxattr(int(f.Fd()), a)
}

// ProjectLeaseDir is the directory of the disk layer's project leases.
func ProjectLeaseDir() (string, error) {
	d, err := projects.dir()
	if err != nil {
		return "", err
	}
	return d.Name(), nil
}

// ProjectFS mounts a file system where files have project ids (ext4 -O project, or else xfs), for
// tests that tag and lease but set no limit; QuotaFS one that enforces project quotas (ext4 -O
// quota,project mounted with prjquota, or else xfs with pquota). Each is a loop device over a
// sparse file of the test's, unmounted (and so detached) by its cleanup. Where neither can be
// made (not root, no mkfs, a kernel without the features: ext4's need CONFIG_QFMT_V2, xfs's
// quotas CONFIG_XFS_QUOTA) the test is skipped, or fails when SANDBOXER_TEST_REQUIRE names "disk".
func ProjectFS(t *testing.T) string {
	t.Helper()
	return loopFS(t, [][2]string{{"ext4:project", "defaults"}, {"xfs", "defaults"}})
}

// QuotaFS: see ProjectFS.
func QuotaFS(t *testing.T) string {
	t.Helper()
	m := loopFS(t, [][2]string{{"ext4:quota,project", "prjquota"}, {"xfs", "pquota"}})
	if err := quotaUsable(m); err != nil {
		unavailable(t, "%s: %v", m, err)
	}
	return m
}

func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if testenv.Required("disk") {
		t.Fatalf("SANDBOXER_TEST_REQUIRE=disk: "+format, args...)
	}
	t.Skipf(format+" (SANDBOXER_TEST_REQUIRE=disk fails instead)", args...)
}

// loopFS mounts the first of kinds ("TYPE" or "TYPE:mkfs features", mount options) that works.
func loopFS(t *testing.T, kinds [][2]string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "a loop-mounted file system needs root")
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	var why []string
	for _, k := range kinds {
		typ, features, _ := strings.Cut(k[0], ":")
		mkfs := []string{"mkfs." + typ, "-q", "-f", img}
		if typ == "ext4" {
			mkfs = []string{"mkfs.ext4", "-q", "-F", "-O", features, img}
		}
		if err := os.WriteFile(img, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, 320<<20); err != nil { // sparse; xfs wants 300 MiB
			t.Fatal(err)
		}
		if out, err := exec.Command(mkfs[0], mkfs[1:]...).CombinedOutput(); err != nil {
			why = append(why, fmt.Sprintf("%s: %v: %s", strings.Join(mkfs[:len(mkfs)-1], " "), err, bytes.TrimSpace(out)))
			continue
		}
		if out, err := exec.Command("mount", "-o", "loop,"+k[1], img, mnt).CombinedOutput(); err != nil {
			why = append(why, fmt.Sprintf("mount -o loop,%s (%s): %v: %s", k[1], k[0], err, firstLine(out)))
			continue
		}
		t.Cleanup(func() {
			if err := unix.Unmount(mnt, 0); err != nil {
				t.Errorf("unmount %s: %v", mnt, err)
				_ = unix.Unmount(mnt, unix.MNT_DETACH)
			}
			// mount(8) made the loop device with autoclear: the unmount detaches it, maybe a
			// moment after it returned (Linux 6.x closes a block device's file late).
			attached := func() []byte {
				out, _ := exec.Command("losetup", "-j", img).Output()
				return bytes.TrimSpace(out)
			}
			for deadline := time.Now().Add(5 * time.Second); len(attached()) > 0 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if out := attached(); len(out) > 0 {
				t.Errorf("the loop device is still attached: %s", out)
				_ = exec.Command("losetup", "-d", strings.SplitN(string(out), ":", 2)[0]).Run()
			}
		})
		return mnt
	}
	unavailable(t, "%s", strings.Join(why, "; "))
	return ""
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(bytes.TrimSpace(b)), "\n")
	return s
}

// QuotaUsable says why project quotas cannot cap dir here, if they cannot.
func QuotaUsable(dir string) error { return quotaUsable(dir) }
