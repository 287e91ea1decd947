//go:build linux && !sandboxer_portable

package local

import (
	"bytes"
	"encoding/binary"
	"io/fs"

	"golang.org/x/sys/unix"
)

func (w *treeWorker) walkDir(d treeDir, dbuf []byte) error {
	if err := w.t.ctx.Err(); err != nil {
		return err
	}
	fd := int(d.f.Fd())
	for {
		n, err := unix.Getdents(fd, dbuf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ENOENT { // removed while walking: it is simply gone, with what it held
			return nil
		}
		if err != nil {
			return &fs.PathError{Op: "getdents", Path: d.prefix, Err: err}
		}
		if n <= 0 {
			return nil
		}
		for rec := dbuf[:n]; len(rec) > 0; {
			// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
			reclen := int(binary.NativeEndian.Uint16(rec[16:18]))
			typ := rec[18]
			name := rec[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			rec = rec[reclen:]
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			if err := w.entry(d, fd, name, typ); err != nil {
				return err
			}
		}
	}
}
