package oci

import (
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

// PATH: a runtime whose recorded path moved is looked up again.
var janitor = janitorpkg.New("sandboxer-oci-janitor", "SANDBOXER_OCI_JANITOR", "PATH="+os.Getenv("PATH"))

func init() { janitor.Serve(releaseOrphans) }

// noJanitor leaves crashes to Prune (set by tests of Prune, through export_test.go).
var noJanitor bool

// lookAfter asks the janitor to remove sandbox id of stateDir if this process dies before
// released(id, stateDir), and reports whether it did.
func lookAfter(id, stateDir string) bool {
	if noJanitor {
		return false
	}
	janitor.Register(id + " " + stateDir)
	return true
}

// released tells the janitor that sandbox id is gone.
func released(id, stateDir string) { janitor.Release(id + " " + stateDir) }

// releaseOrphans is the janitor's work once its owner is gone: it removes the sandboxes left
// ("ID STATEDIR"), all at once.
func releaseOrphans(left []string) {
	var wg sync.WaitGroup
	for _, entry := range left {
		id, stateDir, ok := strings.Cut(entry, " ")
		if !ok || !validID(id) {
			continue
		}
		wg.Go(func() {
			if err := releaseOrphan(stateDir, id); err != nil {
				fmt.Fprintf(os.Stderr, "sandboxer oci janitor: sandbox %s: %v\n", id, err)
			}
		})
	}
	wg.Wait()
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
