package filesync_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/sync/filesync"
	"github.com/sandboxer/sandboxer/sync/filesynctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlushKilled runs a flush in a child process (this test binary again) and kills it with
// SIGKILL at a spread of moments: every store entry must then be at its old or its new content,
// never torn, and the next flush (in this process, resuming from the state file) must complete.

const crashEnv = "SANDBOXER_FILESYNC_CRASH_CHILD"

type crashConfig struct {
	Store     string `json:"store"` // a key of filesynctest.Stores
	StoreDir  string `json:"storeDir"`
	Workspace string `json:"workspace"`
	StateFile string `json:"stateFile"`
}

const crashN = 160

func crashOld(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("old-%d.", i)), 2000) }
func crashNew(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("NEW:%d!", i)), 20000+i) }

func TestFlushKilledChild(t *testing.T) {
	raw := os.Getenv(crashEnv)
	if raw == "" {
		t.Skip("only runs as the child of TestFlushKilled")
	}
	var c crashConfig
	require.NoError(t, json.Unmarshal([]byte(raw), &c))
	st := filesynctest.Stores[c.Store](t, c.StoreDir)
	sb, err := local.New(local.Config{Root: c.Workspace})
	require.NoError(t, err)
	defer sb.Stop(context.Background())
	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}, StateFile: c.StateFile})
	require.NoError(t, err)
	fmt.Println("ready")
	_, err = s.Flush(context.Background())
	require.NoError(t, err)
	fmt.Println("done")
}

func TestFlushKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	// Kill triggers: a delay after the child says it starts flushing, or the moment a file of
	// the store shows that the commit is under way (dirstore's staging area and journal, SQLite's
	// write-ahead log growing), plus a little extra delay.
	triggers := map[string][]trigger{
		"dirstore":    {{}, {path: ".staging"}, {path: ".journal"}, {path: ".journal", delay: 2 * time.Millisecond}},
		"sqlitestore": {{}, {path: "store.db-wal", minSize: 1 << 20}, {path: "store.db-wal", minSize: 12 << 20}, {path: "store.db-wal", minSize: 20 << 20}},
	}
	for _, name := range []string{"dirstore", "sqlitestore"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i, tr := range triggers[name] {
				crashTrial(t, name, i, tr)
			}
		})
	}
}

// trigger says when the parent kills the child: once path (in the store directory) exists with
// at least minSize bytes, if set, then after delay.
type trigger struct {
	path    string
	minSize int64
	delay   time.Duration
}

// crashTrial runs one killed flush and checks the store. Both stores commit a flush's batch
// atomically, so the entries are expected all old or all new; the check is per entry all the same.
func crashTrial(t *testing.T, store string, trial int, tr trigger) {
	ctx := context.Background()
	base := t.TempDir()
	cfg := crashConfig{Store: store, StoreDir: filepath.Join(base, "store"), Workspace: filepath.Join(base, "ws"),
		StateFile: filepath.Join(base, "state.json")}
	require.NoError(t, os.MkdirAll(cfg.StoreDir, 0o755))
	st := filesynctest.Stores[store](t, cfg.StoreDir)
	var seed []filesync.Change
	for i := range crashN {
		seed = append(seed, filesync.Change{Collection: "files", Path: fmt.Sprintf("d%d/f%d", i%7, i), Content: crashOld(i)})
	}
	_, err := st.Apply(ctx, seed)
	require.NoError(t, err)
	sb, err := local.New(local.Config{Root: cfg.Workspace})
	require.NoError(t, err)
	defer sb.Stop(context.Background())
	s, err := filesync.New(sb, st, filesync.Options{Collections: []string{"files"}, StateFile: cfg.StateFile})
	require.NoError(t, err)
	_, err = s.Hydrate(ctx)
	require.NoError(t, err)
	for i := range crashN {
		require.NoError(t, sb.WriteFile(ctx, fmt.Sprintf("d%d/f%d", i%7, i), crashNew(i)))
	}
	require.NoError(t, st.Close()) // the child owns the store now (both stores allow sharing; this keeps it honest)

	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFlushKilledChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"="+string(raw))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	var log bytes.Buffer
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if sc.Text() == "ready" {
			break
		}
	}
	if tr.path != "" {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if fi, err := os.Stat(filepath.Join(cfg.StoreDir, tr.path)); err == nil && fi.Size() >= tr.minSize {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	time.Sleep(tr.delay)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
	}
	werr := cmd.Wait()
	finished := bytes.Contains(log.Bytes(), []byte("\ndone\n"))
	if !finished {
		var ee *exec.ExitError
		require.ErrorAs(t, werr, &ee, "trial %d: child output:\n%s", trial, log.String())
	}

	// Every entry is old or new, with a hash that matches its content.
	st2 := filesynctest.Stores[store](t, cfg.StoreDir)
	t.Cleanup(func() { st2.Close() })
	newCount := 0
	for i := range crashN {
		p := fmt.Sprintf("d%d/f%d", i%7, i)
		e, err := st2.Get(ctx, "files", p)
		require.NoError(t, err, "trial %d: %s", trial, p)
		got, err := st2.Read(ctx, "files", p)
		require.NoError(t, err)
		require.Equal(t, e.Hash, filesync.Hash(got), "trial %d: %s hash and content agree", trial, p)
		switch {
		case bytes.Equal(got, crashNew(i)):
			newCount++
		case bytes.Equal(got, crashOld(i)):
		default:
			t.Fatalf("trial %d: %s is torn (%d bytes)", trial, p, len(got))
		}
	}
	if finished {
		assert.Equal(t, crashN, newCount, "a finished flush wrote everything")
	}

	// The next flush, resuming from the state file, completes and brings the store up to date.
	sb2, err := local.New(local.Config{Root: cfg.Workspace})
	require.NoError(t, err)
	defer sb2.Stop(context.Background())
	s2, err := filesync.New(sb2, st2, filesync.Options{Collections: []string{"files"}, StateFile: cfg.StateFile})
	require.NoError(t, err)
	rep, err := s2.Flush(ctx)
	require.NoError(t, err, "trial %d", trial)
	assert.Empty(t, rep.Conflicts)
	for i := range crashN {
		got, err := st2.Read(ctx, "files", fmt.Sprintf("d%d/f%d", i%7, i))
		require.NoError(t, err)
		require.True(t, bytes.Equal(crashNew(i), got))
	}
	t.Logf("trial %d (%+v): finished=%v, %d of %d entries new at the kill", trial, tr, finished, newCount, crashN)
}
