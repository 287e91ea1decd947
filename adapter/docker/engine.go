package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/errs"
)

// engine is the part of the moby client this package uses: nothing else of the Docker API is
// reachable from a sandbox.
type engine interface {
	Ping(ctx context.Context, o client.PingOptions) (client.PingResult, error)
	ImageInspect(ctx context.Context, image string, o ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ContainerCreate(ctx context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, id string, o client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerRemove(ctx context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerUpdate(ctx context.Context, id string, o client.ContainerUpdateOptions) (client.ContainerUpdateResult, error)
	ContainerPause(ctx context.Context, id string, o client.ContainerPauseOptions) (client.ContainerPauseResult, error)
	ContainerUnpause(ctx context.Context, id string, o client.ContainerUnpauseOptions) (client.ContainerUnpauseResult, error)
	ExecCreate(ctx context.Context, id string, o client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, o client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, o client.ExecInspectOptions) (client.ExecInspectResult, error)
	DaemonHost() string
	Close() error
}

var _ engine = (*client.Client)(nil)

// newEngine connects to host ("" is DOCKER_HOST or the default socket) with API version
// negotiation, so that daemons down to API 1.40 (the client's minimum) work, and checks the daemon
// answers. An unreachable daemon is errs.SandboxUnavailable.
func newEngine(ctx context.Context, host string) (engine, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, errs.Wrap(errs.SandboxUnavailable, "docker", "", fmt.Errorf("docker client: %w", err))
	}
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		c.Close()
		return nil, errs.Wrap(errs.SandboxUnavailable, "docker", "", fmt.Errorf("docker daemon unreachable: %w", err))
	}
	return c, nil
}

// classify turns an engine error into a sandboxer error: context errors stay themselves (so
// errors.Is(err, context.Canceled) works), a daemon that cannot be reached or a container that is
// gone or not running is errs.SandboxUnavailable, anything else errs.Internal.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if client.IsErrConnectionFailed(err) || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) ||
		cerrdefs.IsUnavailable(err) {
		return errs.Wrap(errs.SandboxUnavailable, op, "", err)
	}
	return errs.Wrap(errs.Internal, op, "", err)
}
