//go:build linux && !sandboxer_portable

package local

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeCanary opens a pipe holding a token; intact reports whether both ends still name it.
func pipeCanary(t *testing.T) (intact func() bool) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	_, err = w.Write([]byte("canary"))
	require.NoError(t, err)
	var want [2]syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(r.Fd()), &want[0]))
	require.NoError(t, syscall.Fstat(int(w.Fd()), &want[1]))
	return func() bool {
		for i, f := range []*os.File{r, w} {
			var st syscall.Stat_t
			if syscall.Fstat(int(f.Fd()), &st) != nil || st.Ino != want[i].Ino {
				return false
			}
		}
		b := make([]byte, 16)
		n, err := r.Read(b)
		return err == nil && bytes.Equal(b[:n], []byte("canary"))
	}
}

// A cgroup handed out when the pool is closed (a sandbox stopped while its command ran) is
// released by close alone: the command's put must not close its descriptor again, by then
// possibly another file's number.
func TestCgroupPutAfterPoolClose(t *testing.T) {
	p := newCgroupPool(-1)
	if p == nil {
		t.Skip("no cgroup v2 delegation here")
	}
	d, err := p.get()
	require.NoError(t, err)
	d.kill() // as a SIGKILL of the command does: put then releases instead of reusing
	p.close()
	intact := pipeCanary(t) // takes the lowest free numbers: the one close just freed
	p.put(d)
	assert.True(t, intact(), "put closed a descriptor it no longer owned")
	_, err = p.get()
	assert.ErrorIs(t, err, errPoolClosed)
	assert.NoDirExists(t, d.path)
}

// A sandbox whose isolation was stopped while a command was being started refuses it: it never
// falls back to running the command as a plain host process.
func TestStoppedIsolationNeverFallsBackToPlain(t *testing.T) {
	if !Probe().Available(LayerUserNS) {
		t.Skip("no user namespaces here")
	}
	s, err := New(Config{Root: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop(t.Context()) })
	require.NoError(t, s.iso.stop())
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	p, _, err := s.startIsolated(adapter.Command{Args: []string{"true"}}, "/bin/true", s.dir, nil, w, w)
	assert.Nil(t, p)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}

// Finding 5: a helper that no longer answers (stopped here with SIGSTOP, as a command could
// before no-caps) does not hang the call past its timeout: the adapter takes it for dead, and the
// sandbox's next command gets a new helper.
func TestUnresponsiveHelperIsTakenForDead(t *testing.T) {
	t.Parallel()
	if !Probe().Available(LayerUserNS) {
		t.Skip("no user namespaces here")
	}
	s, err := New(Config{Root: t.TempDir(), KillGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	ctx := context.Background()
	_, err = s.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	require.NoError(t, err)
	h, err := s.iso.helper(false)
	require.NoError(t, err)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.ExecuteCommand(ctx, adapter.Command{Args: []string{"sleep", "60"}, Timeout: time.Second})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, syscall.Kill(h.cmd.Process.Pid, syscall.SIGSTOP))
	select {
	case err := <-done:
		assert.Error(t, err)
		assert.Less(t, time.Since(start), time.Second+unresponsive+5*time.Second)
	case <-time.After(time.Second + unresponsive + 10*time.Second):
		t.Fatal("the call hung on a stopped helper")
	}
	res, err := s.ExecuteCommand(ctx, adapter.Command{Args: []string{"echo", "again"}})
	require.NoError(t, err)
	assert.Equal(t, "again\n", string(res.Stdout))
}

// Only this adapter's own cgroup names are taken for a dead process's leftovers: another tool's
// "sandboxer-<id>" (an oci sandbox's, whose id may begin with or be only digits) is never killed.
func TestStalePIDOnlyOwnNames(t *testing.T) {
	pid, ok := stalePID("sandboxer-1234-0123456789abcdef")
	assert.True(t, ok)
	assert.Equal(t, 1234, pid)
	for _, name := range []string{"sandboxer-9cfb0123", "sandboxer-12345678", "sandboxer-oci-1234",
		"sandboxer-1234-short", "sandboxer-1234-0123456789ABCDEF", "sandboxer--0123456789abcdef", "other-1-0123456789abcdef"} {
		_, ok := stalePID(name)
		assert.False(t, ok, name)
	}
}
