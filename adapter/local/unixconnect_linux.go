//go:build linux && (amd64 || arm64) && !sandboxer_portable

package local

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The unix-connect layer: a command connects only to unix sockets its own sandbox made.
//
// A socket file can be connected to by its path wherever the view shows it, whichever network
// namespace its socket is in: a host program's socket in the workspace (an editor's, tmux's in a
// /tmp workspace, git's fsmonitor, a dev server's) would take a command's connection, and
// Landlock (before ABI 9) cannot refuse it. So every connect(2) of a command is a seccomp user
// notification, carried out by the helper's supervisor, a process of its own that the filter
// does not apply to: it copies the address once, takes a copy of the command's socket
// (pidfd_getfd), and, for a unix socket's path, opens the socket file (O_PATH, from the command's
// working directory), asks the kernel (sock_diag) whether a socket of the sandbox's network
// namespace is bound to that very inode (in the host's network namespace, where commands with
// network run: a socket of the sandbox's own uid), and connects through the opened file
// (/proc/self/fd/N): what was checked is what is connected, nothing is read twice. The call is
// never let through to the kernel as is (SECCOMP_USER_NOTIF_FLAG_CONTINUE): its address and its
// descriptor could change in between. Other connects (TCP to loopback, abstract unix names) are
// carried out the same way with what was copied: the supervisor shares the helper's namespaces
// and Landlock domain, so they are held to the commands' rules. A refused connect fails with
// EACCES. See seccompFilter for the datagram sockets commands do not get.

const supervisorFD = 3 // the supervisor's end of its connection to the helper

// supervisor is the helper's side of its supervisor: started before the helper drops its
// capabilities, handed the filter's listener once it is installed.
type supervisor struct {
	conn *os.File
	pid  int
}

// startSupervisor starts this binary as the supervisor, in the helper's namespaces and Landlock
// domain, before the helper gives up its capabilities: the supervisor keeps them, within the
// sandbox's user namespace, so that it may read a command's memory and descriptors where Yama
// would refuse a process that is not the command's ancestor, and so that commands, which have
// none, cannot trace it.
func startSupervisor(exe, peers string) (*supervisor, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fds[1])
	null, err := os.Open(os.DevNull)
	if err != nil {
		unix.Close(fds[0])
		return nil, err
	}
	defer null.Close()
	pid, err := syscall.ForkExec(exe, []string{supervisorArg0, peers}, &syscall.ProcAttr{
		Env:   []string{supervisorEnv + "=1"},
		Files: []uintptr{null.Fd(), null.Fd(), 2, uintptr(fds[1])},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("%s: %w", exe, err)
	}
	return &supervisor{conn: os.NewFile(uintptr(fds[0]), "supervisor"), pid: pid}, nil
}

// hand gives the supervisor the filter's listener and waits for it to say it serves.
func (s *supervisor) hand(listener int) error {
	defer s.conn.Close()
	if err := sendFile(s.conn, "listener", []int{listener}); err != nil {
		return err
	}
	b := make([]byte, 1)
	n, err := s.conn.Read(b)
	if n != 1 || err != nil {
		return fmt.Errorf("the supervisor did not start: %v", err)
	}
	return nil
}

// kill ends a supervisor that will not serve.
func (s *supervisor) kill() {
	_ = unix.Kill(s.pid, unix.SIGKILL)
	s.conn.Close()
}

// The kernel's seccomp_data, seccomp_notif and seccomp_notif_resp.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// supervisorMain serves the listener it is handed until the helper's namespace ends.
func supervisorMain(peers string) int {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	conn := os.NewFile(supervisorFD, "helper")
	_, files, err := recvFiles(conn, make([]byte, 64), make([]byte, unix.CmsgSpace(4)))
	if err != nil || len(files) != 1 {
		fmt.Fprintln(os.Stderr, "sandboxer unix supervisor: no listener:", err)
		return 2
	}
	sv := &unixSupervisor{lf: files[0], listener: int(files[0].Fd()), peers: peers, uid: uint32(os.Getuid())}
	// /proc/PID/cwd names a command by the pid the notification gives, in this PID namespace:
	// only when /proc is this namespace's (the proc layer) may relative paths be looked up.
	self, _ := os.Readlink("/proc/self")
	sv.procOK = self == strconv.Itoa(os.Getpid())
	if _, err := conn.Write([]byte{1}); err != nil {
		return 2
	}
	conn.Close()
	sv.serve()
	return 0
}

