package agent_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/agent/frames"
	"github.com/sandboxer/sandboxer/adapter/agent/trustfile"
)

// fsRun runs one -fs operation on root and returns its exit code, stdout and stderr.
func fsRun(root string, stdin io.Reader, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := agent.ServeFS(root, args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

func TestFSPutCommitsOnlyAWholeStream(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f"), []byte("old"), 0o644))
	var framed bytes.Buffer
	_, err := io.Copy(&framed, frames.Encode(bytes.NewReader([]byte("new content"))))
	require.NoError(t, err)

	// Every cut of the stream leaves the file as it was and no temporary file.
	for n := range framed.Len() {
		code, _, _ := fsRun(root, bytes.NewReader(framed.Bytes()[:n]), "put", "f")
		require.NotZero(t, code, "a stream cut after %d of %d bytes was committed", n, framed.Len())
		got, err := os.ReadFile(filepath.Join(root, "f"))
		require.NoError(t, err)
		require.Equal(t, "old", string(got))
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Len(t, entries, 1, "a temporary file was left")
	}
	code, _, _ := fsRun(root, bytes.NewReader(framed.Bytes()), "put", "d/f")
	require.Zero(t, code)
	got, err := os.ReadFile(filepath.Join(root, "d/f"))
	require.NoError(t, err)
	assert.Equal(t, "new content", string(got))
}

func TestFSOpenSendsTheSizeThenTheContent(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f"), []byte("hello"), 0o644))
	require.NoError(t, os.Symlink("f", filepath.Join(root, "link")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "out")))
	code, out, _ := fsRun(root, nil, "open", "link")
	require.Zero(t, code)
	assert.Equal(t, "5\nhello", out)
	code, out, _ = fsRun(root, nil, "open", "out")
	assert.NotZero(t, code, "a link out of the workspace is refused")
	assert.Empty(t, out)
	code, _, _ = fsRun(root, nil, "open", "missing")
	assert.NotZero(t, code)

	// A FIFO planted in the workspace is refused at once, not waited on for a writer.
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	for _, op := range []string{"open", "read"} {
		code, out, _ = fsRun(root, nil, op, "fifo")
		assert.NotZero(t, code, op)
		assert.Empty(t, out, op)
	}
}

// TestFSTrustWritesTheBundleInHome: `-fs trust HOME` writes HOME's bundle (the system's trusted
// certificates, then the PEM of stdin), prints its path, leaves a bundle that ends with it as it
// is, and takes no path in or of the workspace.
func TestFSTrustWritesTheBundleInHome(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	code, out, errOut := fsRun(root, strings.NewReader(pem), "trust", home)
	require.Zero(t, code, errOut)
	file := filepath.Join(home, trustfile.Path)
	assert.Equal(t, file+"\n", out)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(got), pem))
	assert.Equal(t, string(trustfile.System("/"))+"\n"+pem, string(got), "the system's certificates first")
	fi, err := os.Stat(file)
	require.NoError(t, err)

	code, _, errOut = fsRun(root, strings.NewReader(pem), "trust", home)
	require.Zero(t, code, errOut)
	again, err := os.Stat(file)
	require.NoError(t, err)
	assert.True(t, os.SameFile(fi, again), "a bundle that ends with the authority is left as it is")

	for _, bad := range []string{"relative", "/", agent.Workspace, agent.Workspace + "/home", home + "/../x"} {
		code, _, _ := fsRun(root, strings.NewReader(pem), "trust", bad)
		assert.NotZero(t, code, bad)
	}
	code, _, _ = fsRun(root, strings.NewReader(""), "trust", home)
	assert.NotZero(t, code, "no authority on stdin")
}
