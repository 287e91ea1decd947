// Package adaptertest is the conformance suite every adapter.Sandbox runs: file round trips, the
// path-escape table, exec semantics (exit codes, streams, cwd, environment), timeouts that kill the
// whole process tree, output caps, concurrency and Stop. An adapter's test file is a short harness
// plus a call to Run.
//
// The suite branches on adapter.Capabilities and skips what an adapter declares it lacks, visibly
// (t.Skip with the reason), never silently. Commands it runs need a POSIX sh with echo, printf,
// cat, env, pwd, sleep, yes, head, ln, mkdir and, where Capabilities.Signals is set, kill.
package adaptertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Harness tells the suite how to make sandboxes of one adapter.
type Harness struct {
	// New returns a fresh, started sandbox with an empty workspace. The suite stops it when the
	// test ends (Stop is idempotent, so New may also register its own cleanup).
	New func(t *testing.T) adapter.Sandbox

	// Outside prepares a directory outside sb's workspace that holds the file "secret" with the
	// content SecretContent, and returns the directory's absolute path as sb's commands see it, and
	// a function that reads a file of that directory from the outside (ok is false when the file
	// does not exist). The suite points symlinks there and checks nothing leaked in or out.
	Outside func(t *testing.T, sb adapter.Sandbox) (dir string, read func(name string) (data []byte, ok bool))

	// Grace is how long past a timeout a call may take to return; 0 means 3 seconds.
	Grace time.Duration

	// PrivateHome says the commands' HOME is a directory of the sandbox's own outside the
	// workspace (every adapter but memory, whose HOME is the workspace): Exec/PrivateHome checks
	// it, and skips without it.
	PrivateHome bool
}

// SecretContent is the content of the file "secret" in the Outside directory.
const SecretContent = "top secret\n"

// Run runs the whole conformance suite against the adapter h describes.
func Run(t *testing.T, h Harness) {
	require.NotNil(t, h.New, "Harness.New is required")
	require.NotNil(t, h.Outside, "Harness.Outside is required")
	if h.Grace == 0 {
		h.Grace = 3 * time.Second
	}
	s := &suite{h: h}

	// Memory-sensitive tests run first, alone: parallel subtests wait until these return.
	t.Run("Exec/OutputFloodIsCappedWithBoundedMemory", s.testOutputFlood)

	t.Run("Capabilities", s.testCapabilities)
	t.Run("Files/RoundTrip", s.testRoundTrip)
	t.Run("Files/Overwrite", s.testOverwrite)
	t.Run("Files/Errors", s.testFileErrors)
	t.Run("Files/PathEscape", s.testPathEscape)
	t.Run("Files/SymlinkInsideIsAllowed", s.testSymlinkInside)
	t.Run("Files/Optional", s.testOptionalFileInterfaces)
	t.Run("Files/ListWhileFilesChurn", s.testListWhileFilesChurn)
	t.Run("Files/KindsAndExecutableBit", s.testKindsAndModes)
	t.Run("Files/ModeWriter", s.testModeWriter)
	t.Run("Files/Streamed", s.testStreamed)
	t.Run("Exec/ExitCodes", s.testExitCodes)
	t.Run("Exec/SignalExitCode", s.testSignalExit)
	t.Run("Exec/StreamsApart", s.testStreams)
	t.Run("Exec/Dir", s.testDir)
	t.Run("Exec/Environment", s.testEnvironment)
	t.Run("Exec/PrivateHome", s.testPrivateHome)
	t.Run("Exec/Stdin", s.testStdin)
	t.Run("Exec/NotFound", s.testNotFound)
	t.Run("Exec/InvalidInput", s.testInvalidExec)
	t.Run("Exec/LiveCopy", s.testLiveCopy)
	t.Run("Exec/TimeoutKillsTree", s.testTimeoutKillsTree)
	t.Run("Exec/CancelKillsTree", s.testCancelKillsTree)
	t.Run("Exec/BackgroundHoldingStdout", s.testBackgroundHoldingStdout)
	t.Run("Exec/TruncationCountsDropped", s.testTruncationCounts)
	t.Run("Exec/UTF8NeverCut", s.testUTF8)
	t.Run("Exec/Concurrent", s.testConcurrent)
	t.Run("Fork", s.testFork)
	t.Run("Ports", s.testPorts)
	t.Run("Processes", s.testProcesses)
	t.Run("Stop", s.testStop)
	t.Run("StopEndsRunningCommands", s.testStopWhileRunning)
}

type suite struct{ h Harness }

