package docker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter/agent"
	janitorpkg "github.com/sandboxer/sandboxer/adapter/internal/janitor"
)

// Direct streams (see package agent): the agent hands a dialled port's or an accepted connection's
// socket itself to this process over a unix connection, instead of multiplexing its bytes over the
// attach that the daemon relays (which bounds a stream at a tenth of loopback's throughput). Each
// sandbox of a local daemon gets a host directory, mounted read-only at agent.DirectSandboxDir;
// each handle listens on a socket of its own there, which the agent connects to. With a remote
// daemon there is nothing to share: streams are multiplexed.
//
// The directory goes with the sandbox: Stop removes it, and for a sandbox that is not persistent
// a janitor process (package adapter/internal/janitor, as the oci and local adapters use) removes
// it when this process dies without Stop (the daemon removes the container itself then: its agent
// saw its stream end). Prune removes those of containers that are gone.

// janitor removes the directories registered with it (Register(DIR): a sandbox's streams, or
// its capped workspace, see disk.go) and not released (Release(DIR)) when this process is gone.
var janitor = janitorpkg.New("sandboxer-docker-janitor", "SANDBOXER_DOCKER_JANITOR")

func init() {
	janitor.Serve(func(left []string) {
		for _, dir := range left {
			removeStreamsDir(dir)
			releaseOrphanDisk(dir)
		}
	})
}

// streamsBase holds the directories of the sandboxes' direct streams.
func streamsBase() string { return filepath.Join(os.TempDir(), streamsBaseName) }

const streamsBaseName = "sandboxer-docker-streams"

// newStreamsDir makes the directory of sandbox id's direct streams; "" when the daemon is not on
// this host (or the directory cannot be made: streams are then multiplexed). lookAfter asks the
// janitor to remove it if this process dies first (until Stop sends its release).
func newStreamsDir(eng engine, id string, lookAfter bool) string {
	if !strings.HasPrefix(eng.DaemonHost(), "unix://") {
		return ""
	}
	dir := filepath.Join(streamsBase(), id)
	var err error
	for range 2 { // another process may remove the base between the two calls, once
		if err = os.MkdirAll(streamsBase(), 0o711); err == nil {
			if err = os.Mkdir(dir, 0o711); !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
	}
	if err != nil {
		return ""
	}
	if lookAfter {
		janitor.Register(dir)
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

// removeStreamsDir removes a sandbox's directory of direct streams (what a handle left there),
// and the base when it is empty.
func removeStreamsDir(dir string) {
	base := filepath.Dir(dir)
	if dir == "" || !filepath.IsAbs(dir) || filepath.Base(base) != streamsBaseName {
		return
	}
	os.RemoveAll(dir)
	os.Remove(base)
}

// liveIDs is the set of the ids of the sandboxes that have a container.
func liveIDs(ctx context.Context, eng engine) (map[string]bool, error) {
	all, err := list(ctx, eng)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, c := range all {
		live[c.ID] = true
	}
	return live, nil
}

// staleDirs lists the directories in base (one per sandbox id, streams' or disks') of sandboxes
// that have no container in live, made more than a minute ago: a sandbox being created has its
// directories before its container.
func staleDirs(base string, live map[string]bool) []string {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || live[e.Name()] || time.Since(info.ModTime()) < time.Minute {
			continue
		}
		out = append(out, filepath.Join(base, e.Name()))
	}
	return out
}

// DirectStreams reports whether this handle's port streams are direct (false until its first
// DialPort or ListenPort), and why not when the direct path could not be set up.
func (s *Sandbox) DirectStreams() (bool, error) {
	a := s.agent.Current()
	if a == nil {
		return false, nil
	}
	return a.DirectStreams()
}
