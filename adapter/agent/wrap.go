package agent

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Failure codes of a wrapped command that could not start.
const (
	failEscape   = "escape"
	failNotFound = "notfound"
	failNoExec   = "noexec"
)

// jail resolves rel (lexically clean, relative) inside root, following every symlink component
// by component, and returns the real path, or a failure code: failEscape as soon as the walk
// leaves root, failNotFound for a symlink loop or an unreadable link. Components that do not exist
// are taken as they are.
func jail(root, rel string) (string, string) {
	r, rest, links := root, rel, 0
	for rest != "" {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			if r == root {
				return "", failEscape
			}
			r = path.Dir(r)
			continue
		}
		fi, err := os.Lstat(r + "/" + c)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			r += "/" + c
			continue
		}
		if links++; links > 40 {
			return "", failNotFound
		}
		t, err := os.Readlink(r + "/" + c)
		if err != nil {
			return "", failNotFound
		}
		switch {
		case t == root:
			r, t = root, ""
		case strings.HasPrefix(t, root+"/"):
			r, t = root, t[len(root)+1:]
		case strings.HasPrefix(t, "/"):
			return "", failEscape
		}
		if rest != "" {
			rest = t + "/" + rest
		} else {
			rest = t
		}
	}
	return r, ""
}

// lookExec finds the program a shell would run for name in dir with the given PATH: a name with
// a slash is taken relative to dir; otherwise each PATH entry ("" is dir) is tried. It must be an
// executable regular file.
func lookExec(name, dir, pathEnv string) (string, bool) {
	ok := func(p string) bool {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && syscall.Access(p, 1) == nil
	}
	if strings.Contains(name, "/") {
		if ok(name) {
			return name, true
		}
		return "", false
	}
	for _, d := range strings.Split(pathEnv, ":") {
		if d == "" {
			d = "."
		}
		if p := d + "/" + name; ok(p) {
			return p, true
		}
	}
	return "", false
}

// lastEnv returns the value of the last key=... entry of env.
func lastEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}
