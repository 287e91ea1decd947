//go:build linux && !sandboxer_portable

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	janitorpkg "github.com/sandboxer/sandboxer/adapter/internal/janitor"
)

// The janitor removes what this process leaves behind when it dies without stopping its
// sandboxes (a SIGKILL): their private temporary directories, temporary workspaces and cgroups,
// and the process groups of plain commands (isolation off). The helpers, PID 1 of their
// sandboxes, get SIGKILL when this process dies, and everything in a sandbox with them; what
// they leave on disk and in the cgroup trees, and what a plain command started (only the command
// itself has a parent-death signal), needs somebody alive.
//
// It is this binary again (package adapter/internal/janitor, started with the first thing to look
// after), in a session of its own. This process registers "KIND PATH" when it makes something and
// releases it when it has removed it; when this process is gone, the janitor releases whatever is
// still registered, then exits.

// What the janitor looks after.
const (
	janitorDir = "dir" // a directory tree to remove
	janitorCg2 = "cg2" // a cgroup v2 directory: killed, emptied, removed with its children
	janitorCg1 = "cg1" // a cgroup v1 directory: removed once its processes are gone
	janitorPG  = "pg"  // a plain command's process group (isolation off): killed
	janitorUID = "uid" // a sandbox uid's lock file: removed once no one holds it
	janitorPrj = "prj" // a disk layer project's lock file: its limit lifted, its files given back, removed once no one holds it
)

// janitor is this process's janitor, started with the first thing to look after.
var janitor = janitorpkg.New("sandboxer-local-janitor", "SANDBOXER_LOCAL_JANITOR")

// releaseLeft is the janitor's work once its owner is gone: it releases the entries left ("KIND
// PATH"), in reverse order: a sandbox's cgroups before the directories they were made for.
func releaseLeft(left []string) {
	for _, entry := range slices.Backward(left) {
		kind, p, ok := strings.Cut(entry, " ")
		if !ok || (!filepath.IsAbs(p) && kind != janitorPG) {
			continue
		}
		switch kind {
		case janitorDir:
			_ = removeAll(p)
		case janitorCg2:
			_ = os.WriteFile(filepath.Join(p, "cgroup.kill"), []byte("1"), 0)
			removeCgroup(p)
		case janitorCg1:
			removeCgroup(p)
		case janitorUID:
			removeStaleLease(p, nil)
		case janitorPrj:
			removeStaleLease(p, clearStaleProject)
		case janitorPG:
			if pgid, err := strconv.Atoi(p); err == nil && pgid > 1 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}
	}
}

// removeCgroup removes a cgroup directory and its child cgroups, waiting up to 5 s for their
// processes to be gone.
func removeCgroup(dir string) {
	deadline := time.Now().Add(5 * time.Second)
	var remove func(d string) error
	remove = func(d string) error {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() {
				_ = remove(filepath.Join(d, e.Name()))
			}
		}
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := remove(dir); err != nil {
		fmt.Fprintf(os.Stderr, "sandboxer janitor: %s: %v\n", dir, err)
	}
}

// lookAfter asks the janitor to remove path (of kind janitorDir, janitorCg2, janitorCg1, janitorUID or janitorPrj) if
// this process dies before released(path).
func lookAfter(kind, path string) { janitor.Register(kind + " " + path) }

// released tells the janitor that path (of kind) is gone. With no janitor yet nothing was
// registered, so there is nothing to tell: a sandbox that only served file calls releases its
// (never made) private TMPDIR at Stop, and that must not start a janitor process (issue 15).
func released(kind, path string) { janitor.Release(kind + " " + path) }