// sandbox makes a sandbox that is stopped when the test ends.
func (s *suite) sandbox(t *testing.T) adapter.Sandbox {
	t.Helper()
	sb := s.h.New(t)
	require.NotNil(t, sb)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, sb.Stop(ctx))
	})
	return sb
}

func caps(t *testing.T, sb adapter.Sandbox) adapter.Capabilities {
	t.Helper()
	c, ok := sb.(adapter.Capable)
	require.True(t, ok, "%T must implement adapter.Capable", sb)
	return c.Capabilities()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// sh runs a shell script and requires that it ran.
func sh(t *testing.T, sb adapter.Sandbox, script string) adapter.Result {
	t.Helper()
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", script}})
	require.NoError(t, err, "sh -c %q", script)
	return res
}

// shOK runs a shell script and requires exit 0.
func shOK(t *testing.T, sb adapter.Sandbox, script string) adapter.Result {
	t.Helper()
	res := sh(t, sb, script)
	require.Equal(t, 0, res.ExitCode, "sh -c %q: stdout %q stderr %q", script, res.Stdout, res.Stderr)
	return res
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

func (s *suite) testCapabilities(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	c := caps(t, sb)
	assert.NotEmpty(t, c.Adapter)
	assert.NotEmpty(t, c.FSIsolation)
	assert.NotEmpty(t, c.Network)
	assert.NotEmpty(t, c.Exec)
	assert.NotEmpty(t, c.Workspace)
	if id, ok := sb.(adapter.Identified); ok {
		assert.NotEmpty(t, id.ID())
	}
}

func (s *suite) testRoundTrip(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	cases := map[string][]byte{
		"empty.txt":          {},
		"text.txt":           []byte("hello\nworld\n"),
		"binary.bin":         append([]byte{0, 1, 2, 0, 255, 254, 0}, randomBytes(t, 4096)...),
		"big.bin":            randomBytes(t, 5<<20),
		"new/nested/dirs/f":  []byte("deep"),
		"spaces in name.txt": []byte("spaces"),
		"unicode-é€.txt":     []byte("ü"),
	}
	for name, data := range cases {
		require.NoError(t, sb.WriteFile(ctx, name, data), name)
	}
	for name, data := range cases {
		got, err := sb.ReadFile(ctx, name)
		require.NoError(t, err, name)
		require.True(t, bytes.Equal(data, got), "%s: %d bytes written, %d read back differ", name, len(data), len(got))
	}
	// Absolute paths inside the workspace name the same files.
	ws := caps(t, sb).Workspace
	got, err := sb.ReadFile(ctx, strings.TrimSuffix(ws, "/")+"/new/nested/dirs/f")
	require.NoError(t, err)
	assert.Equal(t, "deep", string(got))
	// Commands see what the file calls wrote, and the reverse.
	res := shOK(t, sb, "cat new/nested/dirs/f; printf 'from sh' > made-by-sh.txt")
	assert.Equal(t, "deep", string(res.Stdout))
	got, err = sb.ReadFile(ctx, "made-by-sh.txt")
	require.NoError(t, err)
	assert.Equal(t, "from sh", string(got))
}

func (s *suite) testOverwrite(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "f.txt", []byte("a much longer first version\n")))
	require.NoError(t, sb.WriteFile(ctx, "f.txt", []byte("short\n")))
	got, err := sb.ReadFile(ctx, "f.txt")
	require.NoError(t, err)
	assert.Equal(t, "short\n", string(got))
	// No temporary files are left next to the target.
	res := shOK(t, sb, "ls -A")
	assert.Equal(t, "f.txt\n", string(res.Stdout))
}

func (s *suite) testFileErrors(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	_, err := sb.ReadFile(ctx, "missing.txt")
	assert.ErrorIs(t, err, errs.NotFound)
	_, err = sb.ReadFile(ctx, "no/such/dir/f")
	assert.ErrorIs(t, err, errs.NotFound)
	_, err = sb.ReadFile(ctx, "")
	assert.ErrorIs(t, err, errs.PathInvalid)
	assert.ErrorIs(t, sb.WriteFile(ctx, "", []byte("x")), errs.PathInvalid)

	shOK(t, sb, "mkdir -p adir")
	_, err = sb.ReadFile(ctx, "adir")
	assert.Error(t, err, "reading a directory is an error")
	assert.Error(t, sb.WriteFile(ctx, "adir", []byte("x")), "a directory is not replaced by a file")
	res := shOK(t, sb, "test -d adir && echo dir")
	assert.Equal(t, "dir\n", string(res.Stdout))

	require.NoError(t, sb.WriteFile(ctx, "file", []byte("x")))
	assert.Error(t, sb.WriteFile(ctx, "file/child", []byte("x")), "a file cannot be a parent directory")
}