type unixSupervisor struct {
	lf       *os.File // the listener, held open
	listener int
	peers    string
	uid      uint32 // this process's uid (sock_diag reports uids as the asking socket's user namespace sees them)
	procOK   bool
}

func (sv *unixSupervisor) serve() {
	for {
		var n seccompNotif
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(sv.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
		switch e {
		case 0:
			go sv.answer(n)
		case unix.EINTR, unix.ENOENT: // ENOENT: the task went away before it was received
		default:
			fmt.Fprintln(os.Stderr, "sandboxer unix supervisor:", e)
			return
		}
	}
}

// answer carries out one notified call and replies with its result.
func (sv *unixSupervisor) answer(n seccompNotif) {
	resp := seccompNotifResp{ID: n.ID}
	if errno := sv.connect(n); errno != 0 {
		resp.Error = -int32(errno)
	}
	// ENOENT: the task was killed meanwhile; nothing to tell.
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(sv.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
}

// valid says whether the notification n still stands: its task has not gone (and its pid been
// given to another) since it was received.
func (sv *unixSupervisor) valid(n seccompNotif) bool {
	id := n.ID
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(sv.listener), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// connect carries out connect(fd, addr, addrlen) for the task of n, and returns its errno.
func (sv *unixSupervisor) connect(n seccompNotif) unix.Errno {
	if n.Data.Nr != unix.SYS_CONNECT {
		return unix.ENOSYS
	}
	fd, ptr, size := int(int32(n.Data.Args[0])), n.Data.Args[1], int(int32(n.Data.Args[2]))
	if size < 0 || size > unix.SizeofSockaddrAny {
		return unix.EINVAL
	}
	addr := make([]byte, size)
	if size > 0 {
		local := []unix.Iovec{{Base: &addr[0], Len: uint64(size)}}
		remote := []unix.RemoteIovec{{Base: uintptr(ptr), Len: size}}
		if m, err := unix.ProcessVMReadv(int(n.Pid), local, remote, 0); err != nil || m != size {
			return unix.EFAULT
		}
	}
	pidfd, err := threadPidfd(int(n.Pid))
	if err != nil {
		return unix.ESRCH
	}
	defer unix.Close(pidfd)
	// The pid is the task's as long as the notification stands: checked after it is held.
	if !sv.valid(n) {
		return unix.ESRCH
	}
	sock, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	defer unix.Close(sock)
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return errnoOf(err, unix.ENOTSOCK)
	}
	if domain == unix.AF_UNIX && size > 2 && binary.NativeEndian.Uint16(addr) == unix.AF_UNIX && addr[2] != 0 {
		return sv.connectPath(n, sock, addr[2:])
	}
	// Everything else as copied: an abstract name (scoped by Landlock, and the sandbox's own
	// in its network namespace), an unnamed address, another family.
	return rawConnect(sock, addr)
}

// connectPath connects sock to the socket file at path (as the task of n would look it up) if
// the sandbox made that socket.
func (sv *unixSupervisor) connectPath(n seccompNotif, sock int, path []byte) unix.Errno {
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	dir := unix.AT_FDCWD // an absolute path: the view is every command's root (none may chroot)
	if path[0] != '/' {
		if !sv.procOK {
			return unix.EACCES
		}
		d, err := unix.Open("/proc/"+strconv.Itoa(int(n.Pid))+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return unix.ESRCH
		}
		defer unix.Close(d)
		if !sv.valid(n) {
			return unix.ESRCH
		}
		dir = d
	}
	f, err := unix.Openat(dir, string(path), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return errnoOf(err, unix.ENOENT)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return errnoOf(err, unix.EACCES)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return unix.ECONNREFUSED // as the kernel says of a file that is not a socket
	}
	if ours, err := sv.bound(st); err != nil || !ours {
		return unix.EACCES
	}
	return errnoOf(unix.Connect(sock, &unix.SockaddrUnix{Name: "/proc/self/fd/" + strconv.Itoa(f)}), unix.ECONNREFUSED)
}

// bound says whether a socket of the sandbox is bound to the socket file st: one of this network
// namespace's (unix sockets belong to the namespace of the task that made them), and, where that
// is the host's, of this process's uid: the sandbox's host uid, the only one its user namespace
// maps (another's is the overflow uid here).
func (sv *unixSupervisor) bound(st unix.Stat_t) (bool, error) {
	socks, err := unixSockets()
	if err != nil {
		return false, err
	}
	for _, s := range socks {
		if s.ino == uint32(st.Ino) && s.major == unix.Major(st.Dev) && s.minor == unix.Minor(st.Dev) &&
			(sv.peers == peersNetNS || s.uid == sv.uid) {
			return true, nil
		}
	}
	return false, nil
}

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd of a thread that is not its process's leader.
const pidfdThread = unix.O_EXCL

// threadPidfd opens a pidfd for the thread tid (a notification names the calling thread, in a Go
// or Java program rarely the leader): of the thread itself where the kernel can, else of its
// process (/proc/TID/status's Tgid), whose descriptor table the thread shares.
func threadPidfd(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, pidfdThread)
	if err != unix.EINVAL {
		return fd, err
	}
	if fd, err = unix.PidfdOpen(tid, 0); err != unix.EINVAL && err != unix.ENOENT {
		return fd, err // the leader itself, on a kernel without PIDFD_THREAD
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return -1, err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Tgid:")); ok {
			tgid, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return -1, err
			}
			return unix.PidfdOpen(tgid, 0)
		}
	}
	return -1, unix.ESRCH
}

