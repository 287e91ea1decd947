package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// Direct streams (see package agent): a dialled port or an accepted connection is a unix
// connection of its own between the agent and this process, instead of a stream multiplexed over
// the attach that the daemon relays (which bounds a stream at a tenth of loopback's throughput).
// Each sandbox of a local daemon gets a host directory, mounted read-only at
// agent.DirectSandboxDir; each handle listens on a socket of its own there, which the agent
// connects to. With a remote daemon there is nothing to share: streams are multiplexed.

// streamsBase holds the directories of the sandboxes' direct streams.
func streamsBase() string { return filepath.Join(os.TempDir(), "sandboxer-docker-streams") }

// newStreamsDir makes the directory of sandbox id's direct streams; "" when the daemon is not on
// this host (or the directory cannot be made: streams are then multiplexed).
func newStreamsDir(eng engine, id string) string {
	if !strings.HasPrefix(eng.DaemonHost(), "unix://") {
		return ""
	}
	base := streamsBase()
	if err := os.MkdirAll(base, 0o711); err != nil {
		return ""
	}
	dir := filepath.Join(base, id)
	if err := os.Mkdir(dir, 0o711); err != nil {
		return ""
	}
	return dir
}

// streamsDirOf returns the host directory mounted at agent.DirectSandboxDir in a container.
func streamsDirOf(ins client.ContainerInspectResult) string {
	for _, m := range ins.Container.Mounts {
		if m.Destination == agent.DirectSandboxDir && m.Type == "bind" {
			return m.Source
		}
	}
	return ""
}

// removeStreamsDir removes a sandbox's directory of direct streams (what a handle left there).
func removeStreamsDir(dir string) {
	if dir != "" && filepath.Dir(dir) == streamsBase() {
		os.RemoveAll(dir)
	}
}

// sweepStreams removes the directories of sandboxes that have no container any more (their
// creator died and the daemon removed them), made more than a minute ago: a sandbox being created
// has its directory before its container.
func sweepStreams(ctx context.Context, eng engine) {
	entries, err := os.ReadDir(streamsBase())
	if err != nil {
		return
	}
	all, err := list(ctx, eng)
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, c := range all {
		live[c.ID] = true
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || live[e.Name()] || time.Since(info.ModTime()) < time.Minute {
			continue
		}
		removeStreamsDir(filepath.Join(streamsBase(), e.Name()))
	}
}
