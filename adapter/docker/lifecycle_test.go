package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
	"github.com/sandboxer/sandboxer/errs"
)

func TestDaemonUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := docker.New(ctx, docker.Config{Host: "unix://" + t.TempDir() + "/no-docker.sock"})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	_, err = docker.Attach(ctx, docker.Config{Host: "tcp://127.0.0.1:1"}, "abc")
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	_, err = docker.Prune(ctx, docker.Config{Host: "tcp://127.0.0.1:1"}, docker.PruneOptions{})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}

func TestMissingImage(t *testing.T) {
	t.Parallel()
	needDocker(t)
	_, err := docker.New(ctxT(t), docker.Config{Image: "sandboxer-no-such-image:never"})
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.Contains(t, errs.As(err).Msg, "sandboxer image build")
}

func TestAttachAndExternalKill(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "keep.txt", []byte("kept")))

	again, err := docker.Attach(ctx, docker.Config{}, sb.ID())
	require.NoError(t, err)
	data, err := again.ReadFile(ctx, "keep.txt")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(data))

	_, err = docker.Attach(ctx, docker.Config{}, "0000000000000000")
	assert.ErrorIs(t, err, errs.NotFound)

	// A command is running when the container is killed from outside: the call ends quickly
	// with SANDBOX_UNAVAILABLE, and so do the following ones.
	done := make(chan error, 1)
	go func() {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sleep", "300"}})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ContainerKill(ctx, sb.ContainerID(), client.ContainerKillOptions{Signal: "KILL"})
	require.NoError(t, err)
	select {
	case err := <-done:
		assert.ErrorIs(t, err, errs.SandboxUnavailable)
	case <-time.After(10 * time.Second):
		t.Fatal("a command in a killed container did not return")
	}
	start := time.Now()
	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	_, err = sb.ReadFile(ctx, "keep.txt")
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.ErrorIs(t, sb.WriteFile(ctx, "x", nil), errs.SandboxUnavailable)
	assert.Less(t, time.Since(start), 5*time.Second)

	// The killed container is stopped, or already removed by the daemon (AutoRemove: it is not
	// persistent): either way it cannot be attached.
	_, err = docker.Attach(ctx, docker.Config{}, sb.ID())
	assert.True(t, errors.Is(err, errs.SandboxUnavailable) || errors.Is(err, errs.NotFound),
		"attach to a killed container: %v", err)
	require.NoError(t, again.Stop(ctx))
	require.NoError(t, sb.Stop(ctx), "Stop after the container is gone")
}

// TestPruneOrphanHelper is not a test on its own: TestPrune runs the test binary with it to get a
// sandbox whose creating process really died without stopping it.
func TestPruneOrphanHelper(t *testing.T) {
	if os.Getenv("SANDBOXER_PRUNE_ORPHAN") != "1" {
		t.Skip("helper process for TestPrune")
	}
	// Without the agent: a sandbox with it goes with its creator's stream (TestOwnerKilled).
	sb, err := docker.New(ctxT(t), docker.Config{NoAgent: true})
	require.NoError(t, err)
	fmt.Println("ORPHAN", sb.ID())
	os.Exit(0) // no Stop, no TestMain clean-up check: a crash as far as the container knows
}

func TestPrune(t *testing.T) {
	needDocker(t)
	ctx := ctxT(t)
	sb, err := docker.New(ctx, docker.Config{Labels: map[string]string{"org.sandboxer.test": "prune"}})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Stop(context.Background()) })
	persist, err := docker.New(ctx, docker.Config{Persist: true})
	require.NoError(t, err)
	t.Cleanup(func() { persist.Stop(context.Background()) })

	// A process that created a sandbox and died without stopping it.
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPruneOrphanHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SANDBOXER_PRUNE_ORPHAN=1")
	out, err := cmd.Output()
	require.NoError(t, err, string(out))
	_, rest, ok := strings.Cut(string(out), "ORPHAN ")
	require.True(t, ok, string(out))
	orphan := strings.Fields(rest)[0]
	orphanDisk := docker.DiskDirOf(docker.Config{}, orphan)
	if diskcap.Check() == nil {
		assert.Contains(t, docker.DiskLeftovers(orphanDisk), "mount "+filepath.Join(orphanDisk, "fs"), "a capped workspace and HOME")
	}

	// This process is alive: nothing of it is pruned, even a container it stopped; the orphan is.
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ContainerKill(ctx, sb.ContainerID(), client.ContainerKillOptions{Signal: "KILL"})
	require.NoError(t, err)
	removed, err := docker.Prune(ctx, docker.Config{}, docker.PruneOptions{})
	require.NoError(t, err)
	assert.Contains(t, removed, orphan)
	assert.NotContains(t, removed, sb.ID(), "a live owner's container is never pruned")
	assert.NotContains(t, removed, persist.ID())
	_, err = docker.Attach(ctx, docker.Config{}, orphan)
	assert.ErrorIs(t, err, errs.NotFound, "the pruned container is gone")
	// Its loop device goes a moment after its container and the host's mount.
	assert.Eventually(t, func() bool { return len(docker.DiskLeftovers(orphanDisk)) == 0 }, 10*time.Second, 50*time.Millisecond,
		"its capped workspace is released: %v", docker.DiskLeftovers(orphanDisk))

	list, err := docker.List(ctx, docker.Config{})
	require.NoError(t, err)
	found := false
	for _, i := range list {
		if i.ID == persist.ID() {
			found = true
			assert.True(t, i.Persist)
		}
	}
	assert.True(t, found)
}

