package diskcap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// mkfsNames are the places mkfs.ext4 is looked for when it is not on PATH (root's PATH has the
// sbin directories, a service's may not).
var mkfsNames = []string{"mkfs.ext4", "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"}

// mkfs returns the path of mkfs.ext4, or an error saying it is missing.
func mkfs() (string, error) {
	for _, n := range mkfsNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mkfs.ext4 not found (install e2fsprogs)")
}

// Check reports why a workspace cannot be capped here, or nil when it can: the process must be
// root, with a loop device and mkfs.ext4.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("a loop-mounted file system needs root")
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("no loop devices: %w", err)
	}
	ctl.Close()
	_, err = mkfs()
	return err
}

// Mount makes image, a sparse file of size bytes, formats it ext4 with its root directory owned
// by uid:gid, and mounts it (nosuid, nodev) at dir, an existing empty directory. On failure
// nothing of it is left. mkfs.ext4 runs under ctx; the rest does not block.
func Mount(ctx context.Context, image, dir string, size int64, uid, gid int) (err error) {
	if size < MinBytes {
		return fmt.Errorf("disk cap %d: want at least %d bytes", size, MinBytes)
	}
	if err := Check(); err != nil {
		return err
	}
	f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(image)
		}
	}()
	if err := f.Truncate(size); err != nil {
		return err
	}
	if err := format(ctx, image, uid, gid); err != nil {
		return err
	}
	loop, err := attach(f)
	if err != nil {
		return err
	}
	// The loop device clears itself when its last user goes: this descriptor (closed here) once
	// the mount holds it, or the failed mount's.
	defer loop.Close()
	// noinit_itable: the kernel would otherwise zero every inode table in the background,
	// writing about 1.5% of the cap to the host at once.
	if err := unix.Mount(loop.Name(), dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, "noinit_itable"); err != nil {
		return fmt.Errorf("mount %s on %s: %w", loop.Name(), dir, err)
	}
	// The sandbox sees an empty workspace; e2fsck makes lost+found again when it needs one.
	if err := unix.Rmdir(filepath.Join(dir, "lost+found")); err != nil && !errors.Is(err, unix.ENOENT) {
		unix.Unmount(dir, unix.MNT_DETACH)
		return err
	}
	return nil
}

// format makes an ext4 file system in image, without a journal (the workspace does not outlive
// its sandbox, nor a host crash) and without writing its inode tables now, nor discards: a few
// MiB of metadata are written, whatever the size.
func format(ctx context.Context, image string, uid, gid int) error {
	path, err := mkfs()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, "-q", "-F", "-m", "0", "-O", "^has_journal",
		"-E", fmt.Sprintf("nodiscard,lazy_itable_init=1,root_owner=%d:%d", uid, gid), image)
	// The host's mke2fs.conf gives ext4 its features: extents (files up to 16 TiB),
	// 256-byte inodes (nanosecond times, which FileSync's stat cache needs).
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// attach attaches f to a free loop device with LO_FLAGS_AUTOCLEAR and returns the device, open.
func attach(f *os.File) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(f.Fd()), Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}}
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], f.Name())
	var last error
	// Another process may take the free device between the two calls: try the next one.
	for range 32 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("loop device: %w", err)
		}
		dev, err := os.OpenFile("/dev/loop"+strconv.Itoa(n), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		if last = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg); last == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(last, unix.EBUSY) {
			return nil, fmt.Errorf("loop device %s: %w", dev.Name(), last)
		}
	}
	return nil, fmt.Errorf("loop device: %w", last)
}

// Release unmounts the file system of image from dir, when it is mounted there, and removes
// image: what Mount made, from any process. It is idempotent: nothing mounted and no image is
// not an error. A mount that something on the host still uses is detached lazily (its loop
// device goes when that use ends).
func Release(image, dir string) error {
	var errList []error
	for range 8 { // once per mount of image stacked on dir, which Mount never makes twice
		if !Mounted(image, dir) {
			break
		}
		err := unix.Unmount(dir, 0)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(dir, unix.MNT_DETACH)
		}
		if err != nil {
			errList = append(errList, fmt.Errorf("unmount %s: %w", dir, err))
			break
		}
	}
	if err := removeImage(image); err != nil {
		errList = append(errList, err)
	}
	// The loop device goes with its last user (LO_FLAGS_AUTOCLEAR), which the kernel may close
	// after the unmount returned (Linux 6.x releases a block device's file late): wait for it a
	// little, so that a released workspace leaves nothing behind when Release returns.
	for deadline := time.Now().Add(detachWait); len(Loops(image)) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return errors.Join(errList...)
}

// detachWait bounds how long Release waits for the loop device to detach itself.
const detachWait = 5 * time.Second

// Mounted reports whether the file system of image is mounted at dir in this process's mount
// namespace: a mount at dir whose device is a loop device backed by image. Nothing else is
// unmounted by Release.
func Mounted(image, dir string) bool {
	loops := Loops(image)
	for _, m := range mounts() {
		if m.dir == dir && slices.Contains(loops, m.dev) {
			return true
		}
	}
	return false
}

// MountedAt reports whether anything is mounted at dir in this process's mount namespace.
func MountedAt(dir string) bool {
	for _, m := range mounts() {
		if m.dir == dir {
			return true
		}
	}
	return false
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	dir string // mount point
	dev string // major:minor
}

// mounts lists the mounts of this process's mount namespace.
func mounts() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 {
			out = append(out, mount{dir: unescape(fields[4]), dev: fields[2]})
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Loops returns the loop devices (major:minor) backed by image, also once image is removed:
// what a release left attached.
func Loops(image string) []string {
	if image == "" {
		return nil
	}
	devs, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, p := range devs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		backing := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), " (deleted)")
		if backing != image {
			continue
		}
		if dev, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(p)), "dev")); err == nil {
			out = append(out, strings.TrimSpace(string(dev)))
		}
	}
	return out
}

// Capacity returns the size in bytes of the file system mounted at dir (blocks times block
// size), or 0 when it cannot be read.
func Capacity(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize)
}
