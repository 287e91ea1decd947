package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Platform says what this system allows the adapters (Linux: everything, as the probes below
// find it).
func Platform() Check {
	return Check{Name: "platform", OK: true, Detail: platformName() + ": every adapter; the local adapter's kernel isolation as the probes below find it"}
}

// NetworkNamespace starts `true` in a new user and network namespace (and, when that is refused,
// in a new network namespace alone, which needs CAP_SYS_ADMIN): this is what the local adapter
// needs to cut a command off the network.
func NetworkNamespace(ctx context.Context) Check {
	c := Check{Name: "network namespace"}
	bin, err := exec.LookPath("true")
	if err != nil {
		c.Detail = "cannot probe: `true` not found on PATH"
		return c
	}
	try := func(attr *syscall.SysProcAttr) error {
		cmd := exec.CommandContext(ctx, bin)
		cmd.SysProcAttr = attr
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		return cmd.Run()
	}
	uid, gid := os.Getuid(), os.Getgid()
	userErr := try(&syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
	})
	if userErr == nil {
		c.OK, c.Detail = true, "user+network namespaces can be created"
		return c
	}
	netErr := try(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET})
	if netErr == nil {
		c.OK, c.Detail = true, fmt.Sprintf("network namespaces can be created (privileged; user namespace refused: %v)", userErr)
		return c
	}
	c.Detail = fmt.Sprintf("refused: user+net: %v; net: %v", userErr, netErr)
	return c
}

// landlockCreateRulesetVersion is LANDLOCK_CREATE_RULESET_VERSION.
const landlockCreateRulesetVersion = 1

// Landlock asks the kernel for its Landlock ABI version (landlock_create_ruleset with the VERSION
// flag): 0 with an error when Landlock is missing or disabled.
func Landlock() Check {
	c := Check{Name: "landlock"}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, landlockCreateRulesetVersion)
	switch {
	case errno == 0:
		c.OK, c.Detail = true, fmt.Sprintf("ABI version %d", abi)
	case errors.Is(errno, unix.ENOSYS):
		c.Detail = "not supported by this kernel (ENOSYS)"
	case errors.Is(errno, unix.EOPNOTSUPP):
		c.Detail = "supported by the kernel but disabled at boot (EOPNOTSUPP)"
	default:
		c.Detail = errno.Error()
	}
	return c
}
