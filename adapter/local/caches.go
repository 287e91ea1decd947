package local

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/adapter/workspace"
	"github.com/sandboxer/sandboxer/errs"
)

// The caller's caches (issue 35): the build and module caches of the toolchains the caller uses
// (Go's, pip's, npm's, cargo's registry) are shown to commands copy-on-write, an overlay of the
// caller's directory (read-only, never changed) and a private upper directory of the sandbox's,
// so that a `go test` in a new sandbox finds the standard library built and the modules
// downloaded. The mount is the helper's (caches_linux.go); here the caches are found.

// cache is one of the caller's caches shown to commands.
type cache struct {
	Path string // the caller's directory (symlinks resolved): the lower layer, and where commands see it
	Env  string // the variable that tells the toolchain where it is ("GOCACHE"), or ""
}

// cacheDefaults are the variables that name pip's and npm's caches, and their defaults under the
// home directory (Go's come from `go env`, cargo's from CARGO_HOME).
var cacheDefaults = []struct{ env, home string }{
	{"PIP_CACHE_DIR", ".cache/pip"},
	{"npm_config_cache", ".npm"},
}

// findCaches lists the caches commands are shown: Config.Caches when set (each must pass
// checkCache), else the caller's, found from getenv (the environment of the process that makes
// the sandbox), home and the go on PATH (pathDirs), those that pass checkCache. shown are the
// toolchain roots PATH shows (cargo's registry is used only where its CARGO_HOME is one).
func findCaches(cfg Config, getenv func(string) string, home, ws string, pathDirs, shown []string) ([]cache, error) {
	if cfg.NoCaches {
		return nil, nil
	}
	deny := append(DefaultDenyRead(), cfg.DenyRead...)
	check := func(p string) (string, error) {
		return checkCache(p, home, ws, deny, cfg.WritePaths, cfg.Protect)
	}
	var found []cache
	overlaps := func(real string) bool { // one overlay each: none inside another
		return slices.ContainsFunc(found, func(c cache) bool { return within(real, c.Path) || within(c.Path, real) })
	}
	add := func(p, env string) {
		if real, err := check(p); err == nil && !overlaps(real) {
			found = append(found, cache{Path: real, Env: env})
		}
	}
	if cfg.Caches != nil {
		for _, e := range cfg.Caches {
			env, p := splitCache(e)
			real, err := check(p)
			if err == nil && overlaps(real) {
				err = fmt.Errorf("%s overlaps another entry", real)
			}
			if err != nil {
				return nil, errs.Wrap(errs.InvalidInput, "local", p, fmt.Errorf("caches: %w", err))
			}
			found = append(found, cache{Path: real, Env: env})
		}
		return found, nil
	}
	goCache, goMod := getenv("GOCACHE"), getenv("GOMODCACHE")
	if goCache == "" || goMod == "" {
		if bin := findProgram("go", pathDirs); bin != "" {
			v := goEnv(bin)
			goCache, goMod = cmp.Or(goCache, v.GOCACHE), cmp.Or(goMod, v.GOMODCACHE)
		}
	}
	add(goCache, "GOCACHE")
	add(goMod, "GOMODCACHE")
	for _, d := range cacheDefaults {
		p := getenv(d.env)
		if p == "" && d.env == "PIP_CACHE_DIR" && getenv("XDG_CACHE_HOME") != "" {
			p = filepath.Join(getenv("XDG_CACHE_HOME"), "pip")
		}
		if p == "" && home != "" {
			p = filepath.Join(home, d.home)
		}
		add(p, d.env)
	}
	// Cargo finds its registry in CARGO_HOME: only where that is a toolchain root PATH shows
	// (and toolchain.env names it) is the overlay where cargo looks.
	cargo := getenv("CARGO_HOME")
	if cargo == "" && home != "" {
		cargo = filepath.Join(home, ".cargo")
	}
	if cargo != "" && slices.Contains(shown, cleanAbs(cargo)) {
		add(filepath.Join(cargo, "registry"), "")
	}
	return found, nil
}

// splitCache splits a Config.Caches entry, "VAR=/path" or "/path".
func splitCache(e string) (env, p string) {
	if k, v, ok := strings.Cut(e, "="); ok && !strings.Contains(k, "/") {
		return k, v
	}
	return "", e
}

// checkCache returns p resolved when it may be shown to commands as a cache: an existing
// directory of the caller's (owned by this process's uid) that passes workspace.Vet (not /, a
// system or home directory, nor one holding sandboxer's files), is not inside or around a
// credential deny entry (entries that contain the home directory, such as /root or /home, do not
// count: caches live in homes), and neither holds nor lies inside the workspace or a WritePaths
// entry (those are writable already).
func checkCache(p, home, ws string, deny, write, protect []string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", real)
	case !ok || int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("%s is not the caller's", real)
	}
	if err := workspace.Vet(real, protect...); err != nil {
		return "", err
	}
	if home != "" {
		home = cleanAbs(home)
	}
	for _, d := range deny {
		d = cleanAbs(d)
		if within(d, real) || (within(real, d) && (home == "" || !within(home, d))) {
			return "", fmt.Errorf("%s is or holds %s, which commands may not read", real, d)
		}
	}
	for _, w := range append([]string{ws}, write...) {
		if w = cleanAbs(w); within(real, w) || within(w, real) {
			return "", fmt.Errorf("%s overlaps %s, which commands may write", real, w)
		}
	}
	return real, nil
}

// findProgram is the first executable name in dirs, or "".
func findProgram(name string, dirs []string) string {
	for _, d := range dirs {
		if p := filepath.Join(d, name); filepath.IsAbs(p) && executable(p) == nil {
			return p
		}
	}
	return ""
}

// goCaches is what `go env` says of Go's caches.
type goCaches struct{ GOCACHE, GOMODCACHE string }

var (
	goEnvMu   sync.Mutex
	goEnvSeen = map[string]goCaches{} // by the go binary: asked once per process
)

// goEnv asks the go binary bin where its caches are (`go env -json`), once per process.
func goEnv(bin string) goCaches {
	goEnvMu.Lock()
	defer goEnvMu.Unlock()
	if v, ok := goEnvSeen[bin]; ok {
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v goCaches
	cmd := exec.CommandContext(ctx, bin, "env", "-json", "GOCACHE", "GOMODCACHE")
	// The go command's telemetry starts a daemonized child (its upload, once a day) that outlives
	// the go command and writes in the caller's home: GO_TELEMETRY_CHILD=2 ("a child of the
	// child", golang.org/x/telemetry) keeps this look-up from leaving a process behind.
	cmd.Env = append(os.Environ(), "GO_TELEMETRY_CHILD=2")
	out, err := cmd.Output()
	if err == nil {
		err = json.NewDecoder(bytes.NewReader(out)).Decode(&v)
	}
	if err != nil {
		v = goCaches{}
	}
	goEnvSeen[bin] = v
	return v
}

// cacheEnv is what commands are told of the mounted caches (targets): each one's variable,
// unless env names it already (Config.Env, Command.Env win).
func cacheEnv(caches []cache, mounted, env []string) []string {
	var add []string
	for _, c := range caches {
		if c.Env == "" || !slices.Contains(mounted, c.Path) {
			continue
		}
		if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, c.Env+"=") }) {
			continue
		}
		add = append(add, c.Env+"="+c.Path)
	}
	return add
}
