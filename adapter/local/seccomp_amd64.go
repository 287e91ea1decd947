//go:build linux && !sandboxer_portable

package local

import "golang.org/x/sys/unix"

const (
	auditArch   = unix.AUDIT_ARCH_X86_64
	auditX32Bit = 0x40000000 // __X32_SYSCALL_BIT
)

var modeChecks = []modeCheck{
	{nr: unix.SYS_CHMOD, mode: 1, flags: -1},
	{nr: unix.SYS_FCHMOD, mode: 1, flags: -1},
	{nr: unix.SYS_FCHMODAT, mode: 2, flags: -1},
	{nr: unix.SYS_FCHMODAT2, mode: 2, flags: -1},
	{nr: unix.SYS_MKNOD, mode: 1, flags: -1},
	{nr: unix.SYS_MKNODAT, mode: 2, flags: -1},
	{nr: unix.SYS_CREAT, mode: 1, flags: -1},
	{nr: unix.SYS_OPEN, mode: 2, flags: 1},
	{nr: unix.SYS_OPENAT, mode: 3, flags: 2},
}

var enosys = []uint32{unix.SYS_OPENAT2, unix.SYS_IO_URING_SETUP}
