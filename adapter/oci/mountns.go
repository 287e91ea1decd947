package oci

import (
	"path/filepath"
	"strings"
)

// With a user namespace, the container's process reaches its root file system as the mapped
// root, a host uid that owns nothing on the host: every directory above the tree must be
// searchable by others. A state directory under /root (mode 0700, the CLI's default for root)
// is not. Rather than give up the user namespace there, the runtime is started in a private mount
// namespace of its own in which the highest unsearchable directory is covered by a tmpfs
// (mode 0755) that holds only what the runtime needs, bind-mounted back at the same paths: the
// adapter's directory in the state directory, and a given workspace below the cover. The paths
// in config.json are the real ones; the host's mount table never changes, and the namespace ends
// when the runtime's start command exits (the container has its own, made from it, and detaches
// everything outside its root).

// The same private namespace serves crun on a hybrid cgroup host (see hybridCgroup): there the
// cgroup v2 hierarchy at /sys/fs/cgroup/unified is detached in the namespace, so that crun sees
// the v1 hierarchies alone, which hold every controller the sandbox is limited by.

// reachPlan says how the runtime is started: directly (the zero plan), or in a private mount
// namespace with a directory covered and mounts detached.
type reachPlan struct {
	cover  string   // the directory to cover with a tmpfs
	keep   []string // directories bind-mounted back below the cover
	detach []string // mount points detached (lazily unmounted) in the namespace
}

// planReach finds the highest directory above dir (dir excluded) that uid cannot search.
func planReach(dir string, uid uint32, keep ...string) reachPlan {
	dir = filepath.Clean(dir)
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	p := "/"
	for _, c := range parts[:len(parts)-1] {
		p = filepath.Join(p, c)
		if ok, _ := searchable(p, uid, uid); !ok {
			plan := reachPlan{cover: p, keep: []string{dir}}
			for _, k := range keep {
				if k != "" && within(k, p) && !within(k, dir) {
					plan.keep = append(plan.keep, k)
				}
			}
			return plan
		}
	}
	return reachPlan{}
}

func within(p, base string) bool {
	r, err := filepath.Rel(base, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../")
}