// testPathEscape is the escape table: each path must be refused with TOOL_PATH_ESCAPE for read
// and for write, and the outside file must be unchanged and nothing created outside.
func (s *suite) testPathEscape(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	c := caps(t, sb)
	ctx := ctxT(t)
	outside, readOutside := s.h.Outside(t, sb)
	secret := outside + "/secret"

	paths := []string{"../x", "a/../../x", "..", "../../../../etc/passwd", secret, outside + "/new-file"}
	if c.Workspace != "/" {
		paths = append(paths, "/etc/passwd")
	}
	if c.Symlinks {
		shOK(t, sb, strings.Join([]string{
			"ln -s " + secret + " link-to-secret",
			"ln -s " + outside + " linkdir",
			"ln -s " + outside + "/does-not-exist dangling",
			"ln -s link-to-secret chain1", "ln -s chain1 chain2",
			"ln -s ../ dotdot-link",
			"mkdir -p sub && ln -s ../../ sub/up2",
		}, " && "))
		paths = append(paths,
			"link-to-secret",        // symlink to an outside file
			"linkdir/secret",        // symlinked directory to outside, plus a child
			"linkdir/new-file",      // a new child under the outside directory
			"dangling",              // dangling symlink pointing outside
			"chain2",                // symlink chain ending outside
			"dotdot-link/x",         // relative link to the parent
			"sub/up2/secret",        // relative link two levels up
			"linkdir/../linkdir/x",  // lexically inside, really outside
			"./linkdir/./secret",    // dots do not help
			"sub/../linkdir/secret", // nor does going through another directory
		)
	}
	for _, p := range paths {
		_, err := sb.ReadFile(ctx, p)
		assert.ErrorIs(t, err, errs.PathEscape, "read %q", p)
		err = sb.WriteFile(ctx, p, []byte("pwned"))
		assert.ErrorIs(t, err, errs.PathEscape, "write %q", p)
		if st, ok := sb.(adapter.Statter); ok {
			_, err := st.StatFile(ctx, p)
			assert.ErrorIs(t, err, errs.PathEscape, "stat %q", p)
		}
		if br, ok := sb.(adapter.BulkReader); ok {
			err := br.ReadFiles(ctx, []string{p}, func(string, []byte) error { return nil })
			assert.ErrorIs(t, err, errs.PathEscape, "bulk read %q", p)
		}
		if bw, ok := sb.(adapter.BulkWriter); ok {
			err := bw.WriteFiles(ctx, []adapter.File{{Path: p, Data: []byte("pwned")}})
			assert.ErrorIs(t, err, errs.PathEscape, "bulk write %q", p)
		}
		if rm, ok := sb.(adapter.Remover); ok && !strings.HasPrefix(p, "link") && p != "dangling" && p != "chain2" {
			// Removing the link itself is allowed (it is inside); removing through it is not.
			err := rm.RemoveFile(ctx, p)
			assert.ErrorIs(t, err, errs.PathEscape, "remove %q", p)
		}
	}
	got, ok := readOutside("secret")
	require.True(t, ok, "the outside secret must still exist")
	assert.Equal(t, SecretContent, string(got), "the outside secret must be unchanged")
	for _, name := range []string{"new-file", "does-not-exist", "x"} {
		_, ok := readOutside(name)
		assert.False(t, ok, "nothing may be created outside: %s", name)
	}
	if c.Symlinks {
		// The links themselves are untouched.
		res := shOK(t, sb, "test -L link-to-secret && test -L dangling && echo links")
		assert.Equal(t, "links\n", string(res.Stdout))
	} else {
		t.Log("symlink escape rows skipped: adapter declares Symlinks false")
	}
	// Exec's Dir is jailed the same way.
	for _, dir := range []string{"..", "../..", "a/../../x", outside} {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"pwd"}, Dir: dir})
		assert.ErrorIs(t, err, errs.PathEscape, "dir %q", dir)
	}
	if c.Symlinks {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"pwd"}, Dir: "linkdir"})
		assert.ErrorIs(t, err, errs.PathEscape, "dir through a symlink")
	}
}

