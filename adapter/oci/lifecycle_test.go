package oci_test

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/errs"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	assert.NoError(t, oci.Config{}.Validate())
	assert.NoError(t, oci.Config{Runtime: "runsc", Mounts: []oci.Mount{{Source: "/usr", Target: "/mnt/usr"}}}.Validate())
	for _, c := range []oci.Config{
		{Runtime: "docker"}, {UserNamespace: "maybe"}, {Runtime: "runsc", UserNamespace: "on"},
		{UIDBase: 1000}, {UIDBase: 1 << 31}, {MemoryBytes: -2}, {Pids: -5}, {MilliCPUs: -3},
		{MemoryBytes: 1024}, {MilliCPUs: 1}, {TmpBytes: -1}, {Workspace: "relative/dir"},
		{StateDir: "relative"}, {CapAdd: []string{"NET_ADMIN"}}, {Env: []string{"NOEQUALS"}},
		{Mounts: []oci.Mount{{Source: "/usr", Target: "/usr"}}},
		{Mounts: []oci.Mount{{Source: "/usr", Target: "/mnt/a/b"}}},
		{Mounts: []oci.Mount{{Source: "usr", Target: "/mnt/usr"}}},
		{Mounts: []oci.Mount{{Source: "/nonexistent", Target: "/mnt/x"}}},
		{Mounts: []oci.Mount{{Source: "/usr", Target: "/mnt/x"}, {Source: "/bin", Target: "/mnt/x"}}},
	} {
		assert.ErrorIs(t, c.Validate(), errs.InvalidInput, "%+v", c)
		_, err := oci.New(context.Background(), c)
		assert.ErrorIs(t, err, errs.InvalidInput, "%+v", c)
	}
}

// A missing runtime binary is SANDBOX_UNAVAILABLE with a message that names it.
func TestMissingRuntime(t *testing.T) {
	ctx := ctxT(t)
	_, err := oci.New(ctx, oci.Config{StateDir: stateDir, RuntimePath: "/nonexistent/runc"})
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.Contains(t, err.Error(), "/nonexistent/runc")
	t.Setenv("PATH", t.TempDir())
	for _, rt := range oci.Runtimes {
		_, err := oci.New(ctx, oci.Config{StateDir: stateDir, Runtime: rt})
		require.ErrorIs(t, err, errs.SandboxUnavailable, rt)
		assert.Contains(t, errs.As(err).Msg, `"`+rt+`" not found on PATH`)
		assert.Contains(t, errs.As(err).Msg, "apt-get install "+rt)
	}
	reports := oci.Probe(ctx, oci.Config{StateDir: stateDir})
	require.Len(t, reports, len(oci.Runtimes))
	for _, r := range reports {
		assert.False(t, r.Works)
		assert.Contains(t, r.Error, "not found on PATH")
	}
}

// TestProbe: what doctor shows, for the runtimes that work here.
func TestProbe(t *testing.T) {
	t.Parallel()
	for _, r := range oci.Probe(ctxT(t), oci.Config{StateDir: stateDir}) {
		t.Logf("%s %s (%s): works=%t kernel=%s layers=%v %s", r.Name, r.Version, r.Path, r.Works, r.Kernel, r.Layers, r.Error)
		if runtimeErr[r.Name] != nil {
			continue
		}
		assert.True(t, r.Works, r.Name)
		assert.NotEmpty(t, r.Version, r.Name)
		assert.Contains(t, r.Layers, "network:none", r.Name)
		if r.Name == oci.Runsc {
			assert.Equal(t, "4.4.0", r.Kernel, "gVisor's kernel")
			if assert.NotNil(t, r.Platform, "gVisor's platform is reported") {
				t.Logf("runsc platform: %s", r.Platform)
				assert.NotEmpty(t, r.Platform.Platform)
				assert.NotEmpty(t, r.Platform.Reason)
			}
		} else {
			assert.Nil(t, r.Platform, r.Name)
		}
	}
}

func TestStopLeavesNothing(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		sb := newSandbox(t, rt, oci.Config{})
		ws := sb.HostWorkspace()
		require.NoError(t, sb.WriteFile(ctx, "f", []byte("x")))
		sh(t, sb, "sleep 300 & echo started")
		require.NoError(t, sb.Stop(ctx))
		require.NoError(t, sb.Stop(ctx), "Stop is idempotent")
		assert.Empty(t, oci.Leftovers(ctx, oci.Config{StateDir: stateDir}, sb.ID()))
		_, err := os.Stat(ws)
		assert.ErrorIs(t, err, fs.ErrNotExist, "the workspace it made is removed")
		_, err = oci.Attach(ctx, oci.Config{StateDir: stateDir}, sb.ID())
		assert.ErrorIs(t, err, errs.NotFound)
	})
}

