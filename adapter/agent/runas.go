package agent

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// runAs is the user every command the agent starts runs as (RunAs); nil: the agent's own.
var runAs *syscall.Credential

// RunAs makes the agent start every command as spec ("uid[:gid]", or names of the image's
// /etc/passwd and /etc/group), with no supplementary groups. The agent then runs as root of the
// container with only the capabilities that switching users and signalling the commands need
// (SETUID, SETGID, KILL); the commands run as spec and get none (their exec as a user that is not
// root clears them): the agent is another user's process to them, so they can neither trace it,
// open its descriptors or memory through /proc, nor signal it, nor connect to its hub (issue 34).
// The agent binary calls it once, before it serves; without it (a sandbox whose user is root,
// or the tests of this package) commands run as the agent.
func RunAs(spec string) error {
	cred, err := lookupUser(spec)
	if err != nil {
		return err
	}
	if cred.Uid == uint32(os.Geteuid()) {
		return nil // the agent's own user: nothing to switch
	}
	runAs = cred
	return nil
}

// lookupUser resolves spec as RunAs takes it.
func lookupUser(spec string) (*syscall.Credential, error) {
	name, group, hasGroup := strings.Cut(spec, ":")
	if name == "" || (hasGroup && group == "") {
		return nil, fmt.Errorf("run as %q: want uid[:gid] or user[:group]", spec)
	}
	uid, err := strconv.ParseUint(name, 10, 32)
	gid := uid
	if err != nil {
		u, lerr := user.Lookup(name)
		if lerr != nil {
			return nil, fmt.Errorf("run as %q: %w", spec, lerr)
		}
		uid, _ = strconv.ParseUint(u.Uid, 10, 32)
		gid, _ = strconv.ParseUint(u.Gid, 10, 32)
	} else if u, lerr := user.LookupId(name); lerr == nil {
		gid, _ = strconv.ParseUint(u.Gid, 10, 32)
	}
	if hasGroup {
		g, err := strconv.ParseUint(group, 10, 32)
		if err != nil {
			gr, lerr := user.LookupGroup(group)
			if lerr != nil {
				return nil, fmt.Errorf("run as %q: %w", spec, lerr)
			}
			g, _ = strconv.ParseUint(gr.Gid, 10, 32)
		}
		gid = g
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// errNotOwn is why a hub directory or peer is refused.
var errNotOwn = errors.New("not the agent's own")

// Caps are the capabilities (without the CAP_ prefix) the agent holds as root of a container when
// the commands run as another user (Argv): to switch to that user and to signal its processes.
// The commands get none of them.
var Caps = []string{"SETUID", "SETGID", "KILL"}

// CapsMask is Caps as /proc/PID/status shows a capability set (CAP_KILL 5, CAP_SETGID 6,
// CAP_SETUID 7).
const CapsMask = 1<<5 | 1<<6 | 1<<7

// Separates reports whether argv, an agent's command line (at Path or BroughtPath), starts the
// commands as another user (Argv or ArgvAt with a user that SeparateUser accepts).
func Separates(argv []string) bool {
	return len(argv) > 2 && (argv[0] == Path || argv[0] == BroughtPath) && argv[1] == "-user"
}

// SeparateUser reports whether commands of a sandbox whose user is user ("uid[:gid]" or
// "name[:group]") run as another user than the agent: any user but root. The agent then runs as
// the container's root with Caps, and Argv tells it the commands' user.
func SeparateUser(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	return name != "" && name != "0" && name != "root"
}

// Argv is the agent's command line at Path for a sandbox whose commands run as user (see
// SeparateUser), with the agent's own flags after.
func Argv(user string, flags ...string) []string { return ArgvAt(Path, user, flags...) }

// ArgvAt is Argv for an agent at bin: one an adapter brought into an image that has none
// (BroughtPath).
func ArgvAt(bin, user string, flags ...string) []string {
	argv := []string{bin}
	if SeparateUser(user) {
		argv = append(argv, "-user", user)
	}
	return append(argv, flags...)
}
