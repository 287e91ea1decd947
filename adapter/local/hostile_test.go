package local_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
)

// Attacks of the adversarial review (issue 23), each run from inside a sandbox, each checked on
// the host.

// Finding 6: a descriptor the sandboxer inherited without close-on-exec never reaches a command.
func TestInheritedDescriptorsDoNotReachCommands(t *testing.T) {
	requireLayers(t, local.LayerUserNS)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	// As a parent of the sandboxer would leave it: no O_CLOEXEC.
	fd, err := unix.Open(secret, unix.O_RDONLY, 0)
	require.NoError(t, err)
	leaked := os.NewFile(uintptr(fd), "leaked")
	defer leaked.Close()
	// The helper is started now, while the descriptor is open and inheritable.
	sb := newIsolated(t, local.Config{})
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", `ls /proc/self/fd; cat <&"$1" 2>&1`, "sh", fmt.Sprint(fd)}})
	lines := strings.Split(string(res.Stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 4, "%s", res.Stdout)
	assert.Equal(t, []string{"0", "1", "2", "3"}, lines[:4], "only stdin, stdout, stderr (and ls's own directory): %s", res.Stdout)
	assert.NotContains(t, string(res.Stdout), "host secret")
}

// Finding 5: commands can neither trace the helper, nor take its descriptors, nor stop it; they
// run with no capability at all.
func TestCommandsCannotTraceTheHelper(t *testing.T) {
	requireLayers(t, local.LayerNoCaps)
	needTool(t, "python3")
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe knows the syscall numbers of amd64 only")
	}
	sb := newIsolated(t, local.Config{})
	probe := `import ctypes,os
libc=ctypes.CDLL(None,use_errno=True)
print('ptrace', libc.ptrace(16,1,0,0), ctypes.get_errno())          # PTRACE_ATTACH to PID 1, the helper
pfd=libc.syscall(434,1,0)                                             # pidfd_open(1)
print('getfd', libc.syscall(438,pfd,3,0), ctypes.get_errno())         # pidfd_getfd(helper, 3)
os.kill(1, 19)                                                        # SIGSTOP: ignored for the namespace's init
print([l for l in open('/proc/self/status') if l.startswith(('CapEff','CapPrm','CapBnd'))])
try:
    print('environ', len(open('/proc/1/environ','rb').read()))
except OSError as e:
    print('environ unreadable', e.errno)`
	res := run(t, sb, adapter.Command{Args: []string{"python3", "-c", probe}})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	out := string(res.Stdout)
	assert.Contains(t, out, "ptrace -1 1\n", "PTRACE_ATTACH is EPERM")
	assert.Contains(t, out, "getfd -1 1\n", "pidfd_getfd is EPERM")
	for _, c := range []string{"CapEff:\\t0000000000000000", "CapPrm:\\t0000000000000000", "CapBnd:\\t0000000000000000"} {
		assert.Contains(t, out, c)
	}
	assert.Contains(t, out, "environ unreadable", "the helper's environment (and memory) are not readable")
	// The helper still serves commands after the attempts.
	res = run(t, sb, adapter.Command{Args: []string{"echo", "alive"}, Timeout: 10 * time.Second})
	assert.Equal(t, "alive\n", string(res.Stdout))
}

// Finding 9: a symlink inside the workspace to a sparse 4 TiB file is refused on the size of the
// file opened, before anything is allocated (it was a fatal out-of-memory).
func TestReadOfSparseFileThroughLinkIsRefused(t *testing.T) {
	t.Parallel()
	sb := newIsolated(t, local.Config{Isolation: local.IsolationOff})
	big := filepath.Join(sb.Dir(), "sparse")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(4<<40))
	require.NoError(t, f.Close())
	require.NoError(t, os.Symlink("sparse", filepath.Join(sb.Dir(), "link")))
	for _, p := range []string{"link", "sparse"} {
		_, err = sb.ReadFile(context.Background(), p)
		assert.ErrorIs(t, err, errs.FileTooLarge, "the default limit, %s", p)
		_, err = sb.ReadFile(adapter.WithReadLimit(context.Background(), 1<<20), p)
		assert.ErrorIs(t, err, errs.FileTooLarge, p)
	}
	require.NoError(t, os.Truncate(big, 10))
	data, err := sb.ReadFile(adapter.WithReadLimit(context.Background(), 10), "link")
	require.NoError(t, err)
	assert.Len(t, data, 10)
}

