//go:build linux && (amd64 || arm64) && !sandboxer_portable

package local

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A small seccomp filter, installed by the helper on every thread before it serves commands: no
// command can give a file the setuid or setgid bit, the one privilege a file made in the
// workspace could carry out of the sandbox (the workspace is a host directory, and inside the user
// namespace a command is root as the caller is: for a root caller, a setuid-root file any host
// user could run). chmod, fchmod, fchmodat, fchmodat2, mknod, mknodat with such a mode, and open,
// openat, creat that would create a file with it, fail with EPERM. openat2 (whose mode is behind a
// pointer) and io_uring (whose operations bypass seccomp) are ENOSYS: programs fall back to openat
// and plain calls. File capabilities need CAP_SETFCAP, which commands do not have (no-caps).
// Other architectures' system calls (i386 on amd64, and amd64's x32 ABI) are refused.
//
// Supervised (the unix-connect layer, see unixconnect_linux.go), connect(2) is a user
// notification the helper's supervisor carries out, and unix sockets are stream or seqpacket
// only: a datagram socket (SOCK_DGRAM, or SOCK_RAW, which unix sockets take as one) names its
// destination in sendmsg(2)'s message, where no filter can read it, so socket and socketpair of
// AF_UNIX with another type fail with EPERM. A stream socket ignores or refuses a destination
// in sendmsg, and a seqpacket socket ignores it: connect is their only way to a socket file.

// modeCheck is a system call whose mode argument must not carry S_ISUID or S_ISGID; flags is the
// argument holding open flags (-1: the call always creates).
type modeCheck struct {
	nr          uint32
	mode, flags int
}

// seccompFilter assembles the filter's BPF program.
func seccompFilter(supervised bool) []unix.SockFilter {
	var p program
	p.load(4) // arch
	p.jumpUnless(auditArch, "deny")
	p.load(0) // nr
	if auditX32Bit != 0 {
		p.jumpIf(0, auditX32Bit, "deny") // nr & __X32_SYSCALL_BIT: amd64's x32 ABI
	}
	for _, nr := range enosys {
		p.jumpIf(nr, 0, "enosys")
	}
	for i, c := range modeChecks {
		p.jumpIf(c.nr, 0, label("check", i))
	}
	if supervised {
		p.jumpIf(unix.SYS_CONNECT, 0, "notify")
		p.jumpIf(unix.SYS_SOCKET, 0, "unix")
		p.jumpIf(unix.SYS_SOCKETPAIR, 0, "unix")
	}
	p.ret(unix.SECCOMP_RET_ALLOW)
	if supervised {
		p.mark("notify")
		p.ret(unix.SECCOMP_RET_USER_NOTIF)
		p.mark("unix")
		p.load(16) // domain
		p.jumpUnless(unix.AF_UNIX, "allow")
		p.load(24) // type, less SOCK_NONBLOCK and SOCK_CLOEXEC
		p.and(0xf)
		p.jumpIf(unix.SOCK_STREAM, 0, "allow")
		p.jumpIf(unix.SOCK_SEQPACKET, 0, "allow")
		p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	}
	for i, c := range modeChecks {
		p.mark(label("check", i))
		if c.flags >= 0 {
			p.load(16 + 8*uint32(c.flags))
			// O_TMPFILE without its O_DIRECTORY bit: an opendir's mode argument is junk.
			p.and(unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY))
			p.jumpIf(0, 0, "allow") // does not create: the mode is unused
		}
		p.load(16 + 8*uint32(c.mode))
		p.and(unix.S_ISUID | unix.S_ISGID)
		p.jumpIf(0, 0, "allow")
		p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	}
	p.mark("allow")
	p.ret(unix.SECCOMP_RET_ALLOW)
	p.mark("enosys")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	p.mark("deny")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	return p.assemble()
}

func label(s string, i int) string { return s + string(rune('a'+i)) }

// installSeccomp installs the filter on every thread of this process (no_new_privs is set
// first, as an unprivileged filter needs it). Supervised, it returns the filter's notification
// listener (close-on-exec), -1 otherwise. A task waiting for its notification to be answered is
// woken only by a fatal signal once the supervisor has received it (where the kernel can: 5.19),
// so a connect is not carried out twice for one call.
func installSeccomp(supervised bool) (listener int, err error) {
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		return -1, e
	}
	code := seccompFilter(supervised)
	prog := unix.SockFprog{Len: uint16(len(code)), Filter: &code[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_TSYNC)
	if supervised {
		flags |= unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	if e == unix.EINVAL && supervised { // before 5.19
		flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
		r, _, e = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	}
	if e != 0 {
		return -1, e
	}
	if !supervised {
		return -1, nil
	}
	return int(r), nil
}

// program is a tiny BPF assembler with forward labels.
type program struct {
	code   []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at    int
	label string
	true_ bool // the jt offset (else jf)
}

func (p *program) emit(f unix.SockFilter) { p.code = append(p.code, f) }

func (p *program) load(off uint32) {
	p.emit(unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (p *program) and(k uint32) {
	p.emit(unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: k})
}

func (p *program) ret(k uint32) { p.emit(unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k}) }

// jumpIf jumps to label when A == k (mask 0), or when A & mask != 0 (mask != 0, k ignored).
func (p *program) jumpIf(k, mask uint32, label string) {
	code := uint16(unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K)
	if mask != 0 {
		code, k = unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, mask
	}
	p.fixups = append(p.fixups, fixup{at: len(p.code), label: label, true_: true})
	p.emit(unix.SockFilter{Code: code, K: k})
}

// jumpUnless jumps to label when A != k.
func (p *program) jumpUnless(k uint32, label string) {
	p.fixups = append(p.fixups, fixup{at: len(p.code), label: label})
	p.emit(unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
}

func (p *program) mark(label string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[label] = len(p.code)
}

func (p *program) assemble() []unix.SockFilter {
	for _, f := range p.fixups {
		to, ok := p.labels[f.label]
		if !ok || to <= f.at || to-f.at-1 > 255 {
			panic(errors.New("seccomp filter: bad jump to " + f.label))
		}
		if f.true_ {
			p.code[f.at].Jt = uint8(to - f.at - 1)
		} else {
			p.code[f.at].Jf = uint8(to - f.at - 1)
		}
	}
	return p.code
}