func TestWorkspaceKeptOrGiven(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		kept := newSandbox(t, rt, oci.Config{KeepWorkspace: true})
		require.NoError(t, kept.WriteFile(ctx, "kept.txt", []byte("kept")))
		require.NoError(t, kept.Stop(ctx))
		got, err := os.ReadFile(filepath.Join(kept.HostWorkspace(), "kept.txt"))
		require.NoError(t, err, "KeepWorkspace keeps it")
		assert.Equal(t, "kept", string(got))
		assert.Empty(t, oci.Leftovers(ctx, oci.Config{StateDir: stateDir}, kept.ID()))
		require.NoError(t, os.RemoveAll(kept.HostWorkspace()))

		// A given directory is mounted, made the sandbox user's, and kept.
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "given.txt"), []byte("given"), 0o644))
		sb := newSandbox(t, rt, oci.Config{Workspace: dir})
		res := sh(t, sb, "cat sub/given.txt && echo more >> sub/given.txt && touch new.txt && echo ok")
		assert.Equal(t, "givenok\n", string(res.Stdout), "%s", res.Stderr)
		require.NoError(t, sb.Stop(ctx))
		got, err = os.ReadFile(filepath.Join(dir, "sub", "given.txt"))
		require.NoError(t, err)
		assert.Equal(t, "givenmore\n", string(got))
		fi, err := os.Stat(filepath.Join(dir, "new.txt"))
		require.NoError(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		t.Logf("%s: a file the sandbox made belongs to host uid %d", rt, st.Uid)
		assert.NotZero(t, st.Uid, "never host root")
	})
}

// TestAttachHelper is not a test on its own: TestAttachFromAnotherProcess runs the test binary
// with it, as another process that finds the sandbox by id.
func TestAttachHelper(t *testing.T) {
	id := os.Getenv("SANDBOXER_OCI_ATTACH")
	if id == "" {
		t.Skip("helper process for TestAttachFromAnotherProcess")
	}
	ctx := ctxT(t)
	sb, err := oci.Attach(ctx, oci.Config{StateDir: os.Getenv("SANDBOXER_OCI_STATE")}, id)
	require.NoError(t, err)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "cat keep.txt; echo child > from-child.txt"}})
	require.NoError(t, err)
	data, err := sb.ReadFile(ctx, "from-child.txt")
	require.NoError(t, err)
	fmt.Printf("ATTACHED %s|%s|%v\n", strings.TrimSpace(string(res.Stdout)), strings.TrimSpace(string(data)), res.Isolation.Layers)
	if os.Getenv("SANDBOXER_OCI_CRASH") != "" {
		os.Exit(0) // no Detach: the process just ends
	}
	require.NoError(t, sb.Detach())
}

// TestAttachFromAnotherProcess: a persistent sandbox is reached by id from another process,
// through an agent of its own started with the runtime's exec; that agent ends with the process,
// whether it detached or died.
func TestAttachFromAnotherProcess(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		sb := newSandbox(t, rt, oci.Config{Persist: true})
		require.NoError(t, sb.WriteFile(ctx, "keep.txt", []byte("kept")))
		for _, crash := range []string{"", "1"} {
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAttachHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SANDBOXER_OCI_ATTACH="+sb.ID(), "SANDBOXER_OCI_STATE="+stateDir, "SANDBOXER_OCI_CRASH="+crash)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "ATTACHED kept|child|")
			require.Eventually(t, func() bool {
				res := sh(t, sb, "ps -o args | grep -c '^/usr/local/bin/sandboxer-agent$' || true")
				return strings.TrimSpace(string(res.Stdout)) == "0"
			}, 10*time.Second, 100*time.Millisecond, "the other process's agent is gone (crash=%q)", crash)
		}
		data, err := sb.ReadFile(ctx, "from-child.txt")
		require.NoError(t, err)
		assert.Equal(t, "child\n", string(data))

		// In this process too, and both handles work at once.
		other, err := oci.Attach(ctx, oci.Config{StateDir: stateDir}, sb.ID())
		require.NoError(t, err)
		assert.Equal(t, "kept", string(sh(t, other, "cat keep.txt").Stdout))
		assert.Equal(t, sb.Isolation(), other.Isolation(), "the attached handle observes the same layers")
		require.NoError(t, other.Detach())
		_, err = other.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		assert.ErrorIs(t, err, errs.SandboxUnavailable, "a detached handle is done")
		assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout), "the sandbox is not")

		_, err = oci.Attach(ctx, oci.Config{StateDir: stateDir}, "0000000000000000")
		assert.ErrorIs(t, err, errs.NotFound)
		_, err = oci.Attach(ctx, oci.Config{StateDir: stateDir}, "../../etc")
		assert.ErrorIs(t, err, errs.InvalidInput)
	})
}