func (s *suite) testSymlinkInside(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	if !caps(t, sb).Symlinks {
		t.Skip("adapter declares Symlinks false")
	}
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "real/target.txt", []byte("inside")))
	shOK(t, sb, "ln -s real/target.txt link.txt && ln -s real dirlink && ln -s link.txt chain && ln -s real/new.txt dangling-inside")
	for _, p := range []string{"link.txt", "dirlink/target.txt", "chain", "real/../link.txt"} {
		got, err := sb.ReadFile(ctx, p)
		require.NoError(t, err, p)
		assert.Equal(t, "inside", string(got), p)
		if br, ok := sb.(adapter.BulkReader); ok {
			err := br.ReadFiles(ctx, []string{p}, func(_ string, data []byte) error {
				assert.Equal(t, "inside", string(data), "bulk read %s", p)
				return nil
			})
			require.NoError(t, err, p)
		}
	}
	if bw, ok := sb.(adapter.BulkWriter); ok {
		require.NoError(t, bw.WriteFiles(ctx, []adapter.File{{Path: "chain", Data: []byte("inside")}}))
		res := shOK(t, sb, "test -L chain && cat real/target.txt")
		assert.Equal(t, "inside", string(res.Stdout), "a bulk write through an inside link writes the target")
	}
	// Writing through an inside link writes the target and keeps the link.
	require.NoError(t, sb.WriteFile(ctx, "link.txt", []byte("updated")))
	got, err := sb.ReadFile(ctx, "real/target.txt")
	require.NoError(t, err)
	assert.Equal(t, "updated", string(got))
	require.NoError(t, sb.WriteFile(ctx, "dirlink/via-dir.txt", []byte("v")))
	got, err = sb.ReadFile(ctx, "real/via-dir.txt")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
	// A dangling link that stays inside may be written through: it creates the target.
	require.NoError(t, sb.WriteFile(ctx, "dangling-inside", []byte("created")))
	got, err = sb.ReadFile(ctx, "real/new.txt")
	require.NoError(t, err)
	assert.Equal(t, "created", string(got))
	res := shOK(t, sb, "test -L link.txt && test -L dangling-inside && echo still-links")
	assert.Equal(t, "still-links\n", string(res.Stdout))
	res, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "target.txt"}, Dir: "dirlink"})
	require.NoError(t, err)
	assert.Equal(t, "updated", string(res.Stdout))
}

// testListWhileFilesChurn lists the workspace while a command creates and removes files and
// directories in it as fast as it can (what a build or a concurrent write does): an entry that
// disappears during the walk is left out, never an error, and what stays put is always listed (by
// ListFiles, and by ReadTree where the adapter has it).
func (s *suite) testListWhileFilesChurn(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	l, ok := sb.(adapter.Lister)
	if !ok {
		t.Skip("adapter.Lister not implemented")
	}
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "keep/k.txt", []byte("k")))
	churn := `i=0; while [ $i -lt 150 ]; do mkdir -p c/d$i/e; echo x >c/d$i/e/f; echo y >c/g$i; echo z >c/.sandboxer-tmp-$i; rm -rf c/d$i c/g$i c/.sandboxer-tmp-$i; i=$((i+1)); done`
	done := make(chan error, 1)
	go func() {
		res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", churn}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("churn exited %d: %s", res.ExitCode, res.Stderr)
		}
		done <- err
	}()
	lists := 0
	for finished := false; !finished; lists++ {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
		default:
		}
		files, err := l.ListFiles(ctx, "")
		require.NoError(t, err, "listing %d while files churn", lists)
		var kept bool
		for _, f := range files {
			kept = kept || f.Path == "keep/k.txt"
		}
		require.True(t, kept, "listing %d lost a file nobody touched", lists)
		if tr, ok := sb.(adapter.TreeReader); ok {
			var seen []string
			require.NoError(t, tr.ReadTree(ctx, "", 2, nil, func(f adapter.FileInfo, data []byte) error {
				if f.Path == "keep/k.txt" {
					seen = append(seen, fmt.Sprintf("%q (%d bytes, mode %v)", data, f.Size, f.Mode))
				}
				return nil
			}), "reading the tree %d while files churn", lists)
			require.Equal(t, []string{`"k" (1 bytes, mode -rw-r--r--)`}, seen, "reading the tree %d: the file nobody touched", lists)
		}
	}
	t.Logf("%d listings during the churn", lists)
}

