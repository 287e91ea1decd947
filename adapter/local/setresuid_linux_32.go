//go:build linux && !sandboxer_portable && (386 || arm)

package local

import "golang.org/x/sys/unix"

// sysSetresuid is setresuid(2) with 32-bit uids (the plain call takes 16-bit ones here).
const sysSetresuid = unix.SYS_SETRESUID32
