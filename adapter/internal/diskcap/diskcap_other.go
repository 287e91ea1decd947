//go:build !linux

package diskcap

import (
	"context"
	"errors"
)

var errNotLinux = errors.New("a loop-mounted file system needs Linux")

// Check reports that workspaces cannot be capped off Linux.
func Check() error { return errNotLinux }

// Mount is not available off Linux.
func Mount(ctx context.Context, image, dir string, size int64, uid, gid int) error {
	return errNotLinux
}

// Release removes image (nothing is ever mounted off Linux).
func Release(image, dir string) error { return removeImage(image) }

// Mounted is false off Linux.
func Mounted(image, dir string) bool { return false }

// MountedAt is false off Linux.
func MountedAt(dir string) bool { return false }

// Loops is empty off Linux.
func Loops(image string) []string { return nil }

// Capacity is 0 off Linux.
func Capacity(dir string) int64 { return 0 }
