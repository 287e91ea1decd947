package local

import (
	"os"
	"slices"
)

// The names of the isolation layers, as they appear in adapter.Isolation.Layers and in Report.
const (
	LayerUserNS        = "userns"         // a user namespace: the other namespaces need no root
	LayerPIDNS         = "pidns"          // a PID namespace per sandbox: commands cannot see or signal host processes
	LayerIPCNS         = "ipcns"          // an IPC namespace per sandbox: System V shared memory, queues and semaphores are its own
	LayerUTSNS         = "utsns"          // a UTS namespace per sandbox: the hostname is "sandbox"
	LayerProc          = "proc"           // a private /proc showing only the sandbox's processes
	LayerKeyring       = "keyring"        // a fresh session keyring: the caller's keys are out of reach
	LayerNoCaps        = "no-caps"        // commands exec with no capability and cannot trace or signal the helper
	LayerNoSetuid      = "no-setuid"      // seccomp: no file gets the setuid or setgid bit (nor is created through io_uring or openat2)
	LayerFSView        = "fs-view"        // a file system view of system directories, workspace and TMPDIR only: no host socket, /run, /home or /sys
	LayerNetNS         = "netns"          // a network namespace with only loopback (network off)
	LayerLandlock      = "landlock"       // Landlock file system rules: writes only in the workspace and TMPDIR
	LayerLandlockScope = "landlock-scope" // Landlock scoping: no signals or abstract sockets to processes outside
	LayerLandlockNet   = "landlock-tcp"   // Landlock TCP bind/connect denied (only without a network namespace)
	LayerCgroup        = "cgroup"         // a cgroup per command: the whole tree is killed when it ends
	LayerLimits        = "limits"         // the sandbox's memory, process count and CPU limits (cgroup v2, or v1 on hybrid hosts)
	LayerPIDNSCommand  = "pidns-command"  // without cgroups: a PID namespace per command under a small init
	LayerUnprivileged  = "unprivileged"   // commands run as an unprivileged host uid (a sandbox's own when the caller is root), so file permissions apply to them
)

// LayerUnixConnect: commands connect only to unix sockets their own sandbox made (a seccomp
// supervisor carries out every connect), and have no unix datagram sockets; see
// unixconnect_linux.go.
const LayerUnixConnect = "unix-connect"

// LayerDisk: the workspace may grow by at most Config.Disk bytes, and its inodes are bounded too
// (a project quota; see quota_linux.go). Needed when Config.Disk is set.
const LayerDisk = "disk"

// LayerUIDPerSandbox: each sandbox is a host uid of its own, so per-uid keyrings and kernel quotas
// (keys, inotify instances) are no other sandbox's.
const LayerUIDPerSandbox = "uid-per-sandbox"

// HostUID is the base of the host uids (and gids) that commands run as when the sandboxer runs as
// root (root of the sandbox's user namespace is mapped to one): each sandbox leases one of
// HostUID+1 .. HostUID+65535 for its life (LayerUIDPerSandbox), and HostUID itself is the uid
// sandboxes share where none can be leased. No account and no convention uses the range, and it is
// outside the oci adapter's default range (2000000000..2000065535). The workspace and the other
// writable directories are idmapped mounts, so their files are the sandbox root's inside and stay
// the host root's on disk.
const HostUID = 2_000_065_536

// sandboxLayers are the layers of a sandbox's helper that every command needs (fail closed)
// unless Config.DisableLayers names them.
var sandboxLayers = []string{LayerUserNS, LayerPIDNS, LayerIPCNS, LayerUTSNS, LayerProc, LayerFSView,
	LayerLandlock, LayerKeyring, LayerNoCaps, LayerNoSetuid}

// neededLayers are the layers a command needs with isolation on (fail closed), less those cfg
// disables by name: sandboxLayers; without the network netns and unix-connect (landlock-tcp when
// netns is disabled), with it landlock-scope (the host's network namespace's abstract unix
// sockets are reachable but for scoping); unprivileged and uid-per-sandbox for a root caller, and
// unix-connect in the host's network namespace too, where it needs that uid; limits when any is
// set; disk when Config.Disk is.
func neededLayers(cfg Config, network bool) []string {
	need := slices.Clone(sandboxLayers)
	hostNet := true // the host's network namespace
	switch {
	case network:
		need = append(need, LayerLandlockScope)
	case slices.Contains(cfg.DisableLayers, LayerNetNS):
		need = append(need, LayerLandlockNet)
	default:
		need = append(need, LayerNetNS, LayerUnixConnect)
		hostNet = false
	}
	if os.Geteuid() == 0 {
		// Commands would be the host's root to file permissions, or share a uid (keyrings,
		// per-uid quotas) with the other sandboxes.
		need = append(need, LayerUnprivileged)
		if !slices.Contains(cfg.DisableLayers, LayerUnprivileged) { // else they are root's
			need = append(need, LayerUIDPerSandbox)
			if hostNet { // where sockets are told apart by that uid
				need = append(need, LayerUnixConnect)
			}
		}
	}
	if cfg.Memory != NoLimit || cfg.Pids != NoLimit || cfg.CPUs != 0 { // 0 is the default limit
		need = append(need, LayerLimits)
	}
	if cfg.Disk > 0 {
		need = append(need, LayerDisk)
	}
	return slices.DeleteFunc(need, func(l string) bool { return slices.Contains(cfg.DisableLayers, l) })
}

// needProcessTree says whether commands need their process tree killed as a whole (cgroup, or
// pidns-command without cgroups): unless cfg disables both.
func needProcessTree(cfg Config) bool {
	return !slices.Contains(cfg.DisableLayers, LayerCgroup) || !slices.Contains(cfg.DisableLayers, LayerPIDNSCommand)
}

// Isolation modes of Config.Isolation.
const (
	IsolationAuto = "auto" // every layer this machine allows (the default, also for "")
	IsolationOff  = "off"  // plain host processes in a process group; nothing is enforced by the kernel
)

// LayerStatus says whether one layer can be applied on this machine, and why not.
type LayerStatus struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"` // why it is not available
}

// Report is what Probe found: which isolation layers the local adapter can apply here.
type Report struct {
	Layers      []LayerStatus `json:"layers"`
	LandlockABI int           `json:"landlockABI"` // 0: no Landlock
	// Network, Filesystem and ProcessTree say whether the adapter.Isolation bits of the same name
	// can be true for commands on this machine.
	Network     bool `json:"network"`
	Filesystem  bool `json:"filesystem"`
	ProcessTree bool `json:"processTree"`
}

// Available reports whether the named layer can be applied.
func (r Report) Available(name string) bool {
	for _, l := range r.Layers {
		if l.Name == name {
			return l.Available
		}
	}
	return false
}
