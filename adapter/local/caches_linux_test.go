//go:build linux && !sandboxer_portable

package local_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// fakeCache makes a caller's cache of a few files and directories, some read-only (as Go's module
// cache is), and returns its path.
func fakeCache(t *testing.T) string {
	t.Helper()
	c := filepath.Join(t.TempDir(), "cache")
	for _, d := range []string{"sub/deep", "rodir"} {
		require.NoError(t, os.MkdirAll(filepath.Join(c, d), 0o755))
	}
	for name, mode := range map[string]fs.FileMode{"a": 0o644, "sub/b": 0o644, "sub/deep/c": 0o600, "ro": 0o444, "rodir/f": 0o444} {
		require.NoError(t, os.WriteFile(filepath.Join(c, name), []byte("content of "+name), mode))
	}
	require.NoError(t, os.Symlink("a", filepath.Join(c, "link")))
	require.NoError(t, os.Chmod(filepath.Join(c, "rodir"), 0o555))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(c, "rodir"), 0o755) })
	return c
}

// treeHash hashes every name, type, mode, owner, size, modification time, link target and content
// under dir, dir itself included.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(h, "%s %v %d:%d %d %d %d\n", p, fi.Mode(), st.Uid, st.Gid, fi.Size(), fi.ModTime().UnixNano(), st.Ino)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "-> %s\n", target)
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	require.NoError(t, err)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// A command that writes, deletes, renames, chmods, chowns and links inside the cache it is shown
// sees its changes (kept for the sandbox's next commands, with and without the network), while the
// caller's directory stays byte for byte as it was; a recycled sandbox, and a new one, see the
// caller's files again.
func TestCacheIsCopyOnWrite(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	t.Parallel()
	ctx := context.Background()
	cache := fakeCache(t)
	before := treeHash(t, cache)
	sb := newIsolated(t, local.Config{Caches: []string{"FAKE_CACHE=" + cache}})
	hostile := `set -e
test "$FAKE_CACHE" = "$0"
cd "$FAKE_CACHE"
echo more >> a; echo new > new; mkdir -p newdir/x; echo y > newdir/x/y
rm sub/b; rm -r sub/deep; mv ro ro2; chmod 777 ro2 rodir; chmod u+w rodir/f; echo w > rodir/f
ln -sf /etc/passwd link; ln a hard; touch -d 2001-01-01 a; chown 1:1 new 2>/dev/null || true
truncate -s 0 ro2; echo done`
	for _, network := range []bool{false, true} {
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", hostile, cache}, AllowNetwork: network})
		if network { // the second helper has its own upper layer, fresh from the caller's files
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		}
		require.Equal(t, "done\n", string(res.Stdout), "%s", res.Stderr)
		assert.Equal(t, before, treeHash(t, cache), "the caller's cache is unchanged")
	}
	// Commands that try to reach the caller's directory otherwise: remount, unmount.
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `umount "$0" 2>/dev/null && echo unmounted; mount -o remount,rw "$0" 2>/dev/null && echo remounted; cat "$0/a"`, cache}})
	assert.Equal(t, "content of amore\n", string(res.Stdout), "the command's own copy, still mounted: %s", res.Stderr)
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `ls -A "$0" | sort | tr '\n' ' '; cat "$0/rodir/f"`, cache}})
	assert.Equal(t, "a hard link new newdir ro2 rodir sub w\n", string(res.Stdout), "kept for the sandbox's commands: %s", res.Stderr)
	assert.Equal(t, before, treeHash(t, cache), "the caller's cache is unchanged")

	require.NoError(t, sb.Recycle(ctx))
	res = run(t, sb, adapter.Command{Args: []string{"sh", "-c", `ls -A "$0" | sort | tr '\n' ' '; cat "$0/a"`, cache}})
	assert.Equal(t, "a link ro rodir sub content of a", string(res.Stdout), "a recycled sandbox sees the caller's files: %s", res.Stderr)

	other := newIsolated(t, local.Config{Caches: []string{"FAKE_CACHE=" + cache}})
	res = run(t, other, adapter.Command{Args: []string{"sh", "-c", `cat "$FAKE_CACHE/sub/b"`}})
	assert.Equal(t, "content of sub/b", string(res.Stdout), "%s", res.Stderr)
	assert.Equal(t, before, treeHash(t, cache), "the caller's cache is unchanged")
}