// TestPruneHelper is not a test on its own: TestPrune runs the test binary with it to get
// sandboxes whose creating process really died without stopping them.
func TestPruneHelper(t *testing.T) {
	rt := os.Getenv("SANDBOXER_OCI_ORPHAN")
	if rt == "" {
		t.Skip("helper process for TestPrune")
	}
	oci.NoJanitor() // a crash that its janitor did not see either (TestJanitor sees to the other)
	sb, err := oci.New(ctxT(t), oci.Config{Runtime: rt, StateDir: os.Getenv("SANDBOXER_OCI_STATE")})
	require.NoError(t, err)
	fmt.Println("ORPHAN", sb.ID(), sb.HostWorkspace())
	os.Exit(0) // no Stop: a crash as far as the sandbox knows
}

// TestJanitorHelper is not a test on its own: TestJanitor runs the test binary with it to get a
// sandbox whose owner is killed by SIGKILL in the middle of a call.
func TestJanitorHelper(t *testing.T) {
	rt := os.Getenv("SANDBOXER_OCI_ORPHAN")
	if rt == "" || os.Getenv("SANDBOXER_OCI_KILLED") == "" {
		t.Skip("helper process for TestJanitor")
	}
	sb, err := oci.New(ctxT(t), oci.Config{Runtime: rt, StateDir: os.Getenv("SANDBOXER_OCI_STATE")})
	require.NoError(t, err)
	fmt.Println("SANDBOX", sb.ID(), sb.Workspace())
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", "echo started; sleep 600"}, Stdout: os.Stdout})
	t.Fatal("the call was to be cut short by SIGKILL", res, err)
}

// TestJanitor kills a sandbox's owner with SIGKILL mid-call: the janitor removes the sandbox
// (not persistent) within 10 s, without Prune: container, cgroups, directory, workspace.
func TestJanitor(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestJanitorHelper$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "SANDBOXER_OCI_ORPHAN="+rt, "SANDBOXER_OCI_KILLED=1", "SANDBOXER_OCI_STATE="+stateDir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var id, ws string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "SANDBOX" {
				id, ws = f[1], f[2]
				track(id)
			}
			if sc.Text() == "started" {
				break
			}
		}
		require.NotEmpty(t, id, "the helper made no sandbox")
		left := oci.Leftovers(ctx, oci.Config{StateDir: stateDir}, id)
		require.NotEmpty(t, left, "the sandbox is there while its owner lives")
		if diskcap.Check() == nil {
			assert.True(t, hasPrefix(left, "mount "), "its workspace is a capped file system: %v", left)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		require.Eventually(t, func() bool {
			return len(oci.Leftovers(ctx, oci.Config{StateDir: stateDir}, id)) == 0
		}, 10*time.Second, 100*time.Millisecond, "the sandbox outlived its killed owner by 10 s")
		_, err = os.Stat(ws)
		assert.ErrorIs(t, err, fs.ErrNotExist, "its workspace is gone")
	})
}

func TestPrune(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		state := ownStateDir(t)
		live := newSandbox(t, rt, oci.Config{StateDir: state})
		persist := newSandbox(t, rt, oci.Config{StateDir: state, Persist: true})

		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPruneHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SANDBOXER_OCI_ORPHAN="+rt, "SANDBOXER_OCI_STATE="+state)
		out, err := cmd.Output()
		require.NoError(t, err, string(out))
		_, rest, ok := strings.Cut(string(out), "ORPHAN ")
		require.True(t, ok, string(out))
		f := strings.Fields(rest)
		orphan, orphanWS := f[0], f[1]
		track(orphan)
		if diskcap.Check() == nil {
			left := oci.Leftovers(ctx, oci.Config{StateDir: state}, orphan)
			assert.True(t, hasPrefix(left, "mount "), "its workspace is a capped file system: %v", left)
		}

		// Its agent saw its stream end: the container stopped by itself.
		require.Eventually(t, func() bool {
			list, err := oci.List(ctx, oci.Config{StateDir: state})
			require.NoError(t, err)
			for _, i := range list {
				if i.ID == orphan {
					return i.Status == "stopped" || i.Status == "gone"
				}
			}
			return false
		}, 20*time.Second, 100*time.Millisecond)

		removed, err := oci.Prune(ctx, oci.Config{StateDir: state}, oci.PruneOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{orphan}, removed, "only the orphan")
		assert.Empty(t, oci.Leftovers(ctx, oci.Config{StateDir: state}, orphan))
		_, err = os.Stat(orphanWS)
		assert.ErrorIs(t, err, fs.ErrNotExist, "its workspace is gone")
		for _, sb := range []*oci.Sandbox{live, persist} {
			assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))
		}
		list, err := oci.List(ctx, oci.Config{StateDir: state})
		require.NoError(t, err)
		require.Len(t, list, 2)
		for _, i := range list {
			assert.Equal(t, "running", i.Status)
			assert.Equal(t, i.ID == persist.ID(), i.Persist)
		}
	})
}