// Issue 18: a fork bomb and a runaway allocation stay inside the sandbox's limits; the host keeps
// working, and the OOM kill is reported as such.
func TestLimitsHoldForkBombAndMemory(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerLimits, local.LayerUserNS)
	needTool(t, "python3")
	sb := newIsolated(t, local.Config{Pids: 64, Memory: 96 << 20})

	// 300 background sleeps, from a subshell that ends at the first failed fork: no more than
	// the pids limit can exist at once (counted with the shell's builtins: no fork is left).
	// (The timeout is generous: CI runs this in an emulated VM too, where the failed forks are slow.)
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{
		Args:    []string{"sh", "-c", `(for i in $(seq 300); do sleep 30 & done) 2>/dev/null; set -- /proc/[0-9]*; echo $#`},
		Timeout: 2 * time.Minute,
	})
	require.NoError(t, err)
	assert.Contains(t, res.Isolation.Layers, local.LayerLimits)
	assert.True(t, res.Isolation.Limits)
	n := 0
	_, _ = fmt.Sscan(strings.TrimSpace(string(res.Stdout)), &n)
	assert.Positive(t, n, "exit %d: %s %s", res.ExitCode, res.Stdout, res.Stderr)
	assert.LessOrEqual(t, n, 64+2, "processes in the sandbox: %s", res.Stdout)

	// A classic fork bomb ends with the call's timeout, and the host can still start processes.
	_, err = sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", "b() { b | b & }; b"}, Timeout: 3 * time.Second})
	if err != nil {
		assert.ErrorIs(t, err, errs.ProcessTimeout)
	}
	require.NoError(t, exec.Command("true").Run(), "the host still forks")
	res = run(t, sb, adapter.Command{Args: []string{"echo", "after"}})
	assert.Equal(t, "after\n", string(res.Stdout), "the sandbox serves commands after the bomb")

	// An allocation past the memory limit: killed by the kernel, reported as the limit.
	res = run(t, sb, adapter.Command{Args: []string{"python3", "-c", "b = bytearray(512 << 20); print('allocated')"}})
	assert.Equal(t, 137, res.ExitCode, "%s %s", res.Stdout, res.Stderr)
	assert.Equal(t, "memory", res.Limit)
	assert.NotContains(t, string(res.Stdout), "allocated")
	res = run(t, sb, adapter.Command{Args: []string{"python3", "-c", "b = bytearray(16 << 20); print('allocated')"}})
	assert.Equal(t, "allocated\n", string(res.Stdout), "within the limit")
	assert.Empty(t, res.Limit)
}

