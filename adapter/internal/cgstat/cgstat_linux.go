package cgstat

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
)

// mounts is Mounts, read once: the hierarchies do not move while sandboxer runs.
var mounts = sync.OnceValue(func() []Mount {
	m, _ := Mounts()
	return m
})

// set puts dir into g for the hierarchy m.
func (g *Group) set(m Mount, dir string) {
	if m.V2 {
		g.V2 = dir
		return
	}
	for _, c := range m.Controllers {
		switch c {
		case "cpuacct":
			g.CPUAcct = dir
		case "memory":
			g.Memory = dir
		case "blkio":
			g.BlkIO = dir
		case "pids":
			g.Pids = dir
		}
	}
}

// in is the directory of the cgroup path (as /proc/<pid>/cgroup names it) under the mount m, or
// "" when the mount does not show it.
func in(m Mount, path string) string {
	rel := path
	if m.Root != "/" {
		r, ok := strings.CutPrefix(path, m.Root)
		if !ok || (r != "" && r[0] != '/') {
			return ""
		}
		rel = r
	}
	return filepath.Join(m.Dir, rel)
}

// ForPID is the Group of the cgroups the process pid is in (the zero Group when it is gone).
func ForPID(pid int) Group {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return Group{}
	}
	var g Group
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		ctrls, path, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 {
			continue
		}
		for _, m := range mounts() {
			switch {
			case m.V2 && id == "0" && ctrls == "":
			case !m.V2 && ctrls != "" && slices.ContainsFunc(strings.Split(ctrls, ","), func(c string) bool { return slices.Contains(m.Controllers, c) }):
			default:
				continue
			}
			if dir := in(m, path); dir != "" {
				g.set(m, dir)
			}
		}
	}
	return g
}

// ForPath is the Group of the cgroup at path (relative to each hierarchy's root, as an OCI
// spec's cgroupsPath) in every hierarchy where it exists.
func ForPath(path string) Group {
	var g Group
	for _, m := range mounts() {
		if dir := in(m, path); dir != "" {
			if _, err := os.Stat(dir); err == nil {
				g.set(m, dir)
			}
		}
	}
	return g
}

// Of is the Group of a cgroup v2 directory ("" for none) and v1 directories, each put under
// the controllers of the hierarchy it is in.
func Of(v2 string, v1 []string) Group {
	g := Group{V2: v2}
	for _, d := range v1 {
		for _, m := range mounts() {
			if !m.V2 && (d == m.Dir || strings.HasPrefix(d, m.Dir+"/")) {
				g.set(m, d)
			}
		}
	}
	return g
}

type meter struct {
	cpu, read, written int64
	cpuOK, ioOK        bool
	peak, pids         *os.File // v2 memory.peak and pids.peak, reset through these descriptors
	v1Peak             bool     // v1 memory.max_usage_in_bytes was reset
}

func (m *Meter) begin() {
	m.m.cpu, m.m.cpuOK = cpuUs(m.g)
	m.m.read, m.m.written, m.m.ioOK = ioBytes(m.g)
	if m.g.V2 != "" {
		m.m.peak = resetPeak(filepath.Join(m.g.V2, "memory.peak"))
		m.m.pids = resetPeak(filepath.Join(m.g.V2, "pids.peak"))
	}
	if m.m.peak == nil && m.g.Memory != "" {
		m.m.v1Peak = writeSmall(filepath.Join(m.g.Memory, "memory.max_usage_in_bytes"), "0")
	}
}

// resetPeak opens a v2 peak file and resets the peak seen through the descriptor (a write of
// any text: Linux 6.12 for memory.peak), or returns nil where that cannot be done: a peak
// since the cgroup was made is not the command's.
func resetPeak(file string) *os.File {
	if missing(file) {
		return nil
	}
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		absent(file, err)
		return nil
	}
	if _, err := f.WriteString("reset\n"); err != nil {
		absent(file, err) // a kernel without per-descriptor peaks
		f.Close()
		return nil
	}
	return f
}

// readPeak reads and closes a descriptor of resetPeak.
func readPeak(f *os.File) (int64, bool) {
	defer f.Close()
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	v, err := strconv.ParseInt(string(bytes.TrimSpace(buf[:n])), 10, 64)
	return v, err == nil
}

