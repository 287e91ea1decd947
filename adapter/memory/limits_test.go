package memory_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func run(t *testing.T, sb *memory.Sandbox, script string) (adapter.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", script}})
}

func limitOf(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		s, _ := e.Details["limit"].(string)
		return s
	}
	return ""
}

func TestLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script, limit string
		cfg                 memory.Config
	}{
		{"busy loop ends at the loop limit", `while true; do :; done`, "loop_iterations", memory.Config{MaxLoopIterations: 1000}},
		{"loop without commands", `for ((;;)); do x=1; done`, "loop_iterations", memory.Config{MaxLoopIterations: 1000}},
		{"until loop", `until false; do x=1; done`, "loop_iterations", memory.Config{MaxLoopIterations: 1000}},
		{"commands", `for i in $(seq 1 100); do true; done`, "commands", memory.Config{MaxCommands: 50}},
		{"recursion", `f() { f; }; f`, "commands", memory.Config{MaxCommands: 500}},
		{"yes into a file ends at the tree limit", `yes > f`, "tree_bytes", memory.Config{MaxTreeBytes: 1 << 20}},
		{"cp over the tree limit", `head -c 600000 /dev/zero > a; cp a b`, "tree_bytes", memory.Config{MaxTreeBytes: 1 << 20}},
		{"doubling a variable", `x=a; while :; do x=$x$x; done`, "string_bytes", memory.Config{MaxStringBytes: 1 << 20}},
		{"loop inside eval", `eval 'while x=1; do y=2; done'`, "loop_iterations", memory.Config{MaxLoopIterations: 1000}},
		{"loop inside a sourced file", `echo 'until false; do y=2; done' > l.sh; . ./l.sh`, "loop_iterations", memory.Config{MaxLoopIterations: 1000}},
		{"loop inside a trap", `trap 'while :; do y=1; done' EXIT; true`, "loop_iterations", memory.Config{MaxLoopIterations: 1000}},
		{"xargs counts commands", `seq 1 100 | xargs -n 1 true`, "commands", memory.Config{MaxCommands: 20}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, tc.cfg)
			start := time.Now()
			_, err := run(t, sb, tc.script)
			require.ErrorIs(t, err, errs.LimitExceeded)
			assert.Equal(t, tc.limit, limitOf(err))
			assert.Less(t, time.Since(start), 20*time.Second)
		})
	}
}

func TestWithinLimitsRuns(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, memory.Config{MaxLoopIterations: 1000, MaxCommands: 5000})
	res, err := run(t, sb, `n=0; while [ $n -lt 500 ]; do n=$((n+1)); done; echo $n`)
	require.NoError(t, err)
	assert.Equal(t, "500\n", string(res.Stdout))
	// Limits are per call: the same sandbox runs the loop again.
	res, err = run(t, sb, `n=0; while [ $n -lt 500 ]; do n=$((n+1)); done; echo $n`)
	require.NoError(t, err)
	assert.Equal(t, "500\n", string(res.Stdout))
}

func TestDefaultTimeoutEndsEndlessCommands(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, memory.Config{Timeout: 300 * time.Millisecond})
	start := time.Now()
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"yes"}, MaxOutputBytes: 10})
	require.ErrorIs(t, err, errs.ProcessTimeout)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, "y\ny\ny\ny\ny\n", string(res.Stdout))
	_, err = sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sleep", "10"}})
	require.ErrorIs(t, err, errs.ProcessTimeout)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	assert.NoError(t, memory.Config{}.Validate())
	for _, c := range []memory.Config{{MaxCommands: -1}, {MaxTreeBytes: -1}, {Timeout: -1}, {Env: []string{"NOEQUALS"}}} {
		assert.ErrorIs(t, c.Validate(), errs.InvalidInput)
		_, err := memory.New(c)
		assert.ErrorIs(t, err, errs.InvalidInput)
	}
	sb := newSandbox(t, memory.Config{})
	cfg := sb.Config()
	assert.Equal(t, memory.DefaultMaxCommands, cfg.MaxCommands)
	assert.Equal(t, memory.DefaultTimeout, cfg.Timeout)
}

