package adaptertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
)

// CheckAgentUntouchable runs agentprobe (a hostile command) in sb through relay, another handle on
// the same sandbox (so that an exec'd agent serves it, next to the container's main one), or sb
// itself when relay is nil, and checks that no agent of the sandbox can be stopped, signalled,
// traced, or read through /proc, and that the hub refuses the command (issue 34: a command that
// could would answer the host in the agent's place). seen are the attempts ("open environ",
// "list fd") that the sandbox's kernel allows and that reveal nothing the commands do not have:
// gVisor shows any process's environment (the container's, which the commands get too) and the
// numbers of its descriptors, never the descriptors themselves.
func CheckAgentUntouchable(t *testing.T, sb, relay adapter.Sandbox, seen ...string) {
	t.Helper()
	if relay == nil {
		relay = sb
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	probe, err := os.ReadFile(buildProbe(t))
	require.NoError(t, err)
	require.NoError(t, relay.WriteFile(ctx, "agentprobe", probe))
	t.Cleanup(func() {
		sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"rm", "-f", "agentprobe"}})
	})
	res, err := relay.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "chmod +x agentprobe && ./agentprobe"}})
	require.NoError(t, err)
	out := string(res.Stdout)
	t.Logf("agentprobe:\n%s%s", out, res.Stderr)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	m := regexp.MustCompile(`(?m)^agents: (\d+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "the probe ran to its end")
	n, _ := strconv.Atoi(m[1])
	agents := 1
	if relay != sb {
		agents = 2 // the main agent and the one serving relay's call
	}
	assert.GreaterOrEqual(t, n, agents, "the probe saw the sandbox's agents: it is not vacuous")
	for _, line := range strings.Split(out, "\n") {
		what, ok := strings.CutSuffix(line, ": ok")
		if !ok {
			continue
		}
		_, what, _ = strings.Cut(what, " ")
		assert.Contains(t, seen, what, "every attempt on an agent is refused: %s", line)
	}
	assert.Contains(t, out, "0 hub connect: refused", "the hub refuses commands")
	for _, what := range []string{"SIGSTOP", "SIGKILL", "ptrace attach", "open mem", "open fd/0", "open fd/1"} {
		assert.Equal(t, n, strings.Count(out, " "+what+": refused"), "%s of every agent refused", what)
	}
	// The sandbox still answers, as itself.
	res, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "exit 3"}})
	require.NoError(t, err)
	assert.Equal(t, 3, res.ExitCode)
}

// buildProbe builds agentprobe for the sandbox's Linux, statically.
func buildProbe(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentprobe")
	cmd := exec.Command("go", "build", "-o", path, "github.com/sandboxer/sandboxer/adapter/adaptertest/agentprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build agentprobe: %s", out)
	return path
}
