package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/internal/diskcap"
)

// The workspace's size cap (Config.WorkspaceBytes, issue 34, item 5). Docker's anonymous volume
// lives on the daemon's root file system without a size (the local driver has none, overlay2's
// size option needs xfs project quotas), so with a daemon on this host the adapter makes the
// workspace itself: an ext4 file system of the cap's size in a sparse file
// (STATE/docker/disks/ID/workspace.ext4), loop-mounted at STATE/docker/disks/ID/fs, whose
// directories workspace and home are bound at /workspace and at HOME (adapter.DefaultHome)
// instead of the volumes (package adapter/internal/diskcap): one cap for both, so that a command
// cannot fill the host's disk through HOME either. (Containers made before HOME had the file
// system mounted at STATE/docker/disks/ID/workspace and bound whole at /workspace: diskAt
// recognises that layout, and Stop, Prune and the janitor release it the same.) Stop releases
// it once the container is gone; for a sandbox that is not persistent the janitor does when this
// process dies first (the daemon removes the container then); Prune releases those of the
// containers it removes and those whose containers are gone.

// DefaultWorkspaceBytes caps the workspace (Config.WorkspaceBytes).
const DefaultWorkspaceBytes = 10 << 30

// disksDirName is the directory of the workspaces' file systems under the state directory.
const disksDirName = "disks"

// defaultStateDir is sandboxer's state directory, as oci.DefaultStateDir and the CLI's:
// $XDG_STATE_HOME/sandboxer, or ~/.local/state/sandboxer, or sandboxer-state under the system
// temporary directory.
func defaultStateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sandboxer")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "sandboxer")
	}
	return filepath.Join(os.TempDir(), "sandboxer-state")
}

func (c Config) stateDir() string {
	if c.StateDir == "" {
		return defaultStateDir()
	}
	return c.StateDir
}

// workspaceBytes is the cap of the workspace, 0 for none.
func (c Config) workspaceBytes() int64 { return orDefault(c.WorkspaceBytes, DefaultWorkspaceBytes) }

// disksBase holds the sandboxes' workspace file systems.
func (c Config) disksBase() string { return filepath.Join(c.stateDir(), "docker", disksDirName) }

// disk is one sandbox's capped workspace and HOME: dir holds the image file and the mount point.
type disk struct {
	dir string
	// legacy: the file system is mounted at dir/workspace and is the workspace (a container made
	// before HOME was on it).
	legacy bool
}

// Names in a disk's directory: the mount point, and the mount point of the legacy layout.
const (
	fsDirName     = "fs"
	legacyDirName = "workspace"
)

func (d disk) image() string { return filepath.Join(d.dir, diskcap.ImageName) }

// mount is where the file system is mounted on the host.
func (d disk) mount() string {
	if d.legacy {
		return filepath.Join(d.dir, legacyDirName)
	}
	return filepath.Join(d.dir, fsDirName)
}

// workspace and home are the directories of the file system bound at /workspace and at HOME
// (the legacy layout's workspace is the file system's root, and it has no home).
func (d disk) workspace() string {
	if d.legacy {
		return d.mount()
	}
	return filepath.Join(d.mount(), "workspace")
}

func (d disk) home() string { return filepath.Join(d.mount(), "home") }

// newDisk makes sandbox id's capped workspace when the daemon is on this host and the host
// allows it, and returns it with the directory to bind at /workspace; otherwise an empty disk and
// why the workspace is not capped. lookAfter registers it with the janitor.
func newDisk(ctx context.Context, eng engine, cfg Config, id string, lookAfter bool) (disk, error) {
	size := cfg.workspaceBytes()
	if size <= 0 {
		return disk{}, errors.New("no cap asked for (WorkspaceBytes -1)")
	}
	if !strings.HasPrefix(eng.DaemonHost(), "unix://") {
		return disk{}, errors.New("the daemon is not on this host: its volumes have no size")
	}
	uid, gid, ok := numericUser(cfg.user())
	if !ok {
		return disk{}, fmt.Errorf("user %q is not numeric: the workspace's owner is unknown", cfg.user())
	}
	if err := diskcap.Check(); err != nil {
		return disk{}, err
	}
	d := disk{dir: filepath.Join(cfg.disksBase(), id)}
	if err := os.MkdirAll(d.mount(), 0o755); err != nil {
		return disk{}, err
	}
	os.Chmod(d.dir, 0o700) // the image file is nobody else's business
	if lookAfter {
		janitor.Register(d.dir)
	}
	err := diskcap.Mount(ctx, d.image(), d.mount(), size, uid, gid)
	for _, dir := range []string{d.workspace(), d.home()} {
		if err == nil {
			if err = os.Mkdir(dir, 0o755); err == nil {
				err = os.Lchown(dir, uid, gid)
			}
		}
	}
	if err != nil {
		d.release()
		if lookAfter {
			janitor.Release(d.dir)
		}
		return disk{}, err
	}
	return d, nil
}

// numericUser parses "UID" or "UID:GID".
func numericUser(u string) (uid, gid int, ok bool) {
	us, gs, hasGroup := strings.Cut(u, ":")
	uid, err := strconv.Atoi(us)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	gid = uid
	if hasGroup {
		if gid, err = strconv.Atoi(gs); err != nil || gid < 0 {
			return 0, 0, false
		}
	}
	return uid, gid, true
}