func (m *Meter) end(r *adapter.Receipt) {
	if v, ok := cpuUs(m.g); ok && m.m.cpuOK && v >= m.m.cpu {
		r.CPUUs = adapter.Int64(v - m.m.cpu)
	}
	if rd, wr, ok := ioBytes(m.g); ok && m.m.ioOK && rd >= m.m.read && wr >= m.m.written {
		r.DiskReadBytes, r.DiskWriteBytes = adapter.Int64(rd-m.m.read), adapter.Int64(wr-m.m.written)
	}
	if m.m.pids != nil {
		if v, ok := readPeak(m.m.pids); ok {
			r.Processes = adapter.Int64(v)
		}
		m.m.pids = nil
	}
	switch {
	case m.m.peak != nil:
		if v, ok := readPeak(m.m.peak); ok {
			r.PeakMemoryBytes = adapter.Int64(v)
		}
		m.m.peak = nil
	case m.m.v1Peak:
		if v, ok := readInt(filepath.Join(m.g.Memory, "memory.max_usage_in_bytes")); ok {
			r.PeakMemoryBytes = adapter.Int64(v)
		}
	}
}

// cpuUs is the CPU time of g in microseconds: cpu.stat's usage_usec on v2 (there whether the cpu
// controller is enabled or not), else v1 cpuacct.usage (nanoseconds).
func cpuUs(g Group) (int64, bool) {
	if g.V2 != "" {
		if v, ok := flatKey(filepath.Join(g.V2, "cpu.stat"), "usage_usec"); ok {
			return v, true
		}
	}
	if g.CPUAcct != "" {
		if v, ok := readInt(filepath.Join(g.CPUAcct, "cpuacct.usage")); ok {
			return v / 1000, true
		}
	}
	return 0, false
}

// ioBytes sums the bytes read and written over every device: v2 io.stat's rbytes and wbytes,
// else v1 blkio's service bytes (the throttle counters, which count at the bio layer whatever the
// scheduler).
func ioBytes(g Group) (read, written int64, ok bool) {
	if g.V2 != "" {
		if data, err := readSmall(filepath.Join(g.V2, "io.stat")); err == nil {
			for _, f := range strings.Fields(string(data)) {
				k, v, found := strings.Cut(f, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if !found || err != nil {
					continue
				}
				switch k {
				case "rbytes":
					read += n
				case "wbytes":
					written += n
				}
			}
			return read, written, true
		}
	}
	if g.BlkIO != "" {
		data, err := readSmall(filepath.Join(g.BlkIO, "blkio.throttle.io_service_bytes"))
		if err != nil {
			return 0, 0, false
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				continue
			}
			switch f[1] {
			case "Read":
				read += n
			case "Write":
				written += n
			}
		}
		return read, written, true
	}
	return 0, 0, false
}

// flatKey reads key's value from a flat-keyed cgroup file ("key value" lines).
func flatKey(file, key string) (int64, bool) {
	data, err := readSmall(file)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// readInt reads a file holding one integer.
func readInt(file string) (int64, bool) {
	data, err := readSmall(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	return n, err == nil
}

// The files a receipt reads are read with the fewest system calls (a command pays for each:
// open, one read, close), and a file found missing once (a controller the hierarchy does not
// have, a kernel without per-descriptor peaks) is not looked for again.
var (
	absentMu sync.RWMutex
	absentAt = map[string]bool{}
)

// missing reports whether file was found missing (or refused) before.
func missing(file string) bool {
	absentMu.RLock()
	defer absentMu.RUnlock()
	return absentAt[file]
}

// absent remembers a file that cannot be opened or written for good (not a cgroup being
// removed: its directory is checked), bounded so that cgroups that come and go cannot grow it.
func absent(file string, err error) {
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
		return
	}
	if _, derr := os.Stat(filepath.Dir(file)); derr != nil {
		return
	}
	absentMu.Lock()
	defer absentMu.Unlock()
	if len(absentAt) < 4096 {
		absentAt[file] = true
	}
}

// smallBuf bounds what readSmall reads: cgroup statistics files are a few lines (io.stat and
// blkio grow with the devices: 16 KiB holds hundreds).
const smallBuf = 16 << 10

var bufs = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}

// readSmall reads a small kernel file with one read.
func readSmall(file string) ([]byte, error) {
	if missing(file) {
		return nil, fs.ErrNotExist
	}
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		absent(file, err)
		return nil, err
	}
	defer unix.Close(fd)
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	n, err := unix.Read(fd, *bp)
	if err != nil {
		return nil, err
	}
	return bytes.Clone((*bp)[:n]), nil
}

// writeSmall writes text to a kernel file, reporting whether it took it.
func writeSmall(file, text string) bool {
	if missing(file) {
		return false
	}
	fd, err := unix.Open(file, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		absent(file, err)
		return false
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(text))
	if err != nil {
		absent(file, err)
	}
	return err == nil
}
