//go:build linux

package soak_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
)

// The environment of an owner process (TestSoakOwner).
const (
	ownerEnv = "SANDBOXER_SOAK_OWNER" // the kind of sandbox it makes; set: this process is an owner
	stateEnv = "SANDBOXER_SOAK_STATE" // the oci state directory
	markEnv  = "SANDBOXER_SOAK_MARK"  // the prefix of the markers of its long commands
	probeEnv = "SANDBOXER_SOAK_PROBE" // set: only check that the backend works
)

const (
	perBatch = 10 // sandboxes per owner; the last one's owner is killed mid-call
	alive    = 3  // sandboxes an owner has at a time, unless its kind says otherwise
)

// TestSoakOwner is not a test on its own: TestSoak runs the test binary with it as the owner of
// one batch of sandboxes. It makes perBatch sandboxes, alive at a time, each going through files,
// short commands and a long one; when the long command of the last has started it prints
// "KILL" and waits for the SIGKILL. It prints "SANDBOX i id" as each sandbox is made and
// "FAIL i reason" when something does not work.
func TestSoakOwner(t *testing.T) {
	name := os.Getenv(ownerEnv)
	if name == "" {
		t.Skip("owner process of TestSoak")
	}
	k, ok := kindByName(name)
	if !ok {
		fmt.Printf("FAIL 0 unknown kind %q\n", name)
		os.Exit(2)
	}
	if os.Getenv(probeEnv) == "1" {
		// Whether the backend works, in a process of its own: the test process makes no
		// sandbox (it would have a janitor of its own among its children).
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := k.check(ctx, os.Getenv(stateEnv)); err != nil {
			fmt.Printf("FAIL 0 %v\n", err)
		} else {
			fmt.Println("WORKS")
		}
		return
	}
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", a...)
	}
	ctx := context.Background()
	n := alive
	if k.alive != 0 {
		n = k.alive
	}
	sem := make(chan struct{}, n)
	for i := 1; i <= perBatch; i++ {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			if err := life(ctx, k, i, os.Getenv(markEnv)+"-"+strconv.Itoa(i), i == perBatch, say); err != nil {
				say("FAIL %d %v", i, err)
			}
		}()
	}
	time.Sleep(time.Hour) // the SIGKILL comes first
}

// life is the life of sandbox i: files and short commands, a long command (with the marker in
// its environment and in the argv of its shell) and short ones while it runs, then Stop; the
// last sandbox of the batch says KILL instead and waits.
func life(ctx context.Context, k kind, i int, mark string, last bool, say func(string, ...any)) error {
	sb, id, err := k.open(ctx, os.Getenv(stateEnv))
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	say("SANDBOX %d %s", i, id)
	data := []byte(mark + "\n")
	if err := sb.WriteFile(ctx, "in/data.txt", data); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := short(ctx, sb, "cat in/data.txt > out.txt && echo ok", "ok\n"); err != nil {
		return err
	}
	if got, err := sb.ReadFile(ctx, "out.txt"); err != nil || !bytes.Equal(got, data) {
		return fmt.Errorf("read: %q, %v", got, err)
	}

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := &lineWatch{line: "started\n", ch: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := sb.ExecuteCommand(lctx, adapter.Command{
			Args: []string{"sh", "-c", "sleep 600 & echo started; wait", mark},
			Env:  []string{markEnv + "=" + mark}, Stdout: started,
		})
		done <- err
	}()
	select {
	case <-started.ch:
	case err := <-done:
		return fmt.Errorf("the long command ended before it started: %v", err)
	case <-time.After(time.Minute):
		return fmt.Errorf("the long command did not start in a minute")
	}
	for j := range 3 {
		want := fmt.Sprintf("%s-%d\n", mark, j)
		if err := short(ctx, sb, fmt.Sprintf("echo %s-%d > f%d && cat f%d", mark, j, j, j), want); err != nil {
			return err
		}
	}
	if last {
		say("KILL %d", i)
		time.Sleep(time.Hour)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		return fmt.Errorf("the cancelled long command did not return in a minute")
	}
	if err := sb.Stop(ctx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}

// short runs script in sb and checks its output.
func short(ctx context.Context, sb adapter.Sandbox, script, want string) error {
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", script}, Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("%q: %w", script, err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != want {
		return fmt.Errorf("%q: exit %d, stdout %q, stderr %q", script, res.ExitCode, res.Stdout, res.Stderr)
	}
	return nil
}

// lineWatch closes ch when the stream written to it contains line.
type lineWatch struct {
	line string
	ch   chan struct{}
	mu   sync.Mutex
	buf  []byte
	once sync.Once
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if bytes.Contains(w.buf, []byte(w.line)) {
		w.once.Do(func() { close(w.ch) })
	}
	return len(p), nil
}