func (s *suite) testOptionalFileInterfaces(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "a.txt", []byte("aaa")))
	require.NoError(t, sb.WriteFile(ctx, "d/b.txt", []byte("bb")))
	require.NoError(t, sb.WriteFile(ctx, "d/e/c.bin", []byte{0}))
	checked := 0
	if l, ok := sb.(adapter.Lister); ok {
		checked++
		files, err := l.ListFiles(ctx, "")
		require.NoError(t, err)
		sizes := map[string]int64{}
		for _, f := range files {
			sizes[f.Path] = f.Size
			assert.True(t, f.Mode.IsRegular(), f.Path)
			assert.False(t, f.ModTime.IsZero(), f.Path)
		}
		assert.Equal(t, map[string]int64{"a.txt": 3, "d/b.txt": 2, "d/e/c.bin": 1}, sizes)
		sub, err := l.ListFiles(ctx, "d/e")
		require.NoError(t, err)
		require.Len(t, sub, 1)
		assert.Equal(t, "d/e/c.bin", sub[0].Path)
		_, err = l.ListFiles(ctx, "../")
		assert.ErrorIs(t, err, errs.PathEscape)
	} else {
		t.Log("adapter.Lister not implemented")
	}
	if st, ok := sb.(adapter.Statter); ok {
		checked++
		fi, err := st.StatFile(ctx, "d/b.txt")
		require.NoError(t, err)
		assert.Equal(t, "d/b.txt", fi.Path)
		assert.EqualValues(t, 2, fi.Size)
		assert.True(t, fi.Mode.IsRegular())
		fi, err = st.StatFile(ctx, "d")
		require.NoError(t, err)
		assert.True(t, fi.Mode.IsDir())
		_, err = st.StatFile(ctx, "nope")
		assert.ErrorIs(t, err, errs.NotFound)
	} else {
		t.Log("adapter.Statter not implemented")
	}
	if rm, ok := sb.(adapter.Remover); ok {
		checked++
		require.NoError(t, rm.RemoveFile(ctx, "a.txt"))
		_, err := sb.ReadFile(ctx, "a.txt")
		assert.ErrorIs(t, err, errs.NotFound)
		assert.ErrorIs(t, rm.RemoveFile(ctx, "a.txt"), errs.NotFound)
	} else {
		t.Log("adapter.Remover not implemented")
	}
	if bw, ok := sb.(adapter.BulkWriter); ok {
		checked++
		require.NoError(t, bw.WriteFiles(ctx, []adapter.File{{Path: "bulk/1", Data: []byte("one")}, {Path: "bulk/2", Data: []byte{0, 2}}}))
		assert.ErrorIs(t, bw.WriteFiles(ctx, []adapter.File{{Path: "../escape", Data: []byte("x")}}), errs.PathEscape)
	} else {
		require.NoError(t, sb.WriteFile(ctx, "bulk/1", []byte("one")))
		require.NoError(t, sb.WriteFile(ctx, "bulk/2", []byte{0, 2}))
	}
	if br, ok := sb.(adapter.BulkReader); ok {
		checked++
		got := map[string]string{}
		err := br.ReadFiles(ctx, []string{"bulk/1", "bulk/2", "d/b.txt"}, func(p string, data []byte) error {
			got[p] = string(data)
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"bulk/1": "one", "bulk/2": "\x00\x02", "d/b.txt": "bb"}, got)
		err = br.ReadFiles(ctx, []string{"bulk/1", "missing"}, func(string, []byte) error { return nil })
		assert.ErrorIs(t, err, errs.NotFound)
		stop := errors.New("stop")
		err = br.ReadFiles(ctx, []string{"bulk/1", "bulk/2"}, func(string, []byte) error { return stop })
		assert.ErrorIs(t, err, stop)
	}
	if tr, ok := sb.(adapter.TreeReader); ok {
		checked++
		var mu sync.Mutex
		got := map[string]string{}
		err := tr.ReadTree(ctx, "", 2, func(p string) bool { return p != "d/b.txt" }, func(fi adapter.FileInfo, data []byte) error {
			mu.Lock()
			defer mu.Unlock()
			assert.EqualValues(t, len(data), fi.Size, fi.Path)
			got[fi.Path] = string(data)
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"d/e/c.bin": "\x00", "bulk/1": "one", "bulk/2": "\x00\x02"}, got, "want() filters; every other regular file is read")
		err = tr.ReadTree(ctx, "../", 1, nil, func(adapter.FileInfo, []byte) error { return nil })
		assert.ErrorIs(t, err, errs.PathEscape)
		stop := errors.New("stop")
		err = tr.ReadTree(ctx, "", 1, nil, func(adapter.FileInfo, []byte) error { return stop })
		assert.ErrorIs(t, err, stop)
	}
	if checked == 0 {
		t.Skip("adapter implements none of the optional file interfaces")
	}
}