// Finding 12 and issue 18: after a SIGKILL of the process that owns a sandbox, nothing of it
// remains: no process, no private TMPDIR, no temporary workspace, no cgroup.
func TestNothingLeftAfterOwnerKilled(t *testing.T) {
	if os.Getenv("SANDBOXER_TEST_OWNER_CHILD") != "" {
		t.Skip("in the child")
	}
	requireLayers(t, local.LayerUserNS)
	token := "owner-" + randomToken()
	for _, iso := range []string{local.IsolationAuto, local.IsolationOff} {
		t.Run(iso, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestOwnerChild$", "-test.v")
			cmd.Env = append(os.Environ(), "SANDBOXER_TEST_OWNER_CHILD="+iso, "SANDBOXER_TEST_TOKEN="+token)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			// A child that never says ready (its command did not start, or it hangs) is killed,
			// which ends the scan below: the test fails instead of waiting forever.
			hung := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
			t.Cleanup(func() {
				hung.Stop()
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			// The child prints what it made and the host uid of its sandbox, then "ready" once
			// its command runs.
			var made []string
			uid := -1
			ready := false
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				if p, ok := strings.CutPrefix(line, "made "); ok {
					made = append(made, p)
				}
				if u, ok := strings.CutPrefix(line, "uid "); ok {
					uid, _ = strconv.Atoi(u)
				}
				if line == "ready" {
					ready = true
					break
				}
			}
			hung.Stop()
			require.True(t, ready, "the child did not say ready (its command ended, or it was killed after 2 minutes)")
			require.NotEmpty(t, made, "the child said what it made")
			require.NotEmpty(t, processesWith(token), "the child's commands run")
			// Its cgroups, named after its pid, beside this process's own (which it inherited).
			cgroups := cgroupsOf(cmd.Process.Pid)
			if iso == local.IsolationAuto && local.Probe().Available(local.LayerCgroup) {
				require.NotEmpty(t, cgroups, "the child made cgroups")
			}
			made = append(made, cgroups...)
			if iso == local.IsolationAuto && local.Probe().Available(local.LayerUIDPerSandbox) {
				require.Greater(t, uid, local.HostUID, "the child's sandbox has a uid of its own")
			}
			t.Logf("made: %v, uid %d", made, uid)
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()

			deadline := time.Now().Add(10 * time.Second)
			for {
				var left []string
				for _, p := range made {
					if _, err := os.Stat(p); err == nil {
						left = append(left, p)
					}
				}
				if procs := processesWith(token); len(procs) > 0 {
					left = append(left, procs...)
				}
				if uid > local.HostUID {
					left = append(left, uidLeft(uid)...) // its processes, its uid's lease
				}
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left behind 10 s after the owner's SIGKILL: %v", left)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// cgroupsOf lists the cgroup directories of sandboxes of process pid, in this process's cgroups.
func cgroupsOf(pid int) []string {
	own, _ := os.ReadFile("/proc/self/cgroup")
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		// Beside this process's own cgroup, or (cgroup v2, where that cannot pass the limits'
		// controllers on) beside an ancestor's.
		for _, mnt := range cgroupMounts(parts[1]) {
			for dir := parts[2]; ; dir = filepath.Dir(dir) {
				m, _ := filepath.Glob(filepath.Join(mnt, dir, fmt.Sprintf("sandboxer-%d-*", pid)))
				found = append(found, m...)
				if dir == "/" || dir == "." {
					break
				}
			}
		}
	}
	return found
}

// processesWith lists the processes whose command line contains token.
func processesWith(token string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(b, []byte(token)) {
			found = append(found, "process "+e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// TestOwnerChild is the child of TestNothingLeftAfterOwnerKilled: a temporary sandbox running a
// command with a background job, until it is killed.
func TestOwnerChild(t *testing.T) {
	iso := os.Getenv("SANDBOXER_TEST_OWNER_CHILD")
	if iso == "" {
		t.Skip("run by TestNothingLeftAfterOwnerKilled")
	}
	sb, err := local.New(runnable(local.Config{Isolation: iso}))
	require.NoError(t, err)
	fmt.Println("made", sb.Dir())
	token := os.Getenv("SANDBOXER_TEST_TOKEN")
	go func() {
		_, err := sb.ExecuteCommand(context.Background(), adapter.Command{
			Args:   []string{"sh", "-c", "sh -c 'sleep 600; true' bg-$0 & echo $TMPDIR; cat /proc/self/cgroup /proc/self/uid_map; echo END; sleep 600; true", token},
			Stdout: ownerStdout{},
		})
		// The command runs until this process is killed: its end is the test's failure (the
		// parent sees the output end without "ready").
		fmt.Println("command ended:", err)
		os.Exit(1)
	}()
	time.Sleep(time.Hour) // until killed
}

// ownerStdout turns the command's TMPDIR into a "made" line, the uid its root is on the host
// (when it is not the host's root) into a "uid" line, and says ready at END.
type ownerStdout struct{}

func (ownerStdout) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "0" && f[2] == "1" {
			fmt.Println("uid", f[1])
		}
		switch {
		case line == "END":
			fmt.Println("ready")
		case strings.HasPrefix(line, "/"):
			fmt.Println("made", line)
		}
	}
	return len(p), nil
}

// cgroupMounts are the mount points of the cgroup hierarchy of controllers ("" for v2).
func cgroupMounts(controllers string) []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		if (controllers == "" && g[0] == "cgroup2") || (controllers != "" && g[0] == "cgroup" && strings.Contains(","+g[2]+",", ","+controllers+",") && !strings.HasPrefix(controllers, "name=")) {
			out = append(out, f[4])
		}
	}
	return out
}

// Finding 3: no file a command makes carries setuid or setgid out of the sandbox.
func TestNoSetuidFiles(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerNoSetuid)
	needTool(t, "python3")
	sb := newIsolated(t, local.Config{})
	script := `cp /bin/sh x; chmod 4755 x || echo chmod-refused; chmod g+s x || echo setgid-refused; chmod 755 x && echo plain-ok
python3 -c "
import os
for name, f in (('y', lambda: os.open('y', os.O_CREAT|os.O_WRONLY, 0o4755)), ('z', lambda: os.open('z', os.O_CREAT|os.O_WRONLY, 0o2755))):
    try:
        f(); print(name, 'created')
    except OSError as e:
        print(name, 'refused', e.errno)
os.open('.', os.O_RDONLY|os.O_DIRECTORY); print('opendir ok')
"
ls -d /workspace 2>/dev/null; echo done`
	res := run(t, sb, adapter.Command{Args: []string{"sh", "-c", script}})
	out := string(res.Stdout)
	for _, want := range []string{"chmod-refused", "setgid-refused", "plain-ok", "y refused 1", "z refused 1", "opendir ok", "done"} {
		assert.Contains(t, out, want, "%s %s", out, res.Stderr)
	}
	for _, name := range []string{"x", "y", "z"} {
		if fi, err := os.Stat(filepath.Join(sb.Dir(), name)); err == nil {
			assert.Zero(t, fi.Mode()&(os.ModeSetuid|os.ModeSetgid), "%s on the host: %s", name, fi.Mode())
		}
	}
}
