package agent

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Protect makes the agent's process not dumpable: /proc/PID/fd, mem, environ and ptrace of it
// then need CAP_SYS_PTRACE, which no command has, even one of the agent's own user (a sandbox
// whose user is root). The processes it starts are dumpable again once they exec.
func Protect() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// asCommands runs f with the file system user of the commands (RunAs), so that what f opens
// or looks up is checked as for them: /proc/PID/environ of a command needs its user (or
// CAP_SYS_PTRACE, which the agent does not have), and a directory of the workspace may be open
// to its owner only. The file system user of one locked thread is switched for f, and back; a
// thread that could not be switched back is not unlocked, so the runtime ends it.
func asCommands(f func()) {
	if runAs == nil {
		f()
		return
	}
	runtime.LockOSThread()
	uid, gid := os.Geteuid(), os.Getegid()
	unix.Setfsgid(int(runAs.Gid))
	unix.Setfsuid(int(runAs.Uid))
	f()
	unix.Setfsuid(uid)
	unix.Setfsgid(gid)
	u, _ := unix.SetfsuidRetUid(-1)
	g, _ := unix.SetfsgidRetGid(-1)
	if u == uid && g == gid {
		runtime.UnlockOSThread()
	}
}

// peerUID is the user of the process at the other end of unix socket c (SO_PEERCRED).
func peerUID(fd uintptr) (int, error) {
	cr, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cr.Uid), nil
}