// Caches are checked: a configured one that is not a directory of the caller's, or is a credential
// store, a home directory, holds the workspace or overlaps another, is refused; with NoCaches, or isolation off, no
// cache is shown and no variable set.
func TestCacheChecks(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	t.Parallel()
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	ws := t.TempDir()
	for _, bad := range []string{"relative/dir", "/nonexistent-cache", filepath.Join(home, ".ssh"), home, "/etc", "/", ws, filepath.Dir(ws)} {
		_, err := local.New(local.Config{Root: ws, Caches: []string{"X=" + bad}})
		assert.Error(t, err, "cache %s", bad)
	}
	cache := fakeCache(t)
	_, err = local.New(local.Config{Root: ws, Caches: []string{cache, "X=" + filepath.Join(cache, "sub")}})
	assert.Error(t, err, "overlapping caches")
	for _, cfg := range []local.Config{{NoCaches: true, Caches: []string{"FAKE_CACHE=" + cache}}, {Isolation: local.IsolationOff, Caches: []string{"FAKE_CACHE=" + cache}}} {
		sb := newIsolated(t, cfg)
		res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo "[$FAKE_CACHE]"`}})
		assert.Equal(t, "[]\n", string(res.Stdout))
	}
}

// Go's caches are found where the caller's go finds them (GOCACHE here, a temporary one warmed
// by two host runs of go test), and a new sandbox's go test uses it: it does not build the
// standard library again.
func TestCacheWarmGoTest(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	needTool(t, "go")
	mod := goModule(t)
	gocache := filepath.Join(t.TempDir(), "gocache")
	t.Setenv("GOCACHE", gocache)
	t.Setenv("GOMODCACHE", filepath.Join(t.TempDir(), "gomodcache"))
	require.NoError(t, os.MkdirAll(os.Getenv("GOMODCACHE"), 0o755))
	for range 2 {
		out, err := hostGo(mod, "test", "-count=1", ".")
		require.NoError(t, err, "%s", out)
	}
	before := treeHash(t, gocache)

	sb := newIsolated(t, local.Config{Root: mod})
	res := run(t, sb, adapter.Command{Args: []string{"go", "env", "GOCACHE"}})
	require.Equal(t, gocache+"\n", string(res.Stdout), "the caller's GOCACHE is found: %s", res.Stderr)
	res = run(t, sb, adapter.Command{Args: []string{"go", "test", "-x", "-count=1", "."}, Timeout: 5 * 60e9})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Contains(t, string(res.Stdout), "ok  \tcachemod")
	for _, std := range []string{"fmt", "runtime", "strings", "testing"} {
		assert.False(t, strings.Contains(string(res.Stderr), " -p "+std+" "), "the standard library is not built again: %s is", std)
	}
	assert.Equal(t, before, treeHash(t, gocache), "the caller's GOCACHE is unchanged")
}

// goModuleFiles are a small module with a test: its package and test import strings, fmt and
// testing.
var goModuleFiles = map[string]string{
	"go.mod": "module cachemod\n\ngo 1.21\n",
	"m.go":   "package cachemod\n\nimport \"strings\"\n\nfunc Up(s string) string { return strings.ToUpper(s) }\n",
	"m_test.go": "package cachemod\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\n" +
		"func TestUp(t *testing.T) {\n\tif got := Up(\"a\"); got != \"A\" {\n\t\tt.Fatal(fmt.Sprint(got))\n\t}\n}\n",
}

// goModule writes goModuleFiles in a new directory.
func goModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range goModuleFiles {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	return dir
}

// hostGo runs go in dir on the host, with this process's environment.
func hostGo(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	return cmd.CombinedOutput()
}

// After Stop, and after its owner's SIGKILL (the janitor), nothing of a sandbox's caches is left:
// no upper directory, and no overlay (they were in the helpers' mount namespaces only).
func TestCacheNothingLeftAfterStop(t *testing.T) {
	requireLayers(t, local.LayerFSView)
	t.Parallel()
	cache := fakeCache(t)
	sb, err := local.New(runnable(local.Config{Caches: []string{"FAKE_CACHE=" + cache}}))
	require.NoError(t, err)
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo x > "$FAKE_CACHE/x"`}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	dir := local.CacheDir(sb)
	_, err = os.Stat(filepath.Join(dir, "0-0", "upper", "x"))
	require.NoError(t, err, "the command's file is in the upper layer")
	require.NoError(t, sb.Stop(context.Background()))
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, fs.ErrNotExist, "Stop removes the upper directories")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), filepath.Base(dir))
	_, err = os.Stat(filepath.Join(cache, "x"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestCacheNothingLeftAfterOwnerKilled(t *testing.T) {
	if os.Getenv("SANDBOXER_TEST_OWNER_CHILD") != "" {
		t.Skip("in the child")
	}
	requireLayers(t, local.LayerFSView)
	cache := fakeCache(t)
	before := treeHash(t, cache)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCacheOwnerChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBOXER_TEST_CACHE_CHILD="+cache)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 4096)
	var got string
	for !strings.Contains(got, "\nready\n") {
		n, err := out.Read(buf)
		require.NoError(t, err, "the child said %q", got)
		got += string(buf[:n])
	}
	var dir string
	for _, line := range strings.Split(got, "\n") {
		if p, ok := strings.CutPrefix(line, "cachedir "); ok {
			dir = p
		}
	}
	require.NotEmpty(t, dir, "%s", got)
	_, err = os.Stat(filepath.Join(dir, "0-0", "upper", "x"))
	require.NoError(t, err, "the child's command wrote to its upper layer")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	}, 10e9, 50e6, "the janitor removes %s", dir)
	assert.Equal(t, before, treeHash(t, cache), "the caller's cache is unchanged")
}