func TestPool(t *testing.T) {
	t.Parallel()
	needDocker(t)
	ctx := ctxT(t)
	p, err := docker.NewPool(ctx, docker.Config{}, 2)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(context.Background()) })
	// Wait until warm, then claims are instant.
	var claimed []*docker.Sandbox
	require.Eventually(t, func() bool {
		list, err := docker.List(ctx, docker.Config{})
		require.NoError(t, err)
		n := 0
		for _, i := range list {
			if i.State == "running" && i.Pool != "" {
				n++
			}
		}
		return n >= 2
	}, 30*time.Second, 100*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	for range 3 {
		start := time.Now()
		sb, err := p.Get(ctx)
		require.NoError(t, err)
		t.Logf("claim took %s", time.Since(start))
		t.Cleanup(func() { sb.Stop(context.Background()) })
		claimed = append(claimed, sb)
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"echo", "ok"}})
		require.NoError(t, err)
		assert.Equal(t, "ok\n", string(res.Stdout))
	}
	assert.NotEqual(t, claimed[0].ID(), claimed[1].ID())
	require.NoError(t, p.Close(ctx))
	require.NoError(t, p.Close(ctx), "Close is idempotent")
	_, err = p.Get(ctx)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}

// TestOwnerKilledHelper is not a test on its own: TestOwnerKilled runs the test binary with it to
// get a sandbox whose owner is killed by SIGKILL in the middle of a call.
func TestOwnerKilledHelper(t *testing.T) {
	if os.Getenv("SANDBOXER_OWNER_KILLED") != "1" {
		t.Skip("helper process for TestOwnerKilled")
	}
	sb, err := docker.New(ctxT(t), docker.Config{})
	require.NoError(t, err)
	fmt.Printf("SANDBOX %s %s\n", sb.ID(), sb.ContainerID())
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", "echo started; sleep 600"},
		Stdout: os.Stdout})
	t.Fatal("the call was to be cut short by SIGKILL", res, err)
}

// TestOwnerKilled kills a sandbox's owner with SIGKILL mid-call: the container (not persistent)
// is removed within 5 s, with its command.
func TestOwnerKilled(t *testing.T) {
	t.Parallel()
	needDocker(t)
	ctx := ctxT(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestOwnerKilledHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBOXER_OWNER_KILLED=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var containerID string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "SANDBOX" {
			containerID = f[2]
		}
		if sc.Text() == "started" {
			break
		}
	}
	require.NotEmpty(t, containerID, "the helper made no sandbox")
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	defer c.ContainerRemove(context.Background(), containerID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	ins, err := c.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
	require.NoError(t, err, "the container runs while its owner lives")
	var volumes []string
	diskDir := ""
	for _, m := range ins.Container.Mounts {
		switch {
		case m.Type == "volume":
			volumes = append(volumes, m.Name)
		case m.Type == "bind" && m.Destination == "/workspace":
			diskDir = filepath.Dir(m.Source)
		}
	}
	if diskcap.Check() == nil {
		require.NotEmpty(t, diskDir, "the capped workspace")
		require.NotEmpty(t, docker.DiskLeftovers(diskDir))
	} else {
		require.NotEmpty(t, volumes, "the workspace volume")
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	killed := time.Now()
	for {
		_, err = c.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			break
		}
		require.Less(t, time.Since(killed), 5*time.Second, "the container outlived its killed owner by 5 s (inspect: %v)", err)
		time.Sleep(100 * time.Millisecond)
	}
	// The janitor releases the capped workspace: no mount, loop device or file.
	if diskDir != "" {
		assert.Eventually(t, func() bool { return len(docker.DiskLeftovers(diskDir)) == 0 },
			10*time.Second, 100*time.Millisecond, "the capped workspace outlived its killed owner: %v", docker.DiskLeftovers(diskDir))
	}
	// The daemon removes an anonymous volume after its container, a moment later on a loaded
	// machine.
	for _, v := range volumes {
		assert.Eventually(t, func() bool {
			_, err := c.VolumeInspect(ctx, v, client.VolumeInspectOptions{})
			return cerrdefs.IsNotFound(err)
		}, 10*time.Second, 100*time.Millisecond, "the workspace volume %s is removed with the container", v)
	}
}
