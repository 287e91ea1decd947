package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/adaptertest"
	"github.com/sandboxer/sandboxer/adapter/docker"
)

// realWorkConfig is a sandbox of the Debian toolchain image with room for a cold go test: no CPU
// limit, 4 GiB of memory and a 1 GiB /tmp (a cold go test compiles the standard library there:
// the default 64 MiB is too small for it).
func realWorkConfig(b *testing.B) docker.Config {
	return docker.Config{Image: debianImage(b), MemoryBytes: 4 << 30, TmpBytes: 1 << 30, NanoCPUs: -1}
}

// BenchmarkRealWork is issue 35's real work (adaptertest.BenchmarkRealWork) in docker sandboxes
// of the Debian toolchain image against the same commands bare on the host:
// `go test -run '^$' -bench RealWork -benchtime 2x ./adapter/docker/`.
func BenchmarkRealWork(b *testing.B) {
	adaptertest.BenchmarkRealWork(b, adaptertest.RealWorkSandbox{Name: "docker", New: func(b *testing.B) adapter.Sandbox {
		return newSandbox(b, realWorkConfig(b))
	}})
}

// BenchmarkGoTestVariants takes the docker sandbox's real work apart (issue 35: go test warm
// at 1.68x bare): next to the sandbox as BenchmarkRealWork makes it, the same without the
// workspace's cap (the daemon's volume instead of the loop-mounted ext4), with the build cache
// on the /tmp tmpfs instead of under HOME (on the capped disk), without the seccomp profile, and a
// container of the same image that sandboxer did not make (plainContainer: `docker run` with
// the same user, /tmp and workspace bind, each command a plain daemon exec). Each with its paired
// bare runs (x-bare); the go test's warm runs alone:
// `go test -run '^$' -bench 'GoTestVariants/go-test/.*-warm' -benchtime 5x ./adapter/docker/`.
func BenchmarkGoTestVariants(b *testing.B) {
	owned := ownedWorkspaceImage(b, debianImage(b))
	variant := func(name string, f func(*docker.Config)) adaptertest.RealWorkSandbox {
		return adaptertest.RealWorkSandbox{Name: name, New: func(b *testing.B) adapter.Sandbox {
			cfg := realWorkConfig(b)
			if f != nil {
				f(&cfg)
			}
			return newSandbox(b, cfg)
		}}
	}
	adaptertest.BenchmarkRealWork(b,
		variant("docker", nil),
		// The daemon's volume takes the ownership of the image's /workspace, which the Debian
		// image lacks (root's then): the variant runs an image with it, made the sandbox user's.
		variant("docker-nocap", func(c *docker.Config) { c.WorkspaceBytes, c.Image = -1, owned }),
		variant("docker-gocache-tmp", func(c *docker.Config) { c.Env = []string{"GOCACHE=/tmp/go-build"} }),
		variant("docker-unconfined", func(c *docker.Config) { c.Seccomp = "unconfined" }),
		adaptertest.RealWorkSandbox{Name: "docker-run", New: func(b *testing.B) adapter.Sandbox {
			return newPlainContainer(b, realWorkConfig(b).Image)
		}},
	)
}

// ownedWorkspaceImage is img with a /workspace of the sandbox user's, removed when b ends.
func ownedWorkspaceImage(b *testing.B, img string) string {
	ctx := ctxT(b)
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(b, err)
	defer c.Close()
	res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: img,
		Labels: map[string]string{docker.LabelOwner: plainOwner()}}})
	require.NoError(b, err)
	defer c.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(b, tw.WriteHeader(&tar.Header{Name: "workspace/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: 1000, Gid: 1000}))
	require.NoError(b, tw.Close())
	_, err = c.CopyToContainer(ctx, res.ID, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf, CopyUIDGID: true})
	require.NoError(b, err)
	ref := fmt.Sprintf("sandboxer-test-owned-workspace:%d", os.Getpid())
	_, err = c.ContainerCommit(ctx, res.ID, client.ContainerCommitOptions{Reference: ref})
	require.NoError(b, err)
	b.Cleanup(func() {
		if c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation()); err == nil {
			c.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{})
			c.Close()
		}
	})
	return ref
}

// plainContainer is a container of an image that sandboxer did not make, as
// `docker run -d -u 1000:1000 --network none --tmpfs /tmp:exec,size=1g -v DIR:/workspace -w /workspace IMAGE sleep infinity`
// makes it (the daemon's defaults otherwise: its seccomp profile, docker-init off, no limits),
// with files written into DIR on the host and each command a plain daemon exec as 1000:1000
// with HOME=/workspace: the baseline of the docker sandbox's real work.
type plainContainer struct {
	c   *client.Client
	id  string
	dir string
}

func newPlainContainer(b *testing.B, img string) *plainContainer {
	ctx := ctxT(b)
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(b, err)
	dir, err := os.MkdirTemp("", "sandboxer-plain-")
	require.NoError(b, err)
	require.NoError(b, os.Chown(dir, 1000, 1000))
	p := &plainContainer{c: c, dir: dir}
	b.Cleanup(func() { p.Stop(context.Background()) })
	res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: img, User: commandsUser, WorkingDir: "/workspace", Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{docker.LabelOwner: plainOwner()}},
		HostConfig: &container.HostConfig{NetworkMode: "none", Binds: []string{dir + ":/workspace"},
			Tmpfs: map[string]string{"/tmp": "rw,exec,nosuid,nodev,size=1g,mode=1777"}},
	})
	require.NoError(b, err)
	p.id = res.ID
	_, err = c.ContainerStart(ctx, p.id, client.ContainerStartOptions{})
	require.NoError(b, err)
	return p
}

// plainOwner is the owner label of this process's containers, which TestMain's leftover check
// looks for.
func plainOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

func (p *plainContainer) ExecuteCommand(ctx context.Context, cmd adapter.Command) (adapter.Result, error) {
	start := time.Now()
	cr, err := p.c.ExecCreate(ctx, p.id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: cmd.Args,
		User: commandsUser, WorkingDir: "/workspace", Env: append([]string{"HOME=/workspace"}, cmd.Env...)})
	if err != nil {
		return adapter.Result{}, err
	}
	att, err := p.c.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return adapter.Result{}, err
	}
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, att.Reader)
	att.Close()
	if err != nil {
		return adapter.Result{}, err
	}
	ins, err := p.c.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
	if err != nil {
		return adapter.Result{}, err
	}
	return adapter.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: ins.ExitCode, Duration: time.Since(start)}, nil
}

func (p *plainContainer) ReadFile(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(p.dir, path))
}

func (p *plainContainer) WriteFile(_ context.Context, path string, data []byte) error {
	name := filepath.Join(p.dir, path)
	for d := filepath.Dir(name); d != p.dir; d = filepath.Dir(d) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		os.Chown(d, 1000, 1000)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return err
	}
	return os.Chown(name, 1000, 1000)
}

// Stop removes the container and the directory; it is idempotent.
func (p *plainContainer) Stop(ctx context.Context) error {
	if p.id != "" {
		p.c.ContainerRemove(ctx, p.id, client.ContainerRemoveOptions{Force: true})
		p.id = ""
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
		p.dir = ""
	}
	return p.c.Close()
}
