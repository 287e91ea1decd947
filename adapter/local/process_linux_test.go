package local_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gone waits (10 s at most) until no process has token in its command line.
func tokenGone(t *testing.T, token, why string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(token)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still running: %v", why, processesWith(token))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Started processes outlive the call that started them; what one leaves behind when it exits
// dies with it; Stop kills the others' whole trees and releases their cgroups.
func TestStartedTreesEnd(t *testing.T) {
	for _, iso := range []string{local.IsolationAuto, local.IsolationOff} {
		t.Run(iso, func(t *testing.T) {
			cgroupsBefore := cgroupsOf(os.Getpid())
			sb, err := local.New(runnable(local.Config{Root: t.TempDir(), Isolation: iso}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = sb.Stop(context.Background()) })

			ctx, cancel := context.WithCancel(context.Background())
			tree := "tree-" + randomToken()
			p, err := sb.Start(ctx, adapter.Command{Args: []string{"sh", "-c", "sh -c 'sleep 600; true' bg-$0 & echo up; sleep 600; true", tree}})
			require.NoError(t, err)
			cancel() // the start call's context ends; the process does not
			left := "left-" + randomToken()
			q, err := sb.Start(context.Background(), adapter.Command{Args: []string{"sh", "-c", "sh -c 'sleep 600; true' bg-$0 & echo done", left}})
			require.NoError(t, err)

			wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer wcancel()
			st, err := q.Wait(wctx)
			require.NoError(t, err)
			assert.Equal(t, 0, st.ExitCode)
			tokenGone(t, left, "what a process left behind when it exited")

			require.NoError(t, p.(interface {
				WaitOutput(context.Context, int64) error
			}).WaitOutput(wctx, 0))
			st, err = p.State(wctx)
			require.NoError(t, err)
			assert.True(t, st.Running, "a started process outlives its start call's context")
			// "up" comes after the fork of the background sh, maybe before its exec: a process in
			// the middle of execve(2) has an empty command line for a moment.
			assert.Eventually(t, func() bool { return len(processesWith(tree)) >= 2 }, 10*time.Second, 10*time.Millisecond,
				"sh and its background sh: %v", processesWith(tree))

			if iso == local.IsolationAuto && local.Probe().Available(local.LayerCgroup) {
				assert.Greater(t, len(cgroupsOf(os.Getpid())), len(cgroupsBefore), "the process runs in a cgroup of its own")
			}

			require.NoError(t, sb.Stop(wctx))
			st, err = p.Wait(wctx)
			require.NoError(t, err)
			assert.Equal(t, 128+9, st.ExitCode)
			tokenGone(t, tree, "a started process's tree after Stop")
			var extra []string
			for _, c := range cgroupsOf(os.Getpid()) {
				if !slices.Contains(cgroupsBefore, c) {
					extra = append(extra, c)
				}
			}
			assert.Empty(t, extra, "cgroups left after Stop")
		})
	}
}
