package local_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/require"
)

// The descriptor stress: many concurrent commands, file calls and tree reads on sandboxes of every
// isolation mode, with sandboxes stopped while their commands run, and descriptor canaries that
// catch a close of a descriptor this package does not own even when no command noticed.
//
// SANDBOXER_STRESS sets the duration (a Go duration, default 30s; 3s under -short).

func stressDuration(t *testing.T) time.Duration {
	if v := os.Getenv("SANDBOXER_STRESS"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "SANDBOXER_STRESS")
		return d
	}
	if testing.Short() {
		return 3 * time.Second
	}
	return 30 * time.Second
}

// canary is a pipe holding a token: if anything closes one of its descriptors, the number is
// reused or invalid, and check fails (a different inode, EBADF, or the token gone).
type canary struct {
	r, w       *os.File
	rDev, rIno uint64
	wDev, wIno uint64
	token      []byte
}

func newCanary(t testing.TB) *canary {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	c := &canary{r: r, w: w, token: []byte(randomToken())}
	_, err = w.Write(c.token)
	require.NoError(t, err)
	c.rDev, c.rIno = fdIdentity(t, r)
	c.wDev, c.wIno = fdIdentity(t, w)
	return c
}

func fdIdentity(t testing.TB, f *os.File) (dev, ino uint64) {
	var st syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
	return uint64(st.Dev), st.Ino // int32 on darwin
}

// check verifies both descriptors still name the canary's pipe and the token is intact, then
// closes the canary.
func (c *canary) check() error {
	defer c.r.Close()
	defer c.w.Close()
	for _, e := range []struct {
		f        *os.File
		dev, ino uint64
	}{{c.r, c.rDev, c.rIno}, {c.w, c.wDev, c.wIno}} {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(e.f.Fd()), &st); err != nil {
			return fmt.Errorf("canary fd %d: %v (closed by someone else)", e.f.Fd(), err)
		}
		if uint64(st.Dev) != e.dev || st.Ino != e.ino {
			return fmt.Errorf("canary fd %d now names another file (closed and reused)", e.f.Fd())
		}
	}
	c.w.Close()
	got := make([]byte, len(c.token)+16)
	n, err := c.r.Read(got)
	if err != nil || !bytes.Equal(got[:n], c.token) {
		return fmt.Errorf("canary fd %d: read %q, %v; want %q", c.r.Fd(), got[:n], err, c.token)
	}
	return nil
}

func randomToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stressMode is one isolation mode under stress.
type stressMode struct {
	name string
	new  func(local.Config) (*local.Sandbox, error)
	cfg  local.Config
	need string // a layer the mode needs, or ""
}

func stressModes() []stressMode {
	return []stressMode{
		{name: "off", new: local.New, cfg: local.Config{Isolation: local.IsolationOff}},
		{name: "off-nopidfd", new: local.NewWithoutPidfd, cfg: local.Config{Isolation: local.IsolationOff}},
		{name: "auto", new: local.New, cfg: local.Config{}},
		{name: "pidns-command", new: local.New, cfg: local.Config{DisableLayers: []string{local.LayerCgroup}}, need: local.LayerPIDNS},
	}
}

// stressFailures collects the first failures of the stress (t.Error from many goroutines is fine,
// but thousands of them are not readable).
type stressFailures struct {
	mu   sync.Mutex
	list []string
	n    int
}

func (f *stressFailures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if len(f.list) < 20 {
		f.list = append(f.list, fmt.Sprintf(format, args...))
	}
}