func rawConnect(sock int, addr []byte) unix.Errno {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(p), uintptr(len(addr)))
	return e
}

// errnoOf is err's errno: 0 for nil, otherwise when it has none.
func errnoOf(err error, otherwise unix.Errno) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return otherwise
}

// boundSocket is a bound unix socket as sock_diag reports it: the inode its file has (its low 32
// bits: the kernel reports no more), and its uid as this process's user namespace sees it.
type boundSocket struct {
	ino          uint32
	major, minor uint32
	uid          uint32
}

// sock_diag's unix requests and attributes (linux/unix_diag.h).
const (
	udiagShowVFS = 0x2
	udiagShowUID = 0x40
	unixDiagVFS  = 1
	unixDiagUID  = 7
)

// unixSockets lists the bound unix sockets of this process's network namespace.
func unixSockets() ([]boundSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// nlmsghdr, then unix_diag_req: family, protocol, pad, states, ino, show, cookie[2].
	req := make([]byte, unix.NLMSG_HDRLEN+24)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1)
	body := req[unix.NLMSG_HDRLEN:]
	body[0] = unix.AF_UNIX
	ne.PutUint32(body[4:], ^uint32(0))
	ne.PutUint32(body[12:], udiagShowVFS|udiagShowUID)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	var socks []boundSocket
	buf := make([]byte, 1<<16)
	for {
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:m])
		if err != nil {
			return nil, err
		}
		for _, msg := range msgs {
			switch msg.Header.Type {
			case unix.NLMSG_DONE:
				return socks, nil
			case unix.NLMSG_ERROR:
				return nil, errors.New("sock_diag: the kernel refused the dump")
			}
			if s, ok := parseUnixDiag(msg.Data); ok {
				socks = append(socks, s)
			}
		}
	}
}

// parseUnixDiag reads one unix_diag_msg (16 bytes) and its attributes; ok when it has a file.
func parseUnixDiag(b []byte) (s boundSocket, ok bool) {
	ne := binary.NativeEndian
	for a := b[min(len(b), 16):]; len(a) >= 4; {
		l := int(ne.Uint16(a))
		if l < 4 || l > len(a) {
			break
		}
		data := a[4:l]
		switch ne.Uint16(a[2:]) {
		case unixDiagVFS:
			if len(data) >= 8 {
				// The inode, and the kernel's own dev_t (major << 20 | minor).
				dev := ne.Uint32(data[4:])
				s.ino, s.major, s.minor, ok = ne.Uint32(data), dev>>20, dev&(1<<20-1), true
			}
		case unixDiagUID:
			if len(data) >= 4 {
				s.uid = ne.Uint32(data)
			}
		}
		a = a[min(len(a), (l+3)&^3):]
	}
	return s, ok
}
