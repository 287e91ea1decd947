// Package cgstat measures what one command cost from the host, for the receipts
// (adapter.Receipt) of the adapters whose commands run in a cgroup and a pid namespace of the
// host's kernel (local, oci, docker): the deltas of a cgroup's CPU and block I/O counters around
// the command, and its peak memory and process count (reset at the start where the kernel
// allows).
//
// It owns no cgroup: it reads (and, for the memory peak, resets) files of cgroups the adapters
// or their runtimes made. Every counter it cannot read is left missing in the receipt.
package cgstat

import (
	"bufio"
	"os"
	"strings"

	"github.com/sandboxer/sandboxer/adapter"
)

// Group is a cgroup as this host lays it out: a cgroup v2 directory, or the directories of the
// v1 hierarchies of the controllers a receipt reads (on a hybrid host, both: the v2 directory
// then gives the CPU time where it has a cgroup of its own).
type Group struct {
	V2                           string // cgroup v2 directory; "" for none
	CPUAcct, Memory, BlkIO, Pids string // v1 directories; "" for none
}

// Zero reports whether g names no directory at all.
func (g Group) Zero() bool { return g == Group{} }

// Meter is one command's measurement: Begin before it starts, End after it has ended.
type Meter struct {
	g Group
	m meter // the platform's state
}

// Begin reads the counters of g before a command, and resets its peaks where the kernel
// allows. The Meter may hold descriptors until End.
func Begin(g Group) *Meter {
	m := &Meter{g: g}
	m.begin()
	return m
}

// End fills r with what changed since Begin. A nil Meter leaves r as it is.
func (m *Meter) End(r *adapter.Receipt) {
	if m != nil {
		m.end(r)
	}
}

// Mount is one mounted cgroup hierarchy.
type Mount struct {
	Dir         string   // where it is mounted
	Root        string   // the cgroup its mount shows at Dir ("/" for the hierarchy's root)
	V2          bool     // the unified hierarchy
	Controllers []string // v1: the controllers of the hierarchy
}

// Mounts lists the cgroup hierarchies mounted in this process's mount namespace.
func Mounts() ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch qf[0] {
		case "cgroup2":
			out = append(out, Mount{Dir: pf[4], Root: pf[3], V2: true})
		case "cgroup":
			var ctrls []string
			for _, o := range strings.Split(qf[2], ",") {
				switch o {
				case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "clone_children", "xattr":
				default:
					if !strings.Contains(o, "=") {
						ctrls = append(ctrls, o)
					}
				}
			}
			out = append(out, Mount{Dir: pf[4], Root: pf[3], Controllers: ctrls})
		}
	}
	return out, sc.Err()
}