func (s *suite) testExitCodes(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	for _, code := range []int{0, 1, 3, 42, 255} {
		res := sh(t, sb, "exit "+strconv.Itoa(code))
		assert.Equal(t, code, res.ExitCode, "exit %d", code)
	}
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"false"}})
	require.NoError(t, err, "a non-zero exit is data, not an error")
	assert.Equal(t, 1, res.ExitCode)
}

func (s *suite) testSignalExit(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	if !caps(t, sb).Signals {
		t.Skip("adapter declares Signals false: no process can kill itself")
	}
	res := sh(t, sb, "echo before; kill -9 $$; echo after")
	assert.Equal(t, 137, res.ExitCode, "SIGKILL is 128+9")
	assert.Equal(t, "before\n", string(res.Stdout))
	res = sh(t, sb, "kill -15 $$")
	assert.Equal(t, 143, res.ExitCode, "SIGTERM is 128+15")
}

func (s *suite) testStreams(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	res := shOK(t, sb, "echo out1; echo err1 >&2; echo out2; echo err2 >&2")
	assert.Equal(t, "out1\nout2\n", string(res.Stdout))
	assert.Equal(t, "err1\nerr2\n", string(res.Stderr))
	assert.False(t, res.Truncated())
	assert.Positive(t, res.Duration)
}

func (s *suite) testDir(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "sub/dir/marker", []byte("m")))
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "pwd; cat marker; echo made > here.txt"}, Dir: "sub/dir"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	lines := strings.Split(string(res.Stdout), "\n")
	assert.True(t, strings.HasSuffix(lines[0], "/sub/dir"), "pwd %q", lines[0])
	assert.Equal(t, "m", lines[1])
	got, err := sb.ReadFile(ctx, "sub/dir/here.txt")
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(got))
	// Absolute inside the workspace works too; the default is the workspace root.
	ws := strings.TrimSuffix(caps(t, sb).Workspace, "/")
	res, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "marker"}, Dir: ws + "/sub/dir"})
	require.NoError(t, err)
	assert.Equal(t, "m", string(res.Stdout))
	res = shOK(t, sb, "cat sub/dir/marker")
	assert.Equal(t, "m", string(res.Stdout))
	// A missing directory or a file is not a working directory.
	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"pwd"}, Dir: "nope"})
	assert.ErrorIs(t, err, errs.NotFound)
	_, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"pwd"}, Dir: "sub/dir/marker"})
	assert.Error(t, err)
}

func (s *suite) testEnvironment(t *testing.T) {
	// Not parallel: it sets a variable in this process's environment.
	const name = "SANDBOXER_CONFORMANCE_SECRET"
	t.Setenv(name, "leaked-value")
	sb := s.sandbox(t)
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"env"}, Env: []string{"EXTRA=given"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	env := string(res.Stdout)
	assert.NotContains(t, env, name)
	assert.NotContains(t, env, "leaked-value")
	assert.Contains(t, env, "EXTRA=given\n")
	assert.Contains(t, env, "PATH=")
	assert.Contains(t, env, "HOME=")
	for _, secret := range []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "ANTHROPIC_API_KEY", "DOCKER_HOST"} {
		if os.Getenv(secret) != "" {
			assert.NotContains(t, env, secret+"=")
		}
	}
}

func (s *suite) testStdin(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat"}, Stdin: strings.NewReader("fed\x00in")})
	require.NoError(t, err)
	assert.Equal(t, "fed\x00in", string(res.Stdout))
	// Without stdin a reader sees end of file at once instead of hanging.
	res, err = sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat"}, Timeout: 20 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Empty(t, res.Stdout)
}

func (s *suite) testNotFound(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	_, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sandboxer-no-such-program"}})
	if err != nil {
		assert.ErrorIs(t, err, errs.ProcessFailed)
		return
	}
	t.Fatal("running a missing program must fail with PROCESS_FAILED")
}

func (s *suite) testInvalidExec(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	_, err := sb.ExecuteCommand(ctxT(t), adapter.Command{})
	assert.ErrorIs(t, err, errs.InvalidInput)
	_, err = sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{""}})
	assert.Error(t, err)
}

func (s *suite) testLiveCopy(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	var out, errOut bytes.Buffer
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{
		Args:   []string{"sh", "-c", "echo live; echo dead >&2"},
		Stdout: &out, Stderr: &errOut,
	})
	require.NoError(t, err)
	assert.Equal(t, "live\n", out.String())
	assert.Equal(t, "dead\n", errOut.String())
	assert.Equal(t, "live\n", string(res.Stdout))
}

// alive reports whether the marker a background job writes after a delay appeared.
func markerScript(marker string, delay int) string {
	return fmt.Sprintf("(sleep %d; echo alive > %s) &", delay, marker)
}

