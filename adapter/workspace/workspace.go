// Package workspace decides which host directories may become a sandbox's writable workspace.
//
// A workspace is a host directory that commands (and file calls) may change. Any directory used to
// be accepted, so `cd / && sandboxer tool bash ...` handed commands a writable `/`, `cd /etc` a
// writable /etc/passwd, `cd ~` the caller's dotfiles, and a repository holding the built
// sandboxer binaries let a command replace them. Vet refuses, before any sandbox exists:
//
//   - `/` and every directory that contains a system directory (RuleSystem);
//   - a directory inside the operating system's own trees, /etc, /usr, /boot, /dev, /proc, /sys,
//     /run and the lib and bin directories (RuleSystemTree), except the source trees /usr/src
//     and /usr/local/src;
//   - a home directory (the caller's, and every home directory of /etc/passwd) and every
//     directory containing one (RuleHome); a project inside a home directory is fine;
//   - a directory that contains one of sandboxer's own files: the running executable, the
//     user's XDG_RUNTIME_DIR, and the paths the caller names (its configuration, state, journal,
//     FileSync store, server directory, other executables) (RuleOwnFile).
//
// Paths are compared after symbolic links are resolved, and the directory is also compared by
// identity (device and inode) with the refused directories, so a link or a bind mount of `/`
// is refused as `/` is.
package workspace

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sandboxer/sandboxer/errs"
)

// The rules Vet applies; the refusal's Details["rule"] names the one that refused.
const (
	RuleSystem     = "system-directory"
	RuleSystemTree = "inside-system-tree"
	RuleHome       = "home-directory"
	RuleOwnFile    = "contains-sandboxer-file"
)

// systemDirs may neither be a workspace nor lie inside one.
var systemDirs = []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
	"/libx32", "/media", "/mnt", "/nix", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv",
	"/sys", "/tmp", "/usr", "/usr/local", "/var", "/var/cache", "/var/lib", "/var/log", "/var/mail",
	"/var/run", "/var/spool", "/var/tmp"}

// systemTrees hold the operating system's files and runtime state: no workspace lies inside
// them, except in sourceTrees.
var (
	systemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
		"/proc", "/run", "/sbin", "/sys", "/usr", "/var/lock", "/var/run"}
	sourceTrees = []string{"/usr/src", "/usr/local/src"}
)

// Vet returns nil when dir may be a sandbox's writable workspace, else an errs.InvalidInput
// error whose message names the rule and whose Details["rule"] is one of the Rule constants.
// own lists more of the caller's own files and directories that the workspace must not contain
// (the running executable and $XDG_RUNTIME_DIR are always among them). dir need not exist.
func Vet(dir string, own ...string) error {
	d, err := resolve(dir)
	if err != nil {
		return errs.Wrap(errs.InvalidInput, "workspace", dir, err)
	}
	refuse := func(rule, format string, args ...any) error {
		e := errs.New(errs.InvalidInput, "workspace", dir, "%s cannot be a sandbox's workspace: "+format+
			"; use a project directory of its own", append([]any{d}, args...)...)
		e.Details = map[string]any{"rule": rule}
		return e
	}
	k := knownDirs()
	fi, statErr := os.Stat(d)
	same := func(p string) bool {
		other, ok := k.stats[p]
		return ok && statErr == nil && os.SameFile(fi, other)
	}
	for _, sys := range systemDirs {
		switch {
		case d == sys || same(sys):
			return refuse(RuleSystem, "it is the system directory %s, which commands could change", sys)
		case contains(d, sys):
			return refuse(RuleSystem, "it contains the system directory %s, which commands could change", sys)
		}
	}
	if !slices.ContainsFunc(sourceTrees, func(t string) bool { return contains(t, d) }) {
		for _, tree := range systemTrees {
			if contains(tree, d) {
				return refuse(RuleSystemTree, "it lies inside %s, which holds the operating system's own files", tree)
			}
		}
	}
	for _, home := range k.homes {
		if contains(d, home) || same(home) {
			return refuse(RuleHome, "it is or contains the home directory %s (dotfiles, keys, shell start-up files)", home)
		}
	}
	for _, p := range ownFiles(own) {
		switch {
		case d == p:
			return refuse(RuleOwnFile, "it is one of sandboxer's own directories, whose files a command could replace or forge")
		case contains(d, p):
			return refuse(RuleOwnFile, "it contains %s, one of sandboxer's own files, which a command could replace", p)
		}
	}
	return nil
}

// ownFiles are the resolved paths of own, the running executable and $XDG_RUNTIME_DIR.
func ownFiles(own []string) []string {
	all := slices.Clone(own)
	if exe, err := os.Executable(); err == nil {
		all = append(all, exe)
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		all = append(all, x)
	}
	var out []string
	for _, p := range all {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if r, err := resolve(p); err == nil {
			out = append(out, r)
		}
		out = append(out, filepath.Clean(p)) // as named, too: a link may lead elsewhere later
	}
	return out
}

// known are the system directories' and the home directories' identities (stats), and the
// homes: kept while $HOME and /etc/passwd stay as they were, since a resident server vets every
// call's workspace and finding them is most of a vet's cost.
type known struct {
	home   string
	passwd os.FileInfo
	homes  []string
	stats  map[string]os.FileInfo // by path, the system directories and homes that exist
}

var knownCache struct {
	sync.Mutex
	k *known
}

// knownDirs returns the known directories, found again when $HOME or /etc/passwd changed.
func knownDirs() *known {
	home := os.Getenv("HOME")
	passwd, _ := os.Stat("/etc/passwd")
	knownCache.Lock()
	defer knownCache.Unlock()
	if k := knownCache.k; k != nil && k.home == home && sameVersion(k.passwd, passwd) {
		return k
	}
	k := &known{home: home, passwd: passwd, homes: readHomes(home), stats: map[string]os.FileInfo{}}
	for _, p := range slices.Concat(systemDirs, k.homes) {
		if fi, err := os.Stat(p); err == nil {
			k.stats[p] = fi
		}
	}
	knownCache.k = k
	return k
}

// sameVersion says whether two stats are of one file, unchanged.
func sameVersion(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// readHomes are the caller's home directory (home, and the account's) and those of /etc/passwd,
// resolved; "/" is left to the system rule.
func readHomes(home string) []string {
	list := []string{home}
	if h, err := os.UserHomeDir(); err == nil {
		list = append(list, h)
	}
	if f, err := os.Open("/etc/passwd"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Split(sc.Text(), ":"); len(fields) >= 7 {
				list = append(list, fields[5])
			}
		}
		f.Close()
	}
	var out []string
	for _, h := range list {
		if !filepath.IsAbs(h) {
			continue
		}
		if r, err := filepath.EvalSymlinks(h); err == nil && r != "/" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// resolve makes p absolute and clean with its symbolic links resolved; of a path that does not
// exist yet, the longest existing ancestor is resolved and the rest appended.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(cur)
		if !os.IsNotExist(err) || parent == cur {
			return "", err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// contains reports whether dir is p or one of its ancestors (both clean and absolute).
func contains(dir, p string) bool {
	if dir == p || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}
