//go:build !linux || sandboxer_portable

package local

import (
	"errors"
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// walkDir lists the directory d by name (there is no getdents: readdir), and hands each entry to
// entry with an unknown type, so that entry asks fstatat relative to d, never following a link.
func (w *treeWorker) walkDir(d treeDir, _ []byte) error {
	fd := int(d.f.Fd())
	for {
		if err := w.t.ctx.Err(); err != nil {
			return err
		}
		names, err := d.f.Readdirnames(256)
		for _, name := range names {
			if err := w.entry(d, fd, []byte(name), unix.DT_UNKNOWN); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, unix.ENOENT) { // ENOENT: removed while walking
			return nil
		}
		if err != nil {
			return &fs.PathError{Op: "readdir", Path: d.prefix, Err: err}
		}
	}
}
