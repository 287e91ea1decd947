//go:build linux && !sandboxer_portable

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
)

// TestFileCallsStartNoJanitor (issue 15): a sandbox that only serves file calls and is stopped
// starts no janitor process (its Stop releases a private TMPDIR that was never made); its first
// command does. The janitor is process-wide, so the calls run in a child process of their own.
func TestFileCallsStartNoJanitor(t *testing.T) {
	if mode := os.Getenv("SANDBOXER_TEST_JANITOR_CHILD"); mode != "" {
		janitorChild(t, mode)
		return
	}
	t.Parallel()
	for _, iso := range []string{IsolationAuto, IsolationOff} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestFileCallsStartNoJanitor$", "-test.v")
		cmd.Env = append(os.Environ(), "SANDBOXER_TEST_JANITOR_CHILD="+iso)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child (isolation %s): %v\n%s", iso, err, out)
		}
		if !strings.Contains(string(out), "after files: janitor=false\n") ||
			!strings.Contains(string(out), "after a command: janitor=true\n") {
			t.Errorf("isolation %s: want no janitor after file calls and one after a command:\n%s", iso, out)
		}
	}
}

func janitorChild(t *testing.T, iso string) {
	ctx := context.Background()
	for _, command := range []bool{false, true} {
		sb, err := New(Config{Root: t.TempDir(), Isolation: iso, Memory: NoLimit, Pids: NoLimit})
		if err != nil {
			t.Fatal(err)
		}
		if err := sb.WriteFile(ctx, "a.txt", []byte("hi\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.ReadFile(ctx, "a.txt"); err != nil {
			t.Fatal(err)
		}
		what := "files"
		if command {
			what = "a command"
			if _, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := sb.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("after %s: janitor=%v\n", what, janitor.Started())
	}
}

// TestJanitorAndHelperCloseInheritedDescriptors (issue 33): the janitor and the helpers close
// what their owner inherited from its caller. The owner, a child process, inherits as descriptor
// 5 a file its caller holds a flock on, starts a sandbox and runs a command (a helper, where
// isolation has one, and the janitor), then closes its own descriptor 5: with the sandbox still
// there, the lock is free.
func TestJanitorAndHelperCloseInheritedDescriptors(t *testing.T) {
	if mode := os.Getenv("SANDBOXER_TEST_INHERIT_CHILD"); mode != "" {
		inheritChild(t, mode, os.Getenv("SANDBOXER_TEST_LOCKFILE"))
		return
	}
	t.Parallel()
	for _, iso := range []string{IsolationAuto, IsolationOff} {
		lockfile := filepath.Join(t.TempDir(), "lockfile")
		f, err := os.Create(lockfile)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestJanitorAndHelperCloseInheritedDescriptors$", "-test.v")
		cmd.Env = append(os.Environ(), "SANDBOXER_TEST_INHERIT_CHILD="+iso, "SANDBOXER_TEST_LOCKFILE="+lockfile)
		cmd.ExtraFiles = []*os.File{nil, nil, f} // descriptor 5, as a calling script's flock
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Start()
		f.Close() // from now on the child's descriptor 5 holds the lock
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			t.Fatalf("child (isolation %s): %v\n%s", iso, err, out.String())
		}
		if !strings.Contains(out.String(), "janitor=true free=true\n") {
			t.Errorf("isolation %s: the lock is held while the sandbox runs:\n%s", iso, out.String())
		}
	}
}

func inheritChild(t *testing.T, iso, lockfile string) {
	ctx := context.Background()
	sb, err := New(Config{Root: t.TempDir(), Isolation: iso, Memory: NoLimit, Pids: NoLimit})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop(ctx)
	if _, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Close(5); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(lockfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The janitor starts off the caller's path: it may not have reached its first instructions
	// yet. 30 s bounds a wait that a janitor holding the lock would make endless.
	free := false
	for deadline := time.Now().Add(30 * time.Second); !free && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		free = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}
	fmt.Printf("janitor=%v free=%v\n", janitor.Started(), free)
}
