package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/docker/image"
)

// `image build --from-*` flags that do not go together are usage errors (exit 2), before any
// daemon is asked.
func TestImageBuildFromUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{
		{"--from-rootfs", "root"}, // no tag of its own
		{"--from-rootfs", "root", "--from-dockerfile", "Dockerfile", "--tag", "x:1"}, // two sources
		{"--from-rootfs", "root", "--tag", "x:1", "--no-agent"},                      // the agent is the point
		{"--from-dockerfile", "Dockerfile", "--tag", "x:1", "--busybox", "/bin/busybox"},
		{"--change", "ENV A=1"},                // without --from-rootfs
		{"--context", ".", "--tag", "x:1"},     // without --from-dockerfile
		{"--build-arg", "A=1", "--tag", "x:1"}, // without --from-dockerfile
	} {
		r := e.run("", nil, append([]string{"image", "build"}, args...)...)
		assert.Equal(t, 2, r.code, "%v: %s%s", args, r.stdout, r.stderr)
	}
}

// `image build --from-dockerfile` builds a Dockerfile FROM the local default image with a tool on
// a PATH of its own; a one-shot exec on that image runs the tool with the image's agent, on the
// project's files; a second build is up to date; a missing root file system is exit 1 with its
// code.
func TestImageBuildFromDockerfileCLI(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	e := newEnv(t)
	var b [4]byte
	rand.Read(b[:])
	tag := "sandboxer-test-cli-dockerfile:" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation()); err == nil {
			c.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			c.Close()
		}
	})
	ctxDir := filepath.Join(e.base, "img")
	require.NoError(t, os.MkdirAll(ctxDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ctxDir, "greet"), []byte("#!/bin/sh\necho \"$GREETING from $(cat note.txt)\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM "+image.DefaultTag+"\n"+
		"ENV PATH=/opt/bin:/usr/local/bin:/usr/bin:/bin GREETING=hello\n"+
		"COPY greet /opt/bin/greet\n"), 0o644))

	build := func() map[string]any {
		r := e.run("", nil, "image", "build", "--from-dockerfile", filepath.Join(ctxDir, "Dockerfile"), "--tag", tag)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		return out
	}
	first := build()
	assert.Equal(t, true, first["built"])
	assert.Equal(t, tag, first["tag"])

	e.write("note.txt", "the project")
	r := e.run("", nil, "exec", "--adapter", "docker", "--image", tag, "--", "greet")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Equal(t, "hello from the project\n", r.stdout)

	second := build()
	assert.Equal(t, false, second["built"])
	assert.Equal(t, first["id"], second["id"])

	r = e.run("", nil, "image", "build", "--from-rootfs", filepath.Join(e.base, "no-root"), "--tag", tag)
	assert.Equal(t, 1, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "TOOL_NOT_FOUND")
}
