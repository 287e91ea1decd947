package oneshot

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireRoot skips a case that needs another user's files (chown).
func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make another user's files")
	}
}

// Every component of the server directory's path is checked: each refusal is an ErrUnsafe that
// names the component.
func TestServerDirChecks(t *testing.T) {
	t.Parallel()
	uid := os.Geteuid()
	for _, tc := range []struct {
		name  string
		root  bool // needs root
		make  func(t *testing.T, base string) string
		wrong string // the component named; "" when the directory is accepted
	}{
		{name: "made 0700", make: func(t *testing.T, base string) string { return filepath.Join(base, "srv") }},
		{name: "links above are resolved", make: func(t *testing.T, base string) string {
			require.NoError(t, os.Mkdir(filepath.Join(base, "real"), 0o755))
			require.NoError(t, os.Symlink("real", filepath.Join(base, "link")))
			return filepath.Join(base, "link", "srv")
		}},
		{name: "parent writable by others", make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			return filepath.Join(base, "open", "srv")
		}, wrong: "open"},
		{name: "parent writable by its group", make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "group"), 0o775)
			return filepath.Join(base, "group", "srv")
		}, wrong: "group"},
		{name: "parent root's and sticky, like /tmp", root: true, make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "tmp"), os.ModeSticky|0o777)
			return filepath.Join(base, "tmp", "srv")
		}},
		{name: "parent sticky but not root's", root: true, make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "tmp"), os.ModeSticky|0o777)
			require.NoError(t, os.Chown(filepath.Join(base, "tmp"), 65534, 65534))
			return filepath.Join(base, "tmp", "srv")
		}, wrong: "tmp"},
		{name: "parent another user's (sudo -E with XDG_RUNTIME_DIR)", root: true, make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "run-user-65534"), 0o700)
			require.NoError(t, os.Chown(filepath.Join(base, "run-user-65534"), 65534, 65534))
			return filepath.Join(base, "run-user-65534", "srv")
		}, wrong: "run-user-65534"},
		{name: "a link", make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "elsewhere"), 0o700)
			require.NoError(t, os.Symlink("elsewhere", filepath.Join(base, "srv")))
			return filepath.Join(base, "srv")
		}, wrong: "srv"},
		{name: "open to others", make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "srv"), 0o755)
			return filepath.Join(base, "srv")
		}, wrong: "srv"},
		{name: "another user's", root: true, make: func(t *testing.T, base string) string {
			mkdir(t, filepath.Join(base, "srv"), 0o700)
			require.NoError(t, os.Chown(filepath.Join(base, "srv"), 65534, 65534))
			return filepath.Join(base, "srv")
		}, wrong: "srv"},
		{name: "a FIFO", make: func(t *testing.T, base string) string {
			require.NoError(t, syscall.Mkfifo(filepath.Join(base, "srv"), 0o600))
			return filepath.Join(base, "srv")
		}, wrong: "srv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.root {
				requireRoot(t)
			}
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			path := tc.make(t, base)
			d, err := OpenServerDir(path, uid)
			if tc.wrong == "" {
				require.NoError(t, err)
				defer d.Close()
				fi, err := os.Lstat(path)
				require.NoError(t, err)
				assert.True(t, fi.IsDir())
				assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
				return
			}
			require.ErrorIs(t, err, ErrUnsafe)
			assert.Contains(t, err.Error(), filepath.Join(base, tc.wrong)+" ")
		})
	}
}

func mkdir(t *testing.T, p string, mode os.FileMode) {
	require.NoError(t, os.Mkdir(p, mode))
	require.NoError(t, os.Chmod(p, mode)) // whatever the umask
}

// A lock, key or log that sandboxer did not make is refused, without blocking and without
// touching what a link points to; the files sandboxer makes are opened.
func TestServerDirFiles(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	d, err := OpenServerDir(filepath.Join(base, "srv"), os.Geteuid())
	require.NoError(t, err)
	defer d.Close()
	dir := filepath.Join(base, "srv")
	target := filepath.Join(base, "target")
	require.NoError(t, os.WriteFile(target, []byte("untouched"), 0o600))

	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.lock"), 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "link.log")))
	require.NoError(t, os.Link(target, filepath.Join(dir, "hard.log")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dir.key"), 0o700))
	for _, name := range []string{"fifo.lock", "link.log", "hard.log", "dir.key"} {
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
			f, err := d.OpenFile(name, flag, 0o600)
			if !assert.ErrorIs(t, err, ErrUnsafe, "%s, flags %#x", name, flag) {
				f.Close()
				continue
			}
			assert.Contains(t, err.Error(), filepath.Join(dir, name)+" ")
		}
	}
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "untouched", string(b))
	for _, name := range []string{"..", "../target", "a/b", ""} {
		_, err := d.OpenFile(name, os.O_RDONLY, 0)
		assert.ErrorIs(t, err, ErrUnsafe, "%q", name)
	}

	f, err := d.OpenFile("ok.log", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString("logged")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b, err = os.ReadFile(filepath.Join(dir, "ok.log"))
	require.NoError(t, err)
	assert.Equal(t, "logged", string(b))

	// A socket: a link to one is refused.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: d.SocketPath("s.sock"), Net: "unix"})
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, d.CheckSocket("s.sock"))
	require.NoError(t, os.Symlink("s.sock", filepath.Join(dir, "l.sock")))
	assert.ErrorIs(t, d.CheckSocket("l.sock"), ErrUnsafe)
	assert.ErrorIs(t, d.CheckSocket("ok.log"), ErrUnsafe)
}

// Once opened, the directory is used through its descriptor: the path swapped after the checks
// (another user renaming a directory above it, as with root's server directory in a directory
// another user owns) changes where nothing goes.
func TestServerDirSwappedAfterTheCheck(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	path := filepath.Join(base, "srv")
	d, err := OpenServerDir(path, os.Geteuid())
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, os.Rename(path, filepath.Join(base, "moved")))
	require.NoError(t, os.Mkdir(path, 0o700)) // the attacker's
	f, err := d.OpenFile("x.log", os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	f.Close()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: d.SocketPath("x.sock"), Net: "unix"})
	require.NoError(t, err)
	defer ln.Close()
	names, err := d.Names()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"x.log", "x.sock"}, names)
	left, err := os.ReadDir(path)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing went to the directory now at the path")
}
