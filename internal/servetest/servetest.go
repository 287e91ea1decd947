// Package servetest starts a real `sandboxerd serve` for tests (the SDKs', the remote adapter's):
// the engine built from this module, serving on a loopback port of its own with a state
// directory of its own, stopped with SIGTERM when the test ends, after which nothing of its
// sandboxes may be left.
package servetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Main runs the package's tests and removes the engine Binary built.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// Binary builds cmd/sandboxerd once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "servetest-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "sandboxerd")
		out, err := exec.Command("go", "build", "-o", build.bin, "github.com/sandboxer/sandboxer/cmd/sandboxerd").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build sandboxerd: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// Token makes a token named name in the tokens file (created when missing) with `sandboxerd
// serve token add`, and returns it.
func Token(t testing.TB, tokens, name string) string {
	t.Helper()
	out, err := exec.Command(Binary(t), "serve", "token", "add", name, "--tokens", tokens).Output()
	if err != nil {
		t.Fatalf("sandboxerd serve token add: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Server is a running `sandboxerd serve`.
type Server struct {
	URL      string // http://127.0.0.1:PORT
	StateDir string
	cmd      *exec.Cmd
	log      *syncBuffer
	done     chan struct{}
	stopOnce sync.Once
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listening = regexp.MustCompile(`listening on (\S+)`)

// Start starts `sandboxerd serve --listen 127.0.0.1:0` (unless the flags give --listen) with a
// state directory of its own and the extra flags, waits until it listens, and stops it when the
// test ends (Stop). URL is http://, https:// (with --tls-cert) or unix: (a socket's path).
func Start(t testing.TB, flags ...string) *Server {
	t.Helper()
	bin := Binary(t)
	state := t.TempDir()
	args := []string{"serve", "--state-dir", state}
	if !slices.Contains(flags, "--listen") {
		args = append(args, "--listen", "127.0.0.1:0")
	}
	args = append(args, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = state
	s := &Server{StateDir: state, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	cmd.Stdout = s.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			line := sc.Text()
			s.log.Write([]byte(line + "\n"))
			if m := listening.FindStringSubmatch(line); m != nil && !found {
				found = true
				addr <- m[1]
			}
		}
		close(addr)
	}()
	go func() {
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.Stop(t) })
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("sandboxerd serve ended before it listened:\n%s", s.log.String())
		}
		switch {
		case strings.HasPrefix(a, "/"):
			s.URL = "unix:" + a
		case slices.Contains(flags, "--tls-cert"):
			s.URL = "https://" + a
		default:
			s.URL = "http://" + a
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("sandboxerd serve did not listen within 60 s:\n%s", s.log.String())
	}
	return s
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Log is what the server wrote so far.
func (s *Server) Log() string { return s.log.String() }

// Stop ends the server with SIGTERM and checks that it exited 0 and left no sandbox record.
// Idempotent.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(2 * time.Minute):
			s.cmd.Process.Kill()
			<-s.done
			t.Errorf("sandboxerd serve did not stop within 2 minutes of SIGTERM:\n%s", s.Log())
			return
		}
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("sandboxerd serve exited %d:\n%s", code, s.Log())
		}
		left, _ := filepath.Glob(filepath.Join(s.StateDir, "serve", "sandboxes", "*"))
		if len(left) > 0 {
			t.Errorf("sandboxerd serve left sandboxes behind: %s", strings.Join(left, ", "))
		}
	})
}

// Context is a context for one request of a test.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
