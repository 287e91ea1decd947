package image_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/docker/image"
)

func TestRootfsIsDeterministicAndComplete(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("busybox-static not installed")
	}
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("ripgrep not installed")
	}
	a, err := image.Rootfs(image.Options{})
	require.NoError(t, err)
	b, err := image.Rootfs(image.Options{})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a, b), "same host files, same archive")

	entries := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		entries[h.Name] = h
	}
	for _, name := range []string{"bin/busybox", "bin/sh", "bin/cat", "bin/kill", "bin/setsid", "bin/nc", "bin/wget", "usr/bin/rg", "usr/local/bin/sandboxer-agent", "etc/passwd", "etc/group", "tmp/", "workspace/"} {
		assert.Contains(t, entries, name)
	}
	assert.Equal(t, 1000, entries["workspace/"].Uid)
	assert.Equal(t, int64(0o1777), entries["tmp/"].Mode)

	noAgent, err := image.Rootfs(image.Options{NoAgent: true})
	require.NoError(t, err)
	assert.NotContains(t, string(noAgent), "usr/local/bin/sandboxer-agent")
	_, err = image.Rootfs(image.Options{Agent: "/usr/bin/rg"})
	assert.ErrorContains(t, err, "dynamically linked", "a dynamically linked agent is refused")

	_, err = image.Rootfs(image.Options{Busybox: "/nonexistent/busybox"})
	assert.Error(t, err)
	_, err = image.Rootfs(image.Options{Busybox: "/usr/bin/rg"})
	assert.Error(t, err, "a dynamically linked busybox is refused")
}
