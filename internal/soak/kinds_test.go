//go:build linux

package soak_test

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/adapter/oci"
)

// kind is one adapter configuration the soak runs.
type kind struct {
	name string
	// open makes a sandbox (state is the oci state directory) and returns an id to look for.
	open func(ctx context.Context, state string) (adapter.Sandbox, string, error)
	// check says whether the backend works here (nil when it needs nothing).
	check func(ctx context.Context, state string) error
	// required is the SANDBOXER_TEST_REQUIRE name that makes a backend missing a failure.
	required string
	// hostProcesses: the commands are processes of the host's kernel (not gVisor's, not
	// interpreted), which the marker scan of /proc sees.
	hostProcesses bool
	// alive is how many sandboxes an owner has at a time when not the default (docker's are slow
	// to make: more at once make more in the time).
	alive int
	// batches, when not 0, is fewer batches than the others get (also under -short).
	batches int
}

var kinds = []kind{
	{name: "local", hostProcesses: true, open: func(context.Context, string) (adapter.Sandbox, string, error) {
		sb, err := local.New(local.Config{})
		if err != nil {
			return nil, "", err
		}
		return sb, sb.ID(), nil
	}},
	{name: "local-off", hostProcesses: true, open: func(context.Context, string) (adapter.Sandbox, string, error) {
		sb, err := local.New(local.Config{Isolation: local.IsolationOff})
		if err != nil {
			return nil, "", err
		}
		return sb, sb.ID(), nil
	}},
	{name: "docker", required: "docker", hostProcesses: true, alive: 8, check: dockerCheck, open: func(ctx context.Context, _ string) (adapter.Sandbox, string, error) {
		sb, err := docker.New(ctx, docker.Config{})
		if err != nil {
			return nil, "", err
		}
		return sb, sb.ContainerID(), nil
	}},
	ociKind(oci.Runc, 0),
	// gVisor's sandboxes take seconds to start and much CPU: 100 of them do not fit in the soak's
	// five minutes on a loaded 2-core machine, 10 do.
	ociKind(oci.Runsc, 1),
	{name: "memory", open: func(context.Context, string) (adapter.Sandbox, string, error) {
		sb, err := memory.New(memory.Config{})
		if err != nil {
			return nil, "", err
		}
		return sb, sb.ID(), nil
	}},
}

func kindByName(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

func ociKind(rt string, batches int) kind {
	return kind{name: "oci-" + rt, required: "oci", hostProcesses: rt != oci.Runsc, batches: batches,
		open: func(ctx context.Context, state string) (adapter.Sandbox, string, error) {
			sb, err := oci.New(ctx, oci.Config{Runtime: rt, StateDir: state})
			if err != nil {
				return nil, "", err
			}
			return sb, sb.ID(), nil
		},
		// A sandbox that runs a command, which also makes the shared root file system.
		check: func(ctx context.Context, state string) error {
			if _, err := exec.LookPath(rt); err != nil {
				return err
			}
			sb, err := oci.New(ctx, oci.Config{Runtime: rt, StateDir: state})
			if err != nil {
				return err
			}
			defer sb.Stop(context.Background())
			res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		}}
}

// dockerCheck pings the daemon and builds the sandbox image when it is missing or stale.
func dockerCheck(ctx context.Context, _ string) error { return image.Ready(ctx) }
