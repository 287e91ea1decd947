//go:build linux && !sandboxer_portable

package local

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// It is this binary again (argv[0] janitorArg0, started by adapter/internal/janitor with the
// first thing to look after), in a session of its own. Its stdin is a pipe whose write end only
// this process holds (close-on-exec: no command inherits it). This process writes "+KIND PATH"
// when it makes something and "-PATH" when it has released it; when the pipe ends, this process
// is gone, and the janitor releases whatever is still registered, then exits.

const (
	janitorArg0 = "sandboxer-local-janitor"
	janitorEnv  = "SANDBOXER_LOCAL_JANITOR"
)

// What the janitor looks after.
const (
	janitorDir = "dir" // a directory tree to remove
	janitorCg2 = "cg2" // a cgroup v2 directory: killed, emptied, removed with its children
	janitorCg1 = "cg1" // a cgroup v1 directory: removed once its processes are gone
	janitorPG  = "pg"  // a plain command's process group (isolation off): killed
)

var (
	janitorOnce sync.Once
	// janitorConn is the janitor's pipe once janitor() started it; nil before.
	janitorConn atomic.Pointer[janitorpkg.Conn]
)

// janitor returns this process's janitor, starting it on first use (the first thing to look
// after).
func janitor() *janitorpkg.Conn {
	janitorOnce.Do(func() {
		janitorConn.Store(janitorpkg.Start(janitorArg0, []string{janitorEnv + "=1"}))
	})
	return janitorConn.Load()
}

// janitorMain is the janitor: it collects registrations until its stdin ends, then releases
// what is left.
func janitorMain() int {
	left := map[string]string{} // path -> kind
	var order []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "+"):
			kind, path, ok := strings.Cut(line[1:], " ")
			if ok && (filepath.IsAbs(path) || kind == janitorPG) {
				left[path] = kind
				order = append(order, path)
			}
		case strings.HasPrefix(line, "-"):
			delete(left, line[1:])
		}
	}
	// In reverse order: a sandbox's cgroups before the directories they were made for.
	for i := len(order) - 1; i >= 0; i-- {
		p := order[i]
		kind, ok := left[p]
		if !ok {
			continue
		}
		delete(left, p)
		switch kind {
		case janitorDir:
			_ = os.RemoveAll(p)
		case janitorCg2:
			_ = os.WriteFile(filepath.Join(p, "cgroup.kill"), []byte("1"), 0)
			removeCgroup(p)
		case janitorCg1:
			removeCgroup(p)
		case janitorPG:
			if pgid, err := strconv.Atoi(p); err == nil && pgid > 1 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}
	}
	return 0
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

// lookAfter asks the janitor to remove path (of kind janitorDir, janitorCg2 or janitorCg1) if
// this process dies before released(path).
func lookAfter(kind, path string) { janitor().Send("+" + kind + " " + path) }

// released tells the janitor that path is gone. With no janitor yet nothing was registered, so
// there is nothing to tell: a sandbox that only served file calls releases its (never made)
// private TMPDIR at Stop, and that must not start a janitor process (issue 15).
func released(path string) {
	if c := janitorConn.Load(); c != nil {
		c.Send("-" + path)
	}
}