// TestCacheOwnerChild is the owner TestCacheNothingLeftAfterOwnerKilled kills: a sandbox whose
// command wrote to its cache and still runs.
func TestCacheOwnerChild(t *testing.T) {
	cache := os.Getenv("SANDBOXER_TEST_CACHE_CHILD")
	if cache == "" {
		t.Skip("run by TestCacheNothingLeftAfterOwnerKilled")
	}
	sb, err := local.New(runnable(local.Config{Caches: []string{"FAKE_CACHE=" + cache}}))
	require.NoError(t, err)
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `echo x > "$FAKE_CACHE/x"`}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	go func() {
		_, _ = sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sleep", "600"}})
	}()
	fmt.Printf("cachedir %s\nready\n", local.CacheDir(sb))
	select {}
}

// A cache on a file system without idmapped mounts (here an overlay; in CI's VM, Debian 6.1's
// tmpfs) is left out: the command runs with every layer, without that cache's variable.
func TestCacheWithoutIdmappedMountsIsLeftOut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("idmapped layers are a root caller's")
	}
	base := t.TempDir()
	for _, d := range []string{"lower", "upper", "work", "cache"} {
		require.NoError(t, os.Mkdir(filepath.Join(base, d), 0o755))
	}
	cache := filepath.Join(base, "cache")
	opts := fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", base, base, base)
	require.NoError(t, syscall.Mount("overlay", cache, "overlay", 0, opts))
	t.Cleanup(func() { assert.NoError(t, syscall.Unmount(cache, syscall.MNT_DETACH)) })
	require.NoError(t, os.WriteFile(filepath.Join(cache, "f"), []byte("x"), 0o644))

	sb := newIsolated(t, local.Config{Caches: []string{"FAKE_CACHE=" + cache}})
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", `echo "cache=${FAKE_CACHE:-unset}"`}})
	require.NoError(t, err, "a cache that cannot be idmapped must not fail the command")
	assert.Equal(t, "cache=unset\n", string(res.Stdout), "%s", res.Stderr)
	assert.Contains(t, res.Isolation.Layers, local.LayerUnprivileged)
}
