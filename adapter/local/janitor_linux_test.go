//go:build linux && !sandboxer_portable

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

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