// release unmounts the disk, removes its file and its directory; nothing for an empty disk.
func (d disk) release() error {
	if d.dir == "" {
		return nil
	}
	err := diskcap.Release(d.image(), d.mount())
	if err == nil {
		os.Remove(d.mount())
		err = os.Remove(d.dir)
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		os.Remove(filepath.Dir(d.dir)) // the base, when empty
	}
	return err
}

// diskOf returns the disk bound at /workspace in a container, if it is one of this adapter's:
// the source is ID/fs/workspace, or ID/workspace in the legacy layout.
func diskOf(ins client.ContainerInspectResult) disk {
	for _, m := range ins.Container.Mounts {
		if m.Destination == adapter.DefaultWorkspace && m.Type == "bind" {
			parent := filepath.Dir(m.Source)
			if filepath.Base(m.Source) == "workspace" && filepath.Base(parent) == fsDirName {
				return diskAt(filepath.Dir(parent))
			}
			return diskAt(parent)
		}
	}
	return disk{}
}

// diskAt is the disk of directory dir when dir has the shape of one (STATE/docker/disks/ID):
// the janitor and a container's mounts name nothing else. A directory holding the legacy mount
// point (ID/workspace) is of the legacy layout.
func diskAt(dir string) disk {
	if !filepath.IsAbs(dir) || filepath.Base(filepath.Dir(dir)) != disksDirName ||
		filepath.Base(filepath.Dir(filepath.Dir(dir))) != "docker" {
		return disk{}
	}
	_, err := os.Lstat(filepath.Join(dir, legacyDirName))
	return disk{dir: filepath.Clean(dir), legacy: err == nil}
}

// inForce reports whether the container's /workspace is the disk's file system: the host's mount
// is there and the container's process (pid, as the daemon reports it, in this pid namespace)
// sees the same device at /workspace.
func (d disk) inForce(pid int) bool {
	if d.dir == "" || pid <= 0 || !diskcap.Mounted(d.image(), d.mount()) {
		return false
	}
	var host, inside syscall.Stat_t
	return syscall.Stat(d.workspace(), &host) == nil &&
		syscall.Stat("/proc/"+strconv.Itoa(pid)+"/root"+adapter.DefaultWorkspace, &inside) == nil &&
		host.Dev == inside.Dev
}

// bind sets up hc and cc to bind the disk's workspace and home at /workspace and HOME in place of
// the anonymous volumes.
func (d disk) bind(cc *container.Config, hc *container.HostConfig) {
	if d.dir == "" {
		return
	}
	cc.Volumes = nil
	hc.Binds = append(hc.Binds, d.workspace()+":"+adapter.DefaultWorkspace, d.home()+":"+adapter.DefaultHome)
}

// sweepDisks releases the disks of the ids in gone, and those of sandboxes without a container
// in live (staleDirs); nil live (the containers could not be listed) sweeps nothing more.
func sweepDisks(cfg Config, live map[string]bool, gone []string) {
	for _, id := range gone {
		if id != "" && !strings.ContainsAny(id, `/\`) && id != "." && id != ".." {
			diskAt(filepath.Join(cfg.disksBase(), id)).release()
		}
	}
	if live == nil {
		return
	}
	for _, dir := range staleDirs(cfg.disksBase(), live) {
		diskAt(dir).release()
	}
}

// releaseDisk releases d (once its container is gone) and tells the janitor when it looked after
// it.
func releaseDisk(d disk, lookedAfter bool) error {
	err := d.release()
	if err == nil && lookedAfter {
		janitor.Release(d.dir)
	}
	if err != nil {
		return classify("docker stop", err)
	}
	return nil
}

// diskInForce returns the layer of the capped workspace when the container's /workspace is it,
// checked once (at the first command), else "".
func (s *Sandbox) diskInForce() string {
	s.diskOnce.Do(func() {
		if s.disk.dir == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ins, err := s.eng.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{})
		if err != nil || ins.Container.State == nil {
			return
		}
		if s.disk.inForce(ins.Container.State.Pid) {
			s.diskLayer = diskcap.Layer(s.diskBytes)
		} else {
			s.diskErr = errors.New("the container's /workspace is not the capped file system (a daemon in another mount or pid namespace?)")
		}
	})
	return s.diskLayer
}

// WorkspaceCap returns the size of the file system at /workspace (Config.WorkspaceBytes), or 0
// and why the workspace is not capped.
func (s *Sandbox) WorkspaceCap() (int64, error) {
	if s.diskInForce() == "" {
		if s.diskErr == nil {
			return 0, errors.New("the workspace is not capped")
		}
		return 0, s.diskErr
	}
	return s.diskBytes, nil
}

// releaseOrphanDisk is the janitor's release of a disk whose owner died: the daemon removes the
// container itself (its agent saw its stream end), so the loop device goes when it has; the
// mount and the file go now, and the release is retried for a while if the unmount fails.
func releaseOrphanDisk(dir string) {
	d := diskAt(dir)
	if d.dir == "" {
		return
	}
	for i := 0; i < 50; i++ {
		if d.release() == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
