package remote_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/remote"
	"github.com/sandboxer/sandboxer/internal/servetest"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestHundredSandboxesByTenClients: 10 clients each create 10 sandboxes at once (100 alive
// together), use each (a file written and read back by a command, a tool call) and delete them;
// no call fails, and nothing is left: the server lists none, keeps no record (servetest checks
// at its stop), and for docker no container of the server's remains.
func TestHundredSandboxesByTenClients(t *testing.T) {
	for _, ad := range []string{"local", "docker"} {
		t.Run(ad, func(t *testing.T) {
			if ad == "docker" {
				if testing.Short() {
					t.Skip("-short: 100 docker containers take a minute or two")
				}
				if err := dockerReachable(); err != nil {
					if testenv.Required("docker") {
						t.Fatalf("docker: %v", err)
					}
					t.Skipf("docker: %v", err)
				}
			}
			srv := servetest.Start(t, "--adapter", ad)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			start := time.Now()
			var wg sync.WaitGroup
			errc := make(chan error, 100)
			for c := range 10 {
				wg.Go(func() {
					var mine []*remote.Sandbox
					defer func() {
						for _, sb := range mine {
							if err := sb.Stop(ctx); err != nil {
								errc <- fmt.Errorf("client %d: delete %s: %w", c, sb.ID(), err)
							}
						}
					}()
					var mu sync.Mutex
					var inner sync.WaitGroup
					for i := range 10 {
						inner.Go(func() {
							sb, err := remote.New(ctx, remote.Config{URL: srv.URL})
							if err != nil {
								errc <- fmt.Errorf("client %d: create: %w", c, err)
								return
							}
							mu.Lock()
							mine = append(mine, sb)
							mu.Unlock()
							if err := use(ctx, sb, fmt.Sprintf("client %d sandbox %d", c, i)); err != nil {
								errc <- fmt.Errorf("client %d: %s: %w", c, sb.ID(), err)
							}
						})
					}
					inner.Wait()
				})
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
			t.Logf("%s: 100 sandboxes created, used and deleted by 10 clients in %s", ad, time.Since(start).Round(time.Millisecond))
			pid := srv.PID()
			srv.Stop(t)
			if ad == "docker" {
				infos, err := docker.List(ctx, docker.Config{})
				require.NoError(t, err)
				for _, i := range infos {
					assert.NotRegexp(t, fmt.Sprintf(":%d$", pid), i.Owner, "a container of the server is left: %+v", i)
				}
			}
		})
	}
}

// use writes a file, reads it back with a command, and reads it with the read tool.
func use(ctx context.Context, sb *remote.Sandbox, text string) error {
	if err := sb.WriteFile(ctx, "note.txt", []byte(text)); err != nil {
		return err
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "note.txt"}})
	if err != nil {
		return err
	}
	if string(res.Stdout) != text || res.ExitCode != 0 {
		return fmt.Errorf("cat: exit %d, %q", res.ExitCode, res.Stdout)
	}
	reply, err := sb.CallTool(ctx, "read", []byte(`{"path":"note.txt"}`), remote.ToolCall{})
	if err != nil {
		return err
	}
	if want := fmt.Sprintf("{\"ok\":true,\"output\":%q}\n", text); string(reply) != want {
		return fmt.Errorf("read: %s, want %s", reply, want)
	}
	return nil
}

func dockerReachable() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := docker.List(ctx, docker.Config{})
	return err
}
