// Package janitor starts the janitor process of an adapter and writes to it: the adapters whose
// sandboxes leave things on the host (adapter/local: directories, cgroups, process groups;
// adapter/oci: containers; adapter/docker: the directories of direct streams) register them with
// a process that outlives a SIGKILL of their owner.
//
// The janitor is this binary again (/proc/self/exe, with an argv[0] the adapter recognises in an
// init function, through Janitor.Serve), in a session of its own. Its stdin is a pipe whose write
// end only this process holds (close-on-exec: no command or runtime inherits it); this process
// writes "+ENTRY" when it makes something and "-ENTRY" when it has released it, where ENTRY is
// one line in a form of the adapter's; when the pipe ends, this process is gone, and the janitor
// releases the entries still registered, then exits.
package janitor

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sandboxer/sandboxer/internal/inherited"
)

// Janitor is an adapter's janitor, started with the first entry registered.
type Janitor struct {
	arg0    string
	envName string
	env     []string

	once sync.Once
	conn atomic.Pointer[conn] // nil until the first Register
}

// New describes the janitor of argv[0] arg0, recognised by envName=1 in its environment, which
// also holds env.
func New(arg0, envName string, env ...string) *Janitor {
	return &Janitor{arg0: arg0, envName: envName, env: append([]string{envName + "=1"}, env...)}
}

// Serve is the janitor's main, for an adapter's init function: when this process is j's janitor
// it reads the registrations until its stdin ends, calls release with the entries left, in the
// order they were registered, and exits. Otherwise it returns at once. The janitor first closes
// every descriptor above 2 it inherited (its owner's caller's, which a janitor outliving its
// owner must not hold: a flock, the write end of a pipeline).
func (j *Janitor) Serve(release func(left []string)) {
	if len(os.Args) != 1 || os.Args[0] != j.arg0 || os.Getenv(j.envName) != "1" {
		return
	}
	_ = inherited.Close()
	release(Left(os.Stdin))
	os.Exit(0)
}

// Left reads a janitor's registrations from r to its end and returns the entries registered and
// not released since, in the order of their last registration.
func Left(r io.Reader) []string {
	var order []string       // every registration
	last := map[string]int{} // entry -> the index of its last registration in order
	registered := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		switch entry := line[1:]; line[0] {
		case '+':
			registered[entry], last[entry] = true, len(order)
			order = append(order, entry)
		case '-':
			delete(registered, entry)
		}
	}
	var left []string
	for i, entry := range order {
		if registered[entry] && last[entry] == i {
			left = append(left, entry)
		}
	}
	return left
}

// Register asks the janitor (started now if it is not yet) to release entry if this process
// dies before Release(entry). An entry holding a line break is dropped.
func (j *Janitor) Register(entry string) {
	j.once.Do(func() { j.conn.Store(start(j.arg0, j.env)) })
	j.conn.Load().send("+" + entry)
}

// Release tells the janitor that entry is gone. Before the first Register nothing was registered,
// and no janitor is started just to be told so.
func (j *Janitor) Release(entry string) {
	if c := j.conn.Load(); c != nil {
		c.send("-" + entry)
	}
}

// Started reports whether the janitor was started (a Register).
func (j *Janitor) Started() bool { return j.conn.Load() != nil }

// conn is this process's end of a janitor's pipe.
type conn struct {
	mu sync.Mutex
	w  *os.File // nil if the janitor could not start
}

// start starts a janitor with argv[0] arg0 and the environment env, off the caller's path: what
// is sent meanwhile waits in the pipe. The janitor has no stdout or stderr (/dev/null): it would
// hold a pipe of this process's caller open after this process ended.
func start(arg0 string, env []string) *conn {
	c := &conn{}
	r, w, err := os.Pipe()
	if err != nil {
		return c
	}
	c.w = w
	go func() {
		defer r.Close()
		cmd := &exec.Cmd{
			Path:        "/proc/self/exe",
			Args:        []string{arg0},
			Env:         env,
			Stdin:       r,
			SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		}
		if err := cmd.Start(); err != nil {
			return // writes then fail with EPIPE, which send ignores
		}
		r.Close()
		_ = cmd.Wait() // it exits when this process is gone, or never before
	}()
	return c
}

// send writes line (a line break in it drops it) to the janitor.
func (c *conn) send(line string) {
	if c.w == nil || strings.Contains(line, "\n") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.w.WriteString(line + "\n")
}