// TestHostInvisible: nothing of the host's file system is visible, readable or writable.
func TestHostInvisible(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, memory.Config{})
	wd, err := os.Getwd()
	require.NoError(t, err)
	hostFile := wd + "/memory_test.go" // exists on the host, next to this test
	for _, script := range []string{
		"cat /etc/passwd", "cat " + hostFile, "ls " + wd, "cd " + wd, "test -e " + hostFile,
		"source " + hostFile, "cat < /etc/passwd", "command -v /usr/bin/python3", "type -p python3",
		"command -v " + hostFile, "/usr/bin/python3 -c 1",
	} {
		res, err := run(t, sb, script)
		require.NoError(t, err, script)
		assert.NotEqual(t, 0, res.ExitCode, "%s: stdout %q", script, res.Stdout)
		assert.NotContains(t, string(res.Stdout), "root:", script)
		assert.NotContains(t, string(res.Stdout), "package memory_test", script)
	}
	// Writes go to the tree, never to the host.
	hostDir := t.TempDir()
	target := hostDir + "/written-by-sandbox"
	res, err := run(t, sb, "mkdir -p "+hostDir+" && echo x > "+target+" && cat "+target)
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(res.Stdout))
	_, statErr := os.Stat(target)
	assert.True(t, os.IsNotExist(statErr), "the sandbox wrote to the host")
	// The interpreter's FIFO name prefix is not a way out either.
	res, err = run(t, sb, "echo x > "+os.TempDir()+"/sh-interp-0; cat "+os.TempDir()+"/sh-interp-0")
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(res.Stdout))
	_, statErr = os.Stat(os.TempDir() + "/sh-interp-0")
	assert.True(t, os.IsNotExist(statErr), "the sandbox wrote to the host's temp dir")
	// Process substitutions are files of the tree, removed when the call ends, never host FIFOs.
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "sh-interp-*"))
	res, err = run(t, sb, "cat <(echo from-psub) > >(cat); ls -A /dev/.psub | wc -l")
	require.NoError(t, err)
	assert.Equal(t, "from-psub\n2\n", string(res.Stdout))
	res, err = run(t, sb, "ls -A /dev/.psub | wc -l")
	require.NoError(t, err)
	assert.Equal(t, "0\n", string(res.Stdout), "the call's process substitution files are gone")
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "sh-interp-*"))
	assert.Equal(t, len(before), len(after), "no FIFO on the host")
	// The environment is the sandbox's own.
	res, err = run(t, sb, "pwd; echo $HOME; env | sort | cut -d= -f1 | tr '\\n' ' '")
	require.NoError(t, err)
	assert.Equal(t, "/workspace\n/workspace\nHOME LANG LOGNAME PATH SHELL TMPDIR TZ USER ", string(res.Stdout))
}

func TestForkIsIndependentCopyOnWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newSandbox(t, memory.Config{})
	require.NoError(t, src.WriteFile(ctx, "f", []byte("base")))
	_, err := run(t, src, "echo more >> f")
	require.NoError(t, err)
	forked, err := src.Fork(ctx)
	require.NoError(t, err)
	fk := forked.(*memory.Sandbox)
	t.Cleanup(func() { _ = fk.Stop(ctx) })
	assert.NotEqual(t, src.ID(), fk.ID())
	_, err = run(t, fk, "echo fork >> f")
	require.NoError(t, err)
	_, err = run(t, src, "echo src >> f")
	require.NoError(t, err)
	got, _ := src.ReadFile(ctx, "f")
	assert.Equal(t, "basemore\nsrc\n", string(got))
	got, _ = fk.ReadFile(ctx, "f")
	assert.Equal(t, "basemore\nfork\n", string(got))
	require.NoError(t, src.Stop(ctx))
	_, err = src.Fork(ctx)
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
}

func TestListerStableInodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t, memory.Config{})
	require.NoError(t, sb.WriteFile(ctx, "a", []byte("1")))
	require.NoError(t, sb.WriteFile(ctx, "d/b", []byte("22")))
	first, err := sb.ListFiles(ctx, "")
	require.NoError(t, err)
	second, err := sb.ListFiles(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, first, second, "an unchanged tree lists identically")
	require.Len(t, first, 2)
	assert.NotZero(t, first[0].Inode)
	assert.NotEqual(t, first[0].Inode, first[1].Inode)
	_, err = run(t, sb, "echo x >> a")
	require.NoError(t, err)
	third, err := sb.ListFiles(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, first[0].Inode, third[0].Inode, "appending keeps the inode")
	assert.True(t, third[0].ModTime.After(first[0].ModTime), "appending moves the mtime")
	assert.Equal(t, first[1], third[1])
}

func TestWorkspaceFS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t, memory.Config{})
	require.NoError(t, sb.WriteFile(ctx, "a.txt", []byte("a")))
	require.NoError(t, sb.WriteFile(ctx, "d/e/b.bin", []byte{0, 1}))
	_, err := run(t, sb, "ln -s a.txt link && ln -s ../d/e d/up")
	require.NoError(t, err)
	require.NoError(t, fstest.TestFS(sb, "a.txt", "d/e/b.bin", "link"))
	// A link out of the workspace reads as missing, like a dangling one.
	_, err = run(t, sb, "ln -s /etc/hosts outlink && echo x > /tmp/t && ln -s /tmp/t outfile")
	require.NoError(t, err)
	_, err = sb.Open("outfile")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fs.ReadFile(sb.FS(), "outfile")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestOutputFloodMemory(t *testing.T) {
	sb := newSandbox(t, memory.Config{})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", "yes | head -c 50000000 | wc -c"}})
	require.NoError(t, err)
	assert.Equal(t, "50000000\n", strings.TrimLeft(string(res.Stdout), " "))
	runtime.ReadMemStats(&ms)
	assert.Less(t, ms.TotalAlloc-before, uint64(16<<20), "streaming through a pipe must not buffer the stream")
}

func TestDirectArgv(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSandbox(t, memory.Config{})
	require.NoError(t, sb.WriteFile(ctx, "bin/tool", []byte("echo tool $1\n")))
	_, err := run(t, sb, "chmod +x bin/tool; printf 'echo script $#\\n' > s.sh; chmod 755 s.sh; printf 'echo no' > noexec.sh")
	require.NoError(t, err)
	for _, c := range []struct {
		args  []string
		env   []string
		stdin string
		out   string
	}{
		{args: []string{"./s.sh", "a", "b"}, out: "script 2\n"},
		{args: []string{"/usr/bin/wc", "-l"}, stdin: "1\n2\n", out: "2\n"},
		{args: []string{"tool", "x"}, env: []string{"PATH=/workspace/bin:/usr/bin"}, out: "tool x\n"},
		{args: []string{"printf", "%s-%s", "a", "b"}, out: "a-b"},
		{args: []string{"bash", "-euo", "pipefail", "-c", "echo $1", "name", "arg"}, out: "arg\n"},
	} {
		cmd := adapter.Command{Args: c.args, Env: c.env}
		if c.stdin != "" {
			cmd.Stdin = strings.NewReader(c.stdin)
		}
		res, err := sb.ExecuteCommand(ctx, cmd)
		require.NoError(t, err, c.args)
		assert.Equal(t, c.out, string(res.Stdout), c.args)
		assert.Equal(t, 0, res.ExitCode, "%v: %s", c.args, res.Stderr)
	}
	for _, args := range [][]string{{"nope"}, {"./missing.sh"}, {"./noexec.sh"}, {"/usr/bin/python3"}, {"tool"}} {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: args})
		assert.ErrorIs(t, err, errs.ProcessFailed, args)
	}
	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}, Env: []string{"=bad"}})
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}, MaxOutputBytes: -1})
	assert.ErrorIs(t, err, errs.InvalidInput)
}

// blockingReader never returns until released.
type blockingReader struct{ release chan struct{} }

func (b blockingReader) Read(p []byte) (int, error) {
	<-b.release
	return 0, io.EOF
}

func TestStdinThatNeverEndsDoesNotStallTheCall(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, memory.Config{})
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"echo", "hi"}, Stdin: blockingReader{release}})
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(res.Stdout))
	assert.Less(t, time.Since(start), 3*time.Second)
}