func (s *suite) testTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx := ctxT(t)
	// 2s: time enough for the first echo on a loaded machine, where starting a command (an
	// init re-executing a large binary, a container exec) can take several hundred ms; the
	// background job writes its marker only after the timeout.
	const timeout = 2 * time.Second
	start := time.Now()
	res, err := sb.ExecuteCommand(ctx, adapter.Command{
		Args:    []string{"sh", "-c", "echo partial; " + markerScript("timeout-marker", 3) + " sleep 60 & sleep 60; echo never"},
		Timeout: timeout,
	})
	elapsed := time.Since(start)
	require.ErrorIs(t, err, errs.ProcessTimeout)
	assert.Less(t, elapsed, timeout+s.h.Grace, "the call must return soon after the timeout")
	assert.Equal(t, "partial\n", string(res.Stdout), "partial output comes back with the timeout")
	time.Sleep(time.Until(start.Add(3500 * time.Millisecond)))
	_, err = sb.ReadFile(ctx, "timeout-marker")
	assert.ErrorIs(t, err, errs.NotFound, "a background job outlived the timeout")

	// The context's deadline is a timeout too.
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start = time.Now()
	_, err = sb.ExecuteCommand(dctx, adapter.Command{Args: []string{"sleep", "60"}})
	assert.ErrorIs(t, err, errs.ProcessTimeout)
	assert.Less(t, time.Since(start), timeout+s.h.Grace)
}

func (s *suite) testCancelKillsTree(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", markerScript("cancel-marker", 2) + " sleep 60"}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 500*time.Millisecond+s.h.Grace)
	time.Sleep(2500 * time.Millisecond)
	_, err = sb.ReadFile(ctxT(t), "cancel-marker")
	assert.ErrorIs(t, err, errs.NotFound, "a background job outlived the cancellation")
}

func (s *suite) testBackgroundHoldingStdout(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	// The shell exits at once, but its background child holds stdout open for a minute.
	start := time.Now()
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{
		Args: []string{"sh", "-c", "echo started; " + markerScript("bg-marker", 2) + " sleep 60 & exit 0"},
	})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), s.h.Grace, "a background child holding stdout must not stall the call")
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "started\n", string(res.Stdout))
	time.Sleep(2500 * time.Millisecond)
	_, err = sb.ReadFile(ctxT(t), "bg-marker")
	assert.ErrorIs(t, err, errs.NotFound, "what the command left in the background must die with it")
}

func (s *suite) testOutputFlood(t *testing.T) {
	sb := s.sandbox(t)
	const limit = 1000
	const produced = 64 << 20

	var peak uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	// 128 MiB through gVisor's ptrace platform on a loaded machine took over a minute: this one
	// call gets five.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := sb.ExecuteCommand(ctx, adapter.Command{
		Args:           []string{"sh", "-c", fmt.Sprintf("yes | head -c %d; yes err | head -c %d >&2", produced, produced)},
		MaxOutputBytes: limit,
	})
	close(done)
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Len(t, res.Stdout, limit)
	assert.Len(t, res.Stderr, limit)
	assert.True(t, res.StdoutTruncated)
	assert.True(t, res.StderrTruncated)
	assert.EqualValues(t, produced-limit, res.StdoutDropped)
	assert.EqualValues(t, produced-limit, res.StderrDropped)
	assert.Equal(t, strings.Repeat("y\n", limit/2), string(res.Stdout))
	growth := int64(peak) - int64(base)
	assert.Less(t, growth, int64(32<<20), "heap grew by %d bytes for %d bytes of output", growth, 2*produced)

	// An endless flood ends at the timeout, still capped.
	res, err = sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"yes"}, MaxOutputBytes: limit, Timeout: 500 * time.Millisecond})
	require.ErrorIs(t, err, errs.ProcessTimeout)
	assert.Len(t, res.Stdout, limit)
	assert.True(t, res.StdoutTruncated)
}

func (s *suite) testTruncationCounts(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", "printf 0123456789; printf abc >&2"}, MaxOutputBytes: 4})
	require.NoError(t, err)
	assert.Equal(t, "0123", string(res.Stdout))
	assert.True(t, res.StdoutTruncated)
	assert.EqualValues(t, 6, res.StdoutDropped)
	assert.Equal(t, "abc", string(res.Stderr), "each stream has its own budget")
	assert.False(t, res.StderrTruncated)
	assert.Zero(t, res.StderrDropped)
}