func TestDescriptorStress(t *testing.T) {
	dur := stressDuration(t)
	before := make([]*canary, 32)
	for i := range before {
		before[i] = newCanary(t)
	}
	var fails stressFailures
	var ops atomic.Int64
	deadline := time.Now().Add(dur)

	var wg sync.WaitGroup
	for _, m := range stressModes() {
		if m.need != "" && !local.Probe().Available(m.need) {
			t.Logf("mode %s skipped: layer %s unavailable", m.name, m.need)
			continue
		}
		st := &stressRun{t: t, mode: m, fails: &fails, ops: &ops, deadline: deadline}
		wg.Go(st.run)
	}
	// Rolling canaries: pipes opened and checked all through the stress, so that a second close
	// of a number the kernel has handed out again is caught while it happens.
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				cs := make([]*canary, 8)
				for i := range cs {
					cs[i] = newCanary(t)
				}
				time.Sleep(time.Duration(mrand.IntN(20)) * time.Millisecond)
				for _, c := range cs {
					if err := c.check(); err != nil {
						fails.add("rolling %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, c := range before {
		if err := c.check(); err != nil {
			fails.add("%v", err)
		}
	}
	t.Logf("%d operations in %s", ops.Load(), dur)
	for _, f := range fails.list {
		t.Error(f)
	}
	if fails.n > len(fails.list) {
		t.Errorf("...and %d more failures", fails.n-len(fails.list))
	}
}

// stressRun is the stress of one isolation mode: stable sandboxes whose every result is checked
// byte for byte, and short-lived ones stopped while their commands run.
type stressRun struct {
	t        *testing.T
	mode     stressMode
	fails    *stressFailures
	ops      *atomic.Int64
	deadline time.Time
}

const (
	stressStable  = 3  // sandboxes that live through the run
	stressWorkers = 56 // concurrent callers per mode on the stable sandboxes (four modes: 224)
	stressVictims = 4  // callers that make, use and stop short-lived sandboxes
)

func (r *stressRun) newSandbox() (*local.Sandbox, error) {
	cfg := r.mode.cfg
	cfg.Root = r.t.TempDir()
	return r.mode.new(runnable(cfg))
}

func (r *stressRun) run() {
	stable := make([]*local.Sandbox, stressStable)
	for i := range stable {
		sb, err := r.newSandbox()
		if err != nil {
			r.fails.add("%s: new: %v", r.mode.name, err)
			return
		}
		defer sb.Stop(context.Background())
		stable[i] = sb
	}
	var wg sync.WaitGroup
	for w := range stressWorkers {
		wg.Go(func() {
			rng := mrand.New(mrand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := 0; time.Now().Before(r.deadline); i++ {
				sb := stable[rng.IntN(len(stable))]
				r.op(sb, rng, fmt.Sprintf("w%d-%d", w, i), false)
				r.ops.Add(1)
			}
		})
	}
	for v := range stressVictims {
		wg.Go(func() {
			rng := mrand.New(mrand.NewPCG(uint64(1000+v), uint64(time.Now().UnixNano())))
			for i := 0; time.Now().Before(r.deadline); i++ {
				r.victim(rng, fmt.Sprintf("v%d-%d", v, i))
			}
		})
	}
	wg.Wait()
}

// victim makes a sandbox, runs commands on it, and stops it while they run.
func (r *stressRun) victim(rng *mrand.Rand, id string) {
	sb, err := r.newSandbox()
	if err != nil {
		r.fails.add("%s %s: new: %v", r.mode.name, id, err)
		return
	}
	var wg sync.WaitGroup
	for j := range 8 {
		own := mrand.New(mrand.NewPCG(rng.Uint64(), uint64(j)))
		wg.Go(func() {
			r.op(sb, own, fmt.Sprintf("%s-%d", id, j), true)
			r.ops.Add(1)
		})
	}
	time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
	r.fork(sb, id)
	if err := sb.Stop(context.Background()); err != nil {
		r.fails.add("%s %s: stop: %v", r.mode.name, id, err)
	}
	wg.Wait()
}

// fork forks sb while its commands run and checks a file of the source in the fork.
func (r *stressRun) fork(sb *local.Sandbox, id string) {
	ctx := context.Background()
	data := []byte(id + "-fork")
	if err := sb.WriteFile(ctx, "forked", data); err != nil {
		r.fails.add("%s %s: write before fork: %v", r.mode.name, id, err)
		return
	}
	f, err := sb.Fork(ctx)
	if err != nil {
		r.fails.add("%s %s: fork: %v", r.mode.name, id, err)
		return
	}
	defer f.Stop(ctx)
	res, err := f.ExecuteCommand(ctx, adapter.Command{Args: []string{"cat", "forked"}, Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 || !bytes.Equal(res.Stdout, data) {
		r.fails.add("%s %s: cat in fork: %v, exit %d, stdout %q stderr %q", r.mode.name, id, err, res.ExitCode, res.Stdout, res.Stderr)
	}
}

// op runs one random operation and checks its result exactly. On a sandbox that may be stopped
// meanwhile (stopping), an operation may fail with SANDBOX_UNAVAILABLE or its command may be
// killed, but whatever it reports as a normal completion must still be exact.
func (r *stressRun) op(sb *local.Sandbox, rng *mrand.Rand, id string, stopping bool) {
	ctx := context.Background()
	fail := func(format string, args ...any) {
		r.fails.add("%s %s: %s", r.mode.name, id, fmt.Sprintf(format, args...))
	}
	gone := func(err error) bool { return stopping && errs.CodeOf(err) == errs.SandboxUnavailable }
	killed := func(res adapter.Result) bool { return stopping && res.ExitCode == 128+int(syscall.SIGKILL) }
	token := id + "-" + randomToken()
	rng2 := mrand.New(mrand.NewPCG(rng.Uint64(), 0)) // for a goroutine of the operation

	switch k := rng.IntN(12); {
	case k < 4: // both streams and an exit code
		code := rng.IntN(3)
		res, err := sb.ExecuteCommand(ctx, adapter.Command{
			Args:    []string{"sh", "-c", `printf %s "$1"; printf %s "$2" >&2; exit "$3"`, "sh", token + "-out", token + "-err", strconv.Itoa(code)},
			Timeout: time.Minute,
		})
		switch {
		case gone(err) || killed(res):
		case err != nil:
			fail("exec: %v", err)
		case res.ExitCode != code || string(res.Stdout) != token+"-out" || string(res.Stderr) != token+"-err":
			fail("exit %d (want %d) stdout %q stderr %q", res.ExitCode, code, res.Stdout, res.Stderr)
		}
	case k < 5: // stdin through cat, and a fork whose child writes after the parent
		res, err := sb.ExecuteCommand(ctx, adapter.Command{
			Args:    []string{"sh", "-c", `cat; (echo "$1") & wait`, "sh", token},
			Stdin:   bytes.NewReader([]byte(token + "-in\n")),
			Timeout: time.Minute,
		})
		switch {
		case gone(err) || killed(res):
		case err != nil:
			fail("exec stdin: %v", err)
		case res.ExitCode != 0 || string(res.Stdout) != token+"-in\n"+token+"\n":
			fail("stdin: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	case k < 6: // more output than a pipe holds, and a cut
		lines := 2000 + rng.IntN(4000)
		limit := 1000 + rng.IntN(50000)
		res, err := sb.ExecuteCommand(ctx, adapter.Command{
			Args:           []string{"sh", "-c", `i=0; while [ $i -lt "$2" ]; do echo "$1"; i=$((i+1)); done`, "sh", token, strconv.Itoa(lines)},
			MaxOutputBytes: limit,
			Timeout:        time.Minute,
		})
		full := bytes.Repeat([]byte(token+"\n"), lines)
		want := full[:min(limit, len(full))]
		switch {
		case gone(err) || killed(res):
		case err != nil:
			fail("exec flood: %v", err)
		case res.ExitCode != 0 || !bytes.Equal(res.Stdout, want) || int64(len(full)) != int64(len(res.Stdout))+res.StdoutDropped:
			fail("flood: exit %d, %d bytes kept + %d dropped, want %d of %d", res.ExitCode, len(res.Stdout), res.StdoutDropped, len(want), len(full))
		}
	case k < 8: // a file round trip
		name := "f-" + id
		data := []byte(token + "\x00binary\n")
		if err := sb.WriteFile(ctx, name, data); err != nil {
			if !gone(err) {
				fail("write: %v", err)
			}
			return
		}
		got, err := sb.ReadFile(ctx, name)
		switch {
		case gone(err):
		case err != nil:
			fail("read: %v", err)
		case !bytes.Equal(got, data):
			fail("read %q, want %q", got, data)
		}
	case k < 10: // a cancellation racing the command's end (the context's callback and the exit)
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			time.Sleep(time.Duration(rng2.IntN(3000)) * time.Microsecond)
			cancel()
		}()
		res, err := sb.ExecuteCommand(cctx, adapter.Command{Args: []string{"echo", token}, Timeout: time.Minute})
		cancel()
		switch {
		case gone(err) || killed(res) || errors.Is(err, context.Canceled):
		case err != nil:
			fail("exec cancelled: %v", err)
		case res.ExitCode != 0 || string(res.Stdout) != token+"\n":
			fail("cancel race: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	default: // a tree read of a directory of known files
		dir := "t-" + id
		want := map[string]string{}
		for i := range 12 {
			want[fmt.Sprintf("%s/%d", dir, i)] = fmt.Sprintf("%s-%d", token, i)
		}
		files := make([]adapter.File, 0, len(want))
		for p, c := range want {
			files = append(files, adapter.File{Path: p, Data: []byte(c)})
		}
		if err := sb.WriteFiles(ctx, files); err != nil {
			if !gone(err) {
				fail("write files: %v", err)
			}
			return
		}
		var mu sync.Mutex
		got := map[string]string{}
		err := sb.ReadTree(ctx, dir, 2, nil, func(fi adapter.FileInfo, data []byte) error {
			mu.Lock()
			defer mu.Unlock()
			got[fi.Path] = string(data)
			return nil
		})
		switch {
		case gone(err):
		case err != nil:
			fail("read tree: %v", err)
		case fmt.Sprint(got) != fmt.Sprint(want):
			fail("read tree: %v, want %v", got, want)
		}
	}
}
