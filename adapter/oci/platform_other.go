//go:build !linux

package oci

import (
	"errors"
	"os/exec"
	"runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxer/sandboxer/errs"
)

// The oci adapter needs Linux: an OCI runtime (runc, runsc, crun) runs Linux containers on the
// host's own kernel. Elsewhere the package builds, so that programs using it build too, and every
// entry point that needs a runtime fails with errs.SandboxUnavailable saying so.

var errNotLinux = errors.New("the oci adapter needs Linux (runc, runsc and crun run containers on the host's Linux kernel); on " +
	runtime.GOOS + " use the docker adapter (Docker Desktop) or the memory adapter")

// needLinux refuses: see errNotLinux.
func needLinux() error { return errs.New(errs.SandboxUnavailable, "oci", "", "%s", errNotLinux) }

func defaultSeccomp(*specs.Spec) (*specs.LinuxSeccomp, error) { return nil, errNotLinux }

func (pl reachPlan) start(*exec.Cmd) error { return errNotLinux }

const unifiedCgroup = ""

func hybridCgroup() bool { return false }
