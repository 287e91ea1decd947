package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultReadPaths are the host paths commands may read (and execute from) under Landlock, besides
// the workspace and the private temporary directory. Paths that do not exist are skipped. /dev is
// not among them: only the harmless device files of DefaultDevices are opened to commands, never
// disks.
var DefaultReadPaths = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
	"/run/systemd/resolve",
}

// viewSystemPaths are the host directories a command's file system view holds read-only (those
// that exist), besides Config.ReadPaths.
var viewSystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// DefaultDevices are the device files commands may read and write under Landlock.
var DefaultDevices = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
	"/dev/pts", "/dev/shm",
}

// DefaultDenyRead returns the paths commands may never read, even when an allowed read path
// contains them: every home directory, and the credential stores of the server's user and of
// the system (SSH host keys, shadow passwords, sudoers, TLS private keys).
func DefaultDenyRead() []string {
	deny := []string{
		"/home", "/root",
		"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
		"/etc/ssh", "/etc/ssl/private", "/etc/docker", "/etc/security/opasswd",
	}
	if home, err := os.UserHomeDir(); err == nil && home != "/" && filepath.IsAbs(home) {
		deny = append(deny, home)
		// Also those inside the toolchain directories a PATH under home shows (cargo's registry
		// tokens, the keyrings of ~/.local, git's credential store under ~/.config).
		for _, c := range []string{".ssh", ".aws", ".docker", ".kube", ".gnupg", ".netrc", ".git-credentials",
			".config/gcloud", ".config/gh", ".azure", ".npmrc", ".pypirc", ".cargo/credentials",
			".cargo/credentials.toml", ".local/share/keyrings", ".config/git/credentials"} {
			deny = append(deny, filepath.Join(home, c))
		}
	}
	return deny
}

// fsRules is the Landlock policy the helper applies, after deny-read carve-outs.
type fsRules struct {
	Read      []string `json:"read"`      // read and execute, whole hierarchies
	ReadFiles []string `json:"readFiles"` // read and execute of single files (carve-out siblings)
	ReadDir   []string `json:"readDir"`   // list only (parents of a carved-out path)
	Write     []string `json:"write"`     // read, write, execute, whole hierarchies
	Devices   []string `json:"devices"`   // read and write of device files, with ioctl
	Exe       []string `json:"exe"`       // this binary (per-command inits), whatever the deny list says
}

// within reports whether p is base or beneath it (both clean and absolute).
func within(p, base string) bool {
	return p == base || base == "/" || strings.HasPrefix(p, base+"/")
}

// cleanAbs makes p absolute and clean and resolves symlinks where it exists, since Landlock rules
// attach to the real inode.
func cleanAbs(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// buildRules computes the Landlock policy: read allows minus deny-read (an allowed directory that
// contains a denied path is replaced by its entries, recursively, leaving the denied one out, and
// keeps only the right to list itself), and writes. shown are read allows too (the toolchain
// directories under the home directory that PATH names, see toolchain.go) although a deny entry
// contains them (the home directory, /home, /root): only the deny entries inside them are carved
// out.
func buildRules(read, deny, write, devices, shown []string) fsRules {
	var r fsRules
	denied := make([]string, 0, len(deny))
	for _, d := range deny {
		denied = append(denied, cleanAbs(d), filepath.Clean(d))
	}
	var add func(p string, depth int, denied []string)
	add = func(p string, depth int, denied []string) {
		var inside []string
		for _, d := range denied {
			if within(p, d) {
				return // the whole path is denied
			}
			if within(d, p) {
				inside = append(inside, d)
			}
		}
		fi, err := os.Stat(p)
		if len(inside) == 0 {
			switch {
			case err != nil:
			case fi.IsDir():
				r.Read = append(r.Read, p)
			default:
				r.ReadFiles = append(r.ReadFiles, p)
			}
			return
		}
		if err != nil || !fi.IsDir() || depth > 8 {
			return
		}
		r.ReadDir = append(r.ReadDir, p)
		entries, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for _, e := range entries {
			add(filepath.Join(p, e.Name()), depth+1, denied)
		}
	}
	for _, p := range read {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		add(cleanAbs(p), 0, denied)
	}
	for _, p := range shown {
		p = cleanAbs(p)
		add(p, 0, slices.DeleteFunc(slices.Clone(denied), func(d string) bool { return within(p, d) }))
	}
	for _, p := range write {
		r.Write = append(r.Write, cleanAbs(p))
	}
	for _, p := range devices {
		if _, err := os.Stat(p); err == nil {
			r.Devices = append(r.Devices, p)
		}
	}
	slices.Sort(r.Read)
	r.Read = slices.Compact(r.Read)
	return r
}
