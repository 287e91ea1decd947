package docker_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
)

// A real-work case (issue 35's figures): a project no one here wrote, its files, and the command
// that builds or tests it, run the same way on the host and in the Debian toolchain image (which
// holds this machine's Go at /usr/local/go and Debian's python3, gcc and make, as the host has).
type realWork struct {
	name  string
	files func(b *testing.B) map[string][]byte
	cmd   string
	needs []string // programs the host needs for the bare run
}

// moduleFiles reads the files of a module of the module cache (go env GOMODCACHE), as a project.
func moduleFiles(b *testing.B, mod string) map[string][]byte {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(b, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), mod)
	files := map[string][]byte{}
	require.NoError(b, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = data
		return err
	}))
	return files
}

var realWorks = []realWork{
	{
		// The tests of a module of the module cache (go-gitdiff: 10 k lines, its own testdata).
		name:  "go-test",
		files: func(b *testing.B) map[string][]byte { return moduleFiles(b, "github.com/bluekeyes/go-gitdiff@v0.9.0") },
		cmd:   "/usr/local/go/bin/go test -count=1 ./... >/dev/null",
		needs: []string{"/usr/local/go/bin/go"},
	},
	{
		// Three files of Python's own test suite.
		name:  "python-test",
		files: func(*testing.B) map[string][]byte { return map[string][]byte{".keep": nil} },
		cmd:   "python3 -m test test_json test_difflib test_textwrap >/dev/null",
		needs: []string{"python3"},
	},
	{
		// A C build with make: SQLite's speedtest1 and wordcount (from the module cache's
		// modernc.org/sqlite test data) against the system's libsqlite3.
		name: "c-build",
		files: func(b *testing.B) map[string][]byte {
			f := moduleFiles(b, "modernc.org/sqlite@v1.60.1/testdata/tcl")
			return map[string][]byte{
				"speedtest1.c": f["speedtest1.c"], "wordcount.c": f["wordcount.c"],
				"Makefile": []byte("all: speedtest1 wordcount\n%: %.c\n\tgcc -O2 -o $@ $< -lsqlite3\nclean:\n\trm -f speedtest1 wordcount\n"),
			}
		},
		cmd:   "make -s clean all",
		needs: []string{"gcc", "make", "/usr/include/sqlite3.h"},
	},
}

// BenchmarkRealWork runs each case bare on the host (its caches warm from a first run), in a new
// docker sandbox of the Debian toolchain image (first call: empty caches) and again in that
// sandbox (warm), each with no CPU limit, 4 GiB of memory and a 1 GiB /tmp (a cold go test
// compiles the standard library there: the default 64 MiB is too small for it):
// `go test -run '^$' -bench RealWork -benchtime 3x ./adapter/docker/`.
func BenchmarkRealWork(b *testing.B) {
	img := debianImage(b)
	for _, w := range realWorks {
		files := w.files(b)
		b.Run(w.name+"/bare-warm", func(b *testing.B) {
			for _, n := range w.needs {
				_, err := exec.LookPath(n)
				if filepath.IsAbs(n) {
					_, err = os.Stat(n)
				}
				if err != nil {
					b.Skipf("the host lacks %s: %v", n, err)
				}
			}
			dir := b.TempDir()
			for p, data := range files {
				require.NoError(b, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
				require.NoError(b, os.WriteFile(filepath.Join(dir, p), data, 0o644))
			}
			run := func() {
				cmd := exec.Command("sh", "-c", w.cmd)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "HOME="+dir, "GOCACHE="+filepath.Join(dir, ".cache", "go-build"), "GOFLAGS=-mod=mod")
				out, err := cmd.CombinedOutput()
				require.NoError(b, err, "%s", out)
			}
			run() // warm the caches
			b.ResetTimer()
			for range b.N {
				run()
			}
		})
		sandbox := func(b *testing.B) (*docker.Sandbox, func()) {
			sb, err := docker.New(context.Background(), docker.Config{Image: img, MemoryBytes: 4 << 30, TmpBytes: 1 << 30, NanoCPUs: -1})
			require.NoError(b, err)
			var all []adapter.File
			for p, data := range files {
				all = append(all, adapter.File{Path: p, Data: data})
			}
			require.NoError(b, sb.WriteFiles(context.Background(), all))
			return sb, func() {
				res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", w.cmd},
					Env: []string{"GOFLAGS=-mod=mod"}, Timeout: 10 * time.Minute, MaxOutputBytes: 1 << 20})
				require.NoError(b, err)
				require.Equal(b, 0, res.ExitCode, "%s", bytes.Join([][]byte{res.Stdout, res.Stderr}, nil))
			}
		}
		b.Run(w.name+"/docker-first", func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				sb, run := sandbox(b)
				b.StartTimer()
				run()
				b.StopTimer()
				sb.Stop(context.Background())
				b.StartTimer()
			}
		})
		b.Run(w.name+"/docker-warm", func(b *testing.B) {
			sb, run := sandbox(b)
			defer sb.Stop(context.Background())
			run()
			b.ResetTimer()
			for range b.N {
				run()
			}
		})
	}
}
