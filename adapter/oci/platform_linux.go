package oci

import (
	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// needLinux: the oci adapter runs here.
func needLinux() error { return nil }

// defaultSeccomp is moby's default seccomp profile for the process of s (after its capabilities).
func defaultSeccomp(s *specs.Spec) (*specs.LinuxSeccomp, error) { return seccomp.GetDefaultProfile(s) }
