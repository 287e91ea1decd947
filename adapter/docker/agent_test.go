package docker_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/errs"
)

// The plain transport (one daemon exec per call), used for images without the agent, passes the
// same suite; without a capped disk (as with a daemon on another host) the file calls are
// shellfs's scripts.
func TestConformanceWithoutAgent(t *testing.T) {
	needDocker(t)
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) adapter.Sandbox {
			return newSandbox(t, docker.Config{NoAgent: true, WorkspaceBytes: -1})
		},
		Outside:     outside,
		PrivateHome: true,
	})
}

// Without a workspace on this host (no capped disk, as with a daemon on another host) the file
// calls run in the container, through the agent's -fs operations: the same suite.
func TestConformanceFilesThroughTheAgent(t *testing.T) {
	needDocker(t)
	adaptertest.Run(t, adaptertest.Harness{
		New:         func(t *testing.T) adapter.Sandbox { return newSandbox(t, docker.Config{WorkspaceBytes: -1}) },
		Outside:     outside,
		PrivateHome: true,
	})
}

// agentPids lists the pids of the container's agents: the main one (docker-init's child, PID 1's)
// and the execs (whose parent is outside the container: 0).
// hostKill kills process pid of sb's container from the host, by a daemon exec as the container's
// root: no command of the sandbox can (TestAgentUntouchable).
func hostKill(t *testing.T, sb *docker.Sandbox, pid string) {
	t.Helper()
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	cr, err := c.ExecCreate(ctxT(t), sb.ContainerID(), client.ExecCreateOptions{User: "0", Cmd: []string{"kill", "-9", pid}})
	require.NoError(t, err)
	_, err = c.ExecStart(ctxT(t), cr.ID, client.ExecStartOptions{Detach: true})
	require.NoError(t, err)
	// A detached start returns before kill has run: wait for it, or the next call may come first.
	require.Eventually(t, func() bool {
		ins, err := c.ExecInspect(ctxT(t), cr.ID, client.ExecInspectOptions{})
		return err != nil || (ins.PID != 0 && !ins.Running)
	}, 30*time.Second, 10*time.Millisecond, "kill %s did not end", pid)
}

func agentPids(t *testing.T, sb adapter.Sandbox) (main, execs []string) {
	t.Helper()
	res := sh(t, sb, `ps -o pid,ppid,args | grep '[s]andboxer-agent'`)
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "/usr/local/bin/sandboxer-agent" {
			continue // docker-init, which started the main agent
		}
		if f[1] == "1" {
			main = append(main, f[0])
		} else {
			execs = append(execs, f[0])
		}
	}
	return main, execs
}

// Every byte value, the attach detach sequence (ctrl-p ctrl-q) included, crosses the agent's
// stream both ways, in files and in a command's stdin and stdout.
func TestAgentStreamsAreBinarySafe(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	ctx := ctxT(t)
	data := make([]byte, 0, 3*256+2)
	for range 3 {
		for b := range 256 {
			data = append(data, byte(b))
		}
	}
	data = append(data, 0x10, 0x11)
	require.NoError(t, sb.WriteFile(ctx, "all.bin", data))
	got, err := sb.ReadFile(ctx, "all.bin")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "file round trip")
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat"}, Stdin: bytes.NewReader(data), MaxOutputBytes: 1 << 20})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, res.Stdout), "stdin to stdout round trip")

	main, execs := agentPids(t, sb)
	assert.Len(t, main, 1, "the agent is the container's main process")
	assert.Empty(t, execs, "the creating handle needs no agent exec")
}

// A second handle on the same sandbox (another process reusing it by id) starts an agent exec of
// its own; both handles work at the same time, and when that agent dies the call fails clearly
// and the next call starts another.
func TestAttachedHandleHasItsOwnAgent(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	ctx := ctxT(t)
	other, err := docker.Attach(ctx, docker.Config{}, sb.ID())
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i, h := range []adapter.Sandbox{sb, other, sb, other} {
		wg.Go(func() {
			res, err := h.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "sleep 0.2; echo $0", string(rune('a' + i))}})
			assert.NoError(t, err)
			assert.Equal(t, string(rune('a'+i))+"\n", string(res.Stdout))
		})
	}
	wg.Wait()
	_, execs := agentPids(t, sb)
	require.Len(t, execs, 1, "one agent exec, for the attached handle")

	done := make(chan error, 1)
	go func() {
		_, err := other.ExecuteCommand(ctx, adapter.Command{Args: []string{"sleep", "60"}})
		done <- err
	}()
	require.Eventually(t, func() bool {
		return strings.Contains(string(sh(t, sb, "ps -o args").Stdout), "sleep 60")
	}, 30*time.Second, 50*time.Millisecond)
	hostKill(t, sb, execs[0])
	err = <-done
	require.ErrorIs(t, err, errs.SandboxUnavailable, "the agent running the call died")
	assert.Contains(t, err.Error(), "agent exited")
	res, err := other.ExecuteCommand(ctx, adapter.Command{Args: []string{"echo", "again"}})
	require.NoError(t, err)
	assert.Equal(t, "again\n", string(res.Stdout))
	assert.Equal(t, "alive\n", string(sh(t, sb, "echo alive").Stdout), "the creator's agent is untouched")
}

// Killing the main agent (from the host: no command can, see TestAgentUntouchable) stops the
// container, as killing the main process of any container does: the next call says the sandbox is unavailable instead of hanging.
func TestKillingTheMainAgentStopsTheSandbox(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	ctx := ctxT(t)
	main, _ := agentPids(t, sb)
	require.Len(t, main, 1)
	start := time.Now()
	hostKill(t, sb, main[0])
	_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	require.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.Less(t, time.Since(start), 30*time.Second)
	require.NoError(t, sb.Stop(context.Background()))
}

// A handle whose agent breaks the protocol (a bad exit frame, a result flood from a stand-in agent)
// fails that call and every later one with SANDBOX_UNAVAILABLE at once: no other agent is started
// and nothing falls back to daemon execs, whose scripts the same sandbox would answer.
func TestAgentThatBreaksTheProtocolIsNotReplaced(t *testing.T) {
	needDocker(t)
	adaptertest.CheckProtocolBreaker(t,
		func(t *testing.T) adapter.Sandbox { return newSandbox(t, docker.Config{}) },
		func(sb adapter.Sandbox, c *agent.Client) func() { return docker.UseAgent(sb.(*docker.Sandbox), c) })
}

// A command cannot stop, signal, trace or read the agents of its sandbox (the container's and an
// attached handle's), nor reach their hub: it could answer the host in their place (issue 34).
func TestAgentUntouchable(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, docker.Config{})
	other, err := docker.Attach(ctxT(t), docker.Config{}, sb.ID())
	require.NoError(t, err)
	adaptertest.CheckAgentUntouchable(t, sb, other)
}
