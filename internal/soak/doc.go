// Package soak holds the soak test of "nothing outlives its owner" (issue 18): owner processes
// that create and destroy sandboxes on every adapter while commands run, killed with SIGKILL
// every 10 sandboxes, and a check that nothing of them is left on the host (containers,
// processes, cgroups, mounts, temporary directories). It has no code besides the test.
package soak
