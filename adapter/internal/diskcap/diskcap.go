// Package diskcap gives a container's workspace a size cap (issue 34, item 5): an ext4 file
// system made in a sparse file of the cap's size, attached to a loop device and mounted on the
// host at the directory the container binds as /workspace. A command that writes past the cap
// gets ENOSPC ("No space left on device") inside the sandbox; the host's file system holding the
// file loses at most the cap, whatever the sandbox writes.
//
// It needs root on Linux, a loop device (/dev/loop-control) and mkfs.ext4 (e2fsprogs). Where any
// of these is missing, Check says why and the adapters run the sandbox without the cap, leaving
// the layer (Layer) out of its results.
//
// Everything is found again by its paths (an image file and a mount directory), so that Stop,
// Prune and a janitor whose owner was SIGKILLed release the same way: Release unmounts the
// directory and removes the file, and the loop device, attached with LO_FLAGS_AUTOCLEAR, goes
// with the last user of the file system (the host's mount, and the container's while it lives).
package diskcap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// ImageName is the conventional name of the file that holds a workspace's file system.
const ImageName = "workspace.ext4"

// MinBytes is the smallest cap: mkfs.ext4 needs room for its metadata.
const MinBytes = 4 << 20

// Layer is the isolation layer of a workspace capped at size bytes: "disk:64MiB", "disk:10GiB",
// or "disk:N" in bytes when size is not a whole number of MiB.
func Layer(size int64) string {
	switch {
	case size > 0 && size%(1<<30) == 0:
		return "disk:" + strconv.FormatInt(size>>30, 10) + "GiB"
	case size > 0 && size%(1<<20) == 0:
		return "disk:" + strconv.FormatInt(size>>20, 10) + "MiB"
	}
	return fmt.Sprintf("disk:%d", size)
}

// removeImage removes image; a missing one is not an error.
func removeImage(image string) error {
	if image == "" {
		return nil
	}
	if err := os.Remove(image); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