// An external kill of the container (the runtime's own kill) ends a running call quickly with
// SANDBOX_UNAVAILABLE, and every later call too; Stop still cleans up.
func TestExternalKill(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		ctx := ctxT(t)
		sb := newSandbox(t, rt, oci.Config{})
		done := make(chan error, 1)
		go func() {
			_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sleep", "300"}})
			done <- err
		}()
		time.Sleep(500 * time.Millisecond)
		root := filepath.Join(stateDir, "oci", "runtime", rt)
		out, err := exec.Command(rt, "--root", root, "kill", "sandboxer-"+sb.ID(), "KILL").CombinedOutput()
		require.NoError(t, err, "%s", out)
		select {
		case err := <-done:
			assert.ErrorIs(t, err, errs.SandboxUnavailable)
		case <-time.After(15 * time.Second):
			t.Fatal("a command in a killed container did not return")
		}
		start := time.Now()
		_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
		assert.ErrorIs(t, err, errs.SandboxUnavailable)
		assert.Less(t, time.Since(start), 5*time.Second)
		require.NoError(t, sb.Stop(ctx))
	})
}

// PID 1 of the sandbox is the agent, another user's process to the commands: every signal from
// inside is refused (gVisor's kernel would deliver SIGKILL to a PID 1 of the commands' own user),
// and it reaps the orphans of commands.
func TestInitSurvivesTheSandbox(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		sb := newSandbox(t, rt, oci.Config{})
		sigs := strings.Fields("KILL TERM INT HUP QUIT USR1 USR2 PIPE ALRM SEGV ABRT STOP")
		res := sh(t, sb, `for s in `+strings.Join(sigs, " ")+`; do kill -$s 1 2>&1; done; echo sent`)
		assert.Equal(t, strings.Repeat("sh: can't kill pid 1: Operation not permitted\n", len(sigs))+"sent\n", string(res.Stdout), "%s", res.Stderr)
		// Orphans: a child whose parent is gone belongs to PID 1 until it is reaped.
		sh(t, sb, `sh -c 'sleep 0.2 & exit 0'`)
		time.Sleep(500 * time.Millisecond)
		res = sh(t, sb, `ps -o stat,args | grep -c '^Z' || true`)
		assert.Equal(t, "0\n", string(res.Stdout), "no zombie is left")
		assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout))
	})
}

// TestUserNamespaceBehindUnsearchableDir: a state directory below a directory the container's
// root cannot search (as /root is, the CLI's default for root) still gets the user namespace,
// through the private mount namespace of the runtime's start, and no mount of it is left in any
// thread of this process.
func TestUserNamespaceBehindUnsearchableDir(t *testing.T) {
	t.Parallel()
	needRuntime(t, oci.Runc)
	ctx := ctxT(t)
	private := t.TempDir()
	require.NoError(t, os.Chmod(private, 0o700))
	state := filepath.Join(private, "state")
	t.Cleanup(func() {
		oci.Prune(context.Background(), oci.Config{StateDir: state}, oci.PruneOptions{All: true})
		filepath.WalkDir(private, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	for range 3 {
		sb := newSandbox(t, oci.Runc, oci.Config{StateDir: state})
		assert.Contains(t, layers(sb, t), "userns")
		tasks, err := os.ReadDir("/proc/self/task")
		require.NoError(t, err)
		for _, task := range tasks {
			mi, err := os.ReadFile("/proc/self/task/" + task.Name() + "/mountinfo")
			if err != nil {
				continue
			}
			// The file system of the workspace and HOME (WorkspaceBytes) is the sandbox's, not the
			// start's.
			disk := filepath.Join(state, "oci", "sandboxes", sb.ID(), "disk")
			for _, line := range strings.Split(string(mi), "\n") {
				if f := strings.Fields(line); len(f) > 4 && f[4] != disk {
					assert.NotContains(t, line, private, "thread %s sees a mount of the start", task.Name())
				}
			}
		}
		require.NoError(t, sb.Stop(ctx))
		mi, err := os.ReadFile("/proc/self/mountinfo")
		require.NoError(t, err)
		assert.NotContains(t, string(mi), private, "Stop left a mount")
	}
	off := newSandbox(t, oci.Runc, oci.Config{StateDir: state, UserNamespace: oci.UserNSOff})
	assert.NotContains(t, layers(off, t), "userns")
}

// hasPrefix reports whether an entry of list starts with prefix.
func hasPrefix(list []string, prefix string) bool {
	for _, e := range list {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}
