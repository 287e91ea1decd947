//go:build linux && !sandboxer_portable

package local_test

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

func TestCacheSmoke(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cache, "a"), []byte("a"), 0o644))
	sb := newIsolated(t, local.Config{Caches: []string{"FAKE=" + cache}})
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", `echo $FAKE; cat $FAKE/a; echo b >> $FAKE/a; cat $FAKE/a; rm -r $FAKE/sub; ls -la $FAKE; id; cat /proc/self/mountinfo | grep overlay`}})
	t.Logf("%v %s\n%s %v", err, res.Stdout, res.Stderr, res.Isolation.Layers)
	t.Log(local.CacheDir(sb))
	out, _ := hostRun("find", local.CacheDir(sb), "-ls")
	t.Logf("%s", out)
}

func hostRun(name string, args ...string) ([]byte, error) { return osexec.Command(name, args...).CombinedOutput() }
