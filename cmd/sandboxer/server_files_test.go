package main_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readA is the call these tests make, and what it prints.
var readA = []string{"tool", "read", "--input", `{"path":"a.txt"}`}

const readAOut = `{"ok":true,"output":"abc"}` + "\n"

// readUnserved runs the call with extraEnv, which must run in a process of its own (a hang is
// killed after 2 minutes, and fails) with a word on stderr of why, and returns that stderr.
func (e *env) readUnserved(t *testing.T, extraEnv ...string) string {
	t.Helper()
	r := e.run("", extraEnv, readA...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, readAOut, r.stdout)
	assert.Contains(t, r.stderr, "the resident server is not used")
	return r.stderr
}

// endedServer runs a call (which starts the env's server), ends the server and returns its name:
// its files in the server directory are NAME.lock, NAME.log, NAME.key and NAME.sock.
func (e *env) endedServer() string {
	e.t.Helper()
	e.write("a.txt", "abc")
	require.Equal(e.t, 0, e.run("", nil, readA...).code)
	locks, _ := filepath.Glob(filepath.Join(e.serverDir(), "*.lock"))
	require.Len(e.t, locks, 1)
	endServers(e.t, e.serverDir())
	require.Empty(e.t, e.servers())
	return strings.TrimSuffix(filepath.Base(locks[0]), ".lock")
}

// A FIFO planted as a lock (the server's own, and another) never blocks the front: the call runs
// in a process of its own, and says why.
func TestServerPlantedLockFIFO(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := e.endedServer()
	lock := filepath.Join(e.serverDir(), name+".lock")
	require.NoError(t, os.Remove(lock))
	require.NoError(t, syscall.Mkfifo(lock, 0o600))
	require.NoError(t, syscall.Mkfifo(filepath.Join(e.serverDir(), "planted.lock"), 0o600))
	assert.Contains(t, e.readUnserved(t), lock+" is a FIFO")
	assert.Empty(t, e.servers())
	// The server, started by hand, refuses it too.
	out, err := e.server(e.serverDir(), name)
	assert.Error(t, err)
	assert.Contains(t, out, lock+" is a FIFO")
}

// server runs the engine's server of name in the server directory dir by hand (no front), and
// returns what it wrote once it ended.
func (e *env) server(dir, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(bin), "sandboxerd"), "server", "--dir", dir, "--name", name)
	cmd.Env = e.vars
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A link or a hard link planted as the server's log never makes the server (or the front)
// write to the file it points to.
func TestServerPlantedLogLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := e.endedServer()
	logf := filepath.Join(e.serverDir(), name+".log")
	target := filepath.Join(e.base, "victim")
	require.NoError(t, os.WriteFile(target, []byte("untouched\n"), 0o600))
	for _, plant := range []func(string, string) error{os.Symlink, os.Link} {
		require.NoError(t, os.Remove(logf))
		require.NoError(t, plant(target, logf))
		assert.Contains(t, e.readUnserved(t), logf+" ")
		assert.Empty(t, e.servers())
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		assert.Equal(t, "untouched\n", string(b))
	}
}

// A server directory on a path another user could change, or not the user's own, is refused:
// the call runs in a process of its own, and the front names the component and the rule.
func TestServerDirRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "abc")
	for _, tc := range []struct {
		name  string
		root  bool
		make  func(dir string) // makes what is above, or at, dir
		wrong string           // the component named, relative to the directory of the case
	}{
		{"parent writable by others", false, func(dir string) { mkdirMode(t, filepath.Dir(dir), 0o777) }, "p"},
		{"parent another user's", true, func(dir string) {
			mkdirMode(t, filepath.Dir(dir), 0o700)
			require.NoError(t, os.Chown(filepath.Dir(dir), 65534, 65534))
		}, "p"},
		{"a link", false, func(dir string) {
			mkdirMode(t, filepath.Dir(dir), 0o755)
			mkdirMode(t, dir+"-real", 0o700)
			require.NoError(t, os.Symlink(dir+"-real", dir))
		}, "p/srv"},
		{"open to others", false, func(dir string) {
			mkdirMode(t, filepath.Dir(dir), 0o755)
			mkdirMode(t, dir, 0o755)
		}, "p/srv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to make another user's directory")
			}
			base := filepath.Join(e.base, strings.ReplaceAll(tc.name, " ", "-"))
			mkdirMode(t, base, 0o755)
			dir := filepath.Join(base, "p", "srv")
			tc.make(dir)
			assert.Contains(t, e.readUnserved(t, "SANDBOXER_SERVER_DIR="+dir), filepath.Join(base, tc.wrong)+" ")
			made, _ := filepath.Glob(filepath.Join(dir, "*"))
			assert.Empty(t, made, "nothing was made in the directory refused")
			// The server, started by hand, refuses it too.
			out, err := e.server(dir, "x")
			assert.Error(t, err)
			assert.Contains(t, out, filepath.Join(base, tc.wrong)+" ")
		})
	}
}

func mkdirMode(t *testing.T, p string, mode os.FileMode) {
	require.NoError(t, os.Mkdir(p, mode))
	require.NoError(t, os.Chmod(p, mode))
}

// The server, its janitor and its helpers close what the front that started them inherited
// from its caller: a flock the calling script holds on descriptor 5 is free once the call
// ended, and a pipeline whose pipe sits on descriptor 5 ends with the call, while the server
// goes on.
func TestServerClosesInheritedDescriptors(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	bash := []string{"tool", "bash", "--input", `{"cmd":"true"}`} // a helper and a janitor too
	t.Run("flock", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		lockfile := filepath.Join(e.base, "lockfile")
		script := `exec 5>"$0"; flock 5; exec "$@"`
		cmd := exec.Command("sh", append([]string{"-c", script, lockfile, bin}, bash...)...)
		cmd.Dir, cmd.Env = e.work, e.vars
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Len(t, e.servers(), 1, "the call started a server")
		free := exec.Command("flock", "-n", lockfile, "true")
		out, err = free.CombinedOutput()
		assert.NoError(t, err, "the caller's lock is still held: %s", out)
		assert.Len(t, e.servers(), 1, "the server goes on")
	})
	t.Run("pipe", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		cmd := exec.Command(bin, bash...)
		cmd.Dir, cmd.Env = e.work, e.vars
		cmd.ExtraFiles = []*os.File{nil, nil, w} // descriptor 5
		require.NoError(t, cmd.Start())
		w.Close()
		require.NoError(t, cmd.Wait())
		require.Len(t, e.servers(), 1, "the call started a server")
		r.SetReadDeadline(time.Now().Add(time.Minute)) // a writer left: the read would block
		_, err = io.ReadAll(r)
		assert.NoError(t, err, "the pipeline did not end with the call")
		assert.Len(t, e.servers(), 1, "the server goes on")
	})
}
