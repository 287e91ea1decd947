package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/sandboxer/sandboxer/errs"
)

// What commands find on PATH, and where their HOME is (issue 35): the caller's toolchain as far as
// the sandbox can see it, found where the caller finds it, and a home directory of the sandbox's
// own, so that what toolchains keep in HOME (caches, settings) never lands in the project.

// toolchain is what an empty Config.Path gives commands.
type toolchain struct {
	dirs  []string // PATH, in order
	roots []string // directories under the home directory shown read-only (resolved)
	env   []string // what the toolchains need now that HOME is not the caller's
}

// findToolchain makes PATH from the caller's (callerPath): each absolute directory that exists and
// that commands see (inside an entry of view and no entry of deny; view nil: every directory, as
// with isolation off), each directory under home (the caller's home directory) with its toolchain
// root (toolchainRoot) unless that is home itself or inside a deny entry that does not contain
// home (a credential store), then DefaultPath's directories not listed yet. Other directories are
// dropped: a command could not run what they hold.
//
// rustup's proxies in ~/.cargo/bin look for their toolchains in RUSTUP_HOME, by default in HOME:
// when ~/.cargo is shown, so is ~/.rustup, and both variables name the caller's. Nothing else
// needs one: pyenv's shims hold PYENV_ROOT, nvm's node is the binary itself, and Go finds GOROOT
// from its binary.
func findToolchain(callerPath, home string, deny, view []string) toolchain {
	var tc toolchain
	if home != "" && filepath.IsAbs(home) {
		home = cleanAbs(home)
	} else {
		home = ""
	}
	denied := make([]string, 0, len(deny))
	for _, d := range deny {
		denied = append(denied, cleanAbs(d))
	}
	inDeny := func(p string, broad bool) bool {
		return slices.ContainsFunc(denied, func(d string) bool {
			return within(p, d) && (broad || home == "" || !within(home, d))
		})
	}
	seen := func(p string) bool {
		if view == nil {
			return true
		}
		return !inDeny(p, true) && slices.ContainsFunc(view, func(v string) bool { return within(p, cleanAbs(v)) })
	}
	show := func(root string) bool {
		if root == home || inDeny(root, false) {
			return false
		}
		tc.roots = append(tc.roots, root)
		return true
	}
	add := func(d string) {
		if !slices.Contains(tc.dirs, d) {
			tc.dirs = append(tc.dirs, d)
		}
	}
	for _, d := range filepath.SplitList(callerPath) {
		if !filepath.IsAbs(d) {
			continue // relative to each command's directory: a workspace could plant programs there
		}
		d = filepath.Clean(d)
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		real := cleanAbs(d)
		switch {
		case home != "" && within(real, home):
			if show(toolchainRoot(real, home)) {
				add(real) // at its real path: a link to it is not in the view
			}
		case seen(real):
			add(d)
		}
	}
	for _, d := range filepath.SplitList(DefaultPath) {
		add(d)
	}
	if home != "" {
		cargo, rustup := cleanAbs(filepath.Join(home, ".cargo")), cleanAbs(filepath.Join(home, ".rustup"))
		if slices.Contains(tc.roots, cargo) {
			tc.env = append(tc.env, "CARGO_HOME="+cargo)
			if fi, err := os.Stat(rustup); err == nil && fi.IsDir() && within(rustup, home) && show(rustup) {
				tc.env = append(tc.env, "RUSTUP_HOME="+rustup)
			}
		}
	}
	// One bind each: a root inside another (~/.pyenv/plugins/x inside ~/.pyenv) is left out.
	slices.Sort(tc.roots)
	tc.roots = slices.Compact(tc.roots)
	tc.roots = slices.DeleteFunc(tc.roots, func(r string) bool {
		return slices.ContainsFunc(tc.roots, func(o string) bool { return o != r && within(r, o) })
	})
	return tc
}

// toolchainRoot is the directory shown for a PATH directory dir under home: the toolchain it is
// part of, the parent of a "bin" or "shims" directory (~/.cargo/bin: ~/.cargo, ~/.pyenv/shims:
// ~/.pyenv, ~/.nvm/versions/node/v22/bin: .../v22) unless that is home itself (~/bin), else dir.
func toolchainRoot(dir, home string) string {
	if b := filepath.Base(dir); (b == "bin" || b == "shims") && filepath.Dir(dir) != home {
		return filepath.Dir(dir)
	}
	return dir
}

// homeDir is a sandbox's HOME: a host directory of its own (mode 0700) next to its private
// TMPDIR, never the workspace. It is made when the first command needs it (a sandbox that only
// moves files makes none), kept as long as the Sandbox, emptied by Recycle and removed by Stop.
type homeDir struct {
	path string
	mu   sync.Mutex
	made bool
	gone bool // Stop removed it: it is not made again
}

func newHomeDir() *homeDir { return newPrivateDir("sandboxer-home-") }

// newPrivateDir is a private directory of the sandbox's in the system's temporary directory,
// named prefix and a random suffix (a HOME, the caches' upper directories), made by ensure.
func newPrivateDir(prefix string) *homeDir {
	base := os.TempDir()
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real // as the rules and the view name it
	}
	return &homeDir{path: filepath.Join(base, prefix+randomSuffix())}
}

// ensure makes the directory. Mkdir, not MkdirAll: the name is random, and a directory someone
// else planted there is refused.
func (h *homeDir) ensure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.made:
		return nil
	case h.gone:
		return errs.New(errs.SandboxUnavailable, "exec", "", "sandbox is stopped")
	}
	if err := os.Mkdir(h.path, 0o700); err != nil {
		return errs.Wrap(errs.Internal, "exec", "", err)
	}
	lookAfter(janitorDir, h.path)
	h.made = true
	return nil
}

// empty removes what the directory holds, from the host and without following links, and keeps
// the directory itself: the file system views of the sandbox's running helpers bind it.
func (h *homeDir) empty() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.made {
		return nil
	}
	entries, err := os.ReadDir(h.path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := removeAll(filepath.Join(h.path, e.Name())); err != nil {
			return err
		}
	}
	return os.Chmod(h.path, 0o700)
}

// remove removes the directory for good (Stop).
func (h *homeDir) remove() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gone = true
	if !h.made {
		return nil
	}
	if err := removeAll(h.path); err != nil {
		return err
	}
	released(janitorDir, h.path)
	h.made = false
	return nil
}

// removeAll is os.RemoveAll that also removes directories their owner may not list or change (an
// overlay's work directory is mode 0, and commands make such directories too), which a caller
// that is not root could not empty otherwise: each directory of the tree is made 0700 first.
// Links are not followed (WalkDir reports a link as a link), and nothing runs there any more.
func removeAll(p string) error {
	if err := os.RemoveAll(p); err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}
