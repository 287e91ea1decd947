package oci

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	janitorpkg "github.com/sandboxer/sandboxer/adapter/internal/janitor"
)

// The janitor removes the sandboxes that are not persistent when the process that made them dies
// without stopping them (a SIGKILL). Their agents see their streams end and exit, which stops the
// containers, but the runtime's state of each container, its cgroups, its directory and its
// workspace need somebody alive to go: without the janitor they wait for Prune.
//
// It is started with the first sandbox to look after (package adapter/internal/janitor, which
// adapter/local's janitor uses too). This process writes "+ID STATEDIR" when it has written a
// sandbox's record and "-ID STATEDIR" when Stop has removed the sandbox; when the pipe ends, this
// process is gone, and the janitor removes what is still registered, then exits.

const (
	janitorArg0 = "sandboxer-oci-janitor"
	janitorEnv  = "SANDBOXER_OCI_JANITOR"
)

func init() {
	if len(os.Args) == 1 && os.Args[0] == janitorArg0 && os.Getenv(janitorEnv) == "1" {
		os.Exit(janitorMain())
	}
}

// PATH: a runtime whose recorded path moved is looked up again.
var janitor = sync.OnceValue(func() *janitorpkg.Conn {
	return janitorpkg.Start(janitorArg0, []string{janitorEnv + "=1", "PATH=" + os.Getenv("PATH")})
})

// noJanitor leaves crashes to Prune (set by tests of Prune, through export_test.go).
var noJanitor bool

// lookAfter asks the janitor to remove sandbox id of stateDir if this process dies before
// released(id, stateDir), and reports whether it did.
func lookAfter(id, stateDir string) bool {
	if noJanitor {
		return false
	}
	janitor().Send("+" + id + " " + stateDir)
	return true
}

// released tells the janitor that sandbox id is gone.
func released(id, stateDir string) { janitor().Send("-" + id + " " + stateDir) }

// janitorMain is the janitor: it collects registrations until its stdin ends, then removes the
// sandboxes that are left.
func janitorMain() int {
	left := map[string]bool{}
	var order []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		switch line[0] {
		case '+':
			left[line[1:]] = true
			order = append(order, line[1:])
		case '-':
			delete(left, line[1:])
		}
	}
	var wg sync.WaitGroup
	for _, entry := range order {
		id, stateDir, ok := strings.Cut(entry, " ")
		if !left[entry] || !ok || !validID(id) {
			continue
		}
		delete(left, entry)
		wg.Go(func() {
			if err := releaseOrphan(stateDir, id); err != nil {
				fmt.Fprintf(os.Stderr, "sandboxer oci janitor: sandbox %s: %v\n", id, err)
			}
		})
	}
	wg.Wait()
	return 0
}

// releaseOrphan removes sandbox id of stateDir as Stop would have. A runtime that its dead owner
// left starting the container may still create it meanwhile: the removal is repeated until
// nothing of the sandbox is left, for up to 10 s.
func releaseOrphan(stateDir, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{StateDir: stateDir}
	lay := layoutOf(stateDir)
	rec, err := lay.readRecord(id)
	if err != nil {
		return err
	}
	rt, err := recordRuntime(cfg, rec)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = removeSandbox(ctx, rt, lay, rec)
		if err == nil {
			left := leftovers(ctx, cfg, id)
			if len(left) == 0 {
				return nil
			}
			err = fmt.Errorf("left: %s", strings.Join(left, ", "))
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