func (s *suite) testUTF8(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	const text = "é€😀é€😀é€😀"
	for limit := 1; limit <= 12; limit++ {
		res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"printf", text}, MaxOutputBytes: limit})
		require.NoError(t, err)
		assert.True(t, utf8.Valid(res.Stdout), "limit %d: %q", limit, res.Stdout)
		assert.True(t, strings.HasPrefix(text, string(res.Stdout)), "limit %d", limit)
		assert.LessOrEqual(t, len(res.Stdout), limit)
		assert.True(t, res.StdoutTruncated)
		assert.EqualValues(t, len(text), int64(len(res.Stdout))+res.StdoutDropped)
	}
}

func (s *suite) testConcurrent(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t)
	const n = 50
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("job-%d", i)
			res, err := sb.ExecuteCommand(ctxT(t), adapter.Command{Args: []string{"sh", "-c", `echo "$1" > "$1.txt"; cat "$1.txt"`, "sh", want}})
			switch {
			case err != nil:
				errc <- err
			case res.ExitCode != 0 || string(res.Stdout) != want+"\n":
				errc <- fmt.Errorf("%s: exit %d stdout %q stderr %q", want, res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func (s *suite) testStop(t *testing.T) {
	t.Parallel()
	sb := s.h.New(t)
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "f", []byte("x")))
	require.NoError(t, sb.Stop(ctx))
	require.NoError(t, sb.Stop(ctx), "Stop is idempotent")
	_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	_, err = sb.ReadFile(ctx, "f")
	assert.ErrorIs(t, err, errs.SandboxUnavailable)
	assert.ErrorIs(t, sb.WriteFile(ctx, "g", []byte("x")), errs.SandboxUnavailable)
	if l, ok := sb.(adapter.Lister); ok {
		_, err := l.ListFiles(ctx, "")
		assert.ErrorIs(t, err, errs.SandboxUnavailable)
	}
	if st, ok := sb.(adapter.Statter); ok {
		_, err := st.StatFile(ctx, "f")
		assert.ErrorIs(t, err, errs.SandboxUnavailable)
	}
}

func (s *suite) testStopWhileRunning(t *testing.T) {
	t.Parallel()
	sb := s.h.New(t)
	ctx := ctxT(t)
	errc := make(chan error, 1)
	go func() {
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sleep", "60"}})
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, sb.Stop(ctx))
	select {
	case <-errc: // whatever it reports, the call has returned
	case <-time.After(s.h.Grace + 10*time.Second):
		t.Fatal("a command still running when the sandbox stopped did not return")
	}
}

func (s *suite) testFork(t *testing.T) {
	t.Parallel()
	src := s.sandbox(t)
	f, ok := src.(adapter.Forker)
	if !ok {
		t.Skip("adapter.Forker not implemented")
	}
	ctx := ctxT(t)
	require.NoError(t, src.WriteFile(ctx, "a/file.txt", []byte("base")))
	if caps(t, src).Symlinks {
		shOK(t, src, "ln -s a/file.txt link")
	}
	fork1, err := f.Fork(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fork1.Stop(context.Background()) })
	fork2, err := f.Fork(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fork2.Stop(context.Background()) })

	require.NoError(t, fork1.WriteFile(ctx, "a/file.txt", []byte("fork1")))
	require.NoError(t, fork1.WriteFile(ctx, "only-in-fork1", []byte("x")))
	for _, sb := range []adapter.Sandbox{src, fork2} {
		got, err := sb.ReadFile(ctx, "a/file.txt")
		require.NoError(t, err)
		assert.Equal(t, "base", string(got), "a fork never changes its source or its siblings")
		_, err = sb.ReadFile(ctx, "only-in-fork1")
		assert.ErrorIs(t, err, errs.NotFound)
	}
	if caps(t, src).Symlinks {
		got, err := fork2.ReadFile(ctx, "link")
		require.NoError(t, err)
		assert.Equal(t, "base", string(got), "symlinks are copied as links")
	}
	ff, ok := fork1.(adapter.Forker)
	require.True(t, ok, "a fork can be forked")
	fork3, err := ff.Fork(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fork3.Stop(context.Background()) })
	got, err := fork3.ReadFile(ctx, "a/file.txt")
	require.NoError(t, err)
	assert.Equal(t, "fork1", string(got))
	res, err := fork3.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "only-in-fork1"}})
	require.NoError(t, err)
	assert.Equal(t, "x", string(res.Stdout))

	require.NoError(t, src.Stop(ctx))
	_, err = f.Fork(ctx)
	assert.ErrorIs(t, err, errs.SandboxUnavailable, "a stopped sandbox cannot be forked")
}
