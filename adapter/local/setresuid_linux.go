//go:build linux && !sandboxer_portable && !386 && !arm

package local

import "golang.org/x/sys/unix"

// sysSetresuid is setresuid(2) with 32-bit uids.
const sysSetresuid = unix.SYS_SETRESUID
