package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/journal"
)

// TestUICommand: sandboxer ui refuses a non-loopback --listen (a usage error), and otherwise
// prints the page's URL, answers it with the token and 403 without, and ends when interrupted.
func TestUICommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	j, err := journal.Open(context.Background(), path, journal.Options{})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	args := []string{"ui", "--journal", path, "--state-dir", dir}

	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "[::]:0"} {
		var stderr strings.Builder
		code := run(context.Background(), append(args, "--listen", addr), Streams{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
		assert.Equal(t, 2, code, addr)
		assert.Contains(t, stderr.String(), "not a loopback address", addr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, args, Streams{In: strings.NewReader(""), Out: pw, Err: io.Discard})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	u, err := url.Parse(strings.TrimSpace(line))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", u.Hostname())
	require.NotEmpty(t, u.Query().Get("token"))
	get := func(s string) int {
		resp, err := http.Get(s)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get(u.String()))
	assert.Equal(t, http.StatusForbidden, get("http://"+u.Host+"/api/runs"))
	cancel()
	assert.Equal(t, 0, <-done)
}
