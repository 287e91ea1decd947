//go:build linux

package main_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestProgressOnATerminal (issue 39): a long operation a person waits on (a snapshot taken and
// restored, here) shows its progress on stderr when stderr is a terminal, and nothing when it is
// not (a pipe: CI logs, MCP's stdio, a script).
func TestProgressOnATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("", nil, "sandbox", "create")
	require.Equal(t, 0, r.code, r.stderr)
	id := idRe.FindStringSubmatch(r.stdout)[1]
	t.Cleanup(func() { e.run("", nil, "sandbox", "rm", id) })
	r = e.run("", nil, "exec", "--sandbox", id, "--", "sh", "-c", "echo hi > f")
	require.Equal(t, 0, r.code, r.stderr)

	shown := e.onTerminal("snapshot", "take", id, "on-tty")
	assert.Contains(t, shown, "taking snapshot on-tty")
	assert.Contains(t, shown, "done in")
	shown = e.onTerminal("snapshot", "restore", "on-tty", id, "--replace")
	assert.Contains(t, shown, "restoring snapshot on-tty")

	r = e.run("", nil, "snapshot", "take", id, "on-pipe")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "taking snapshot", "no progress in a pipe")
	assert.Empty(t, r.stderr)
}

// onTerminal runs the front with stderr on a pseudo-terminal and returns what it wrote there.
func (e *env) onTerminal(args ...string) string {
	t := e.t
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	read := make(chan string)
	go func() { b, _ := io.ReadAll(m); read <- string(b) }() // EIO once the last slave is closed
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.Stderr = e.work, e.vars, s
	out, err := cmd.Output()
	s.Close()
	require.NoError(t, err, "%s", out)
	return <-read
}
