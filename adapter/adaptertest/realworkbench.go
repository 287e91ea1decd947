package adaptertest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
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

// realWorkEnv is the environment every real-work command gets, on the host and in a sandbox.
var realWorkEnv = []string{"GOFLAGS=-mod=mod"}

// RealWorkSandbox is one kind of sandbox BenchmarkRealWork measures.
type RealWorkSandbox struct {
	// Name names the sub-benchmarks: CASE/NAME-first and CASE/NAME-warm.
	Name string
	// New returns a new, started sandbox of the Debian toolchain image (DebianImage), with room for
	// a cold go test: no CPU limit, some GiB of memory and a /tmp of 1 GiB (a cold go test
	// compiles the standard library there). BenchmarkRealWork stops it; New may skip b.
	New func(b *testing.B) adapter.Sandbox
}

// BenchmarkRealWork measures issue 35's real work: per case (a Go module's tests, three files of
// Python's test suite, a C build of SQLite's speedtest1), the command bare on the host with its
// caches warm from a first run (CASE/bare), then per sandbox kind the command as the first call
// of a new sandbox (CASE/NAME-first: its build caches empty) and again and again in one sandbox
// (CASE/NAME-warm). Each sandbox run is paired with a bare run right after it (not timed), and
// the sub-benchmark reports x-bare, the median of its runs over the median of those bare runs:
// on a machine whose load changes within a run, runs minutes apart would give a false ratio.
// Where the host lacks a case's toolchain, its bare run skips and no x-bare is reported. The
// sandboxes run the same command with the same environment in /workspace, HOME being the
// adapter's.
func BenchmarkRealWork(b *testing.B, sandboxes ...RealWorkSandbox) {
	for _, w := range realWorks {
		files := w.files(b)
		bare := newBareRun(b, w, files)
		b.Run(w.name+"/bare", func(b *testing.B) {
			if bare.skip != "" {
				b.Skip(bare.skip)
			}
			for range b.N {
				bare.run(b)
			}
		})
		for _, k := range sandboxes {
			start := func(b *testing.B) (adapter.Sandbox, func()) {
				sb := k.New(b)
				var all []adapter.File
				for p, data := range files {
					all = append(all, adapter.File{Path: p, Data: data})
				}
				if bw, ok := sb.(adapter.BulkWriter); ok {
					require.NoError(b, bw.WriteFiles(context.Background(), all))
				} else {
					for _, f := range all {
						require.NoError(b, sb.WriteFile(context.Background(), f.Path, f.Data))
					}
				}
				return sb, func() {
					res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"sh", "-c", w.cmd},
						Env: realWorkEnv, Timeout: 15 * time.Minute, MaxOutputBytes: 1 << 20})
					require.NoError(b, err)
					require.Equal(b, 0, res.ExitCode, "%s", bytes.Join([][]byte{res.Stdout, res.Stderr}, nil))
				}
			}
			b.Run(w.name+"/"+k.Name+"-first", func(b *testing.B) {
				var p pairs
				for range b.N {
					b.StopTimer()
					sb, run := start(b)
					b.StartTimer()
					p.sandbox = append(p.sandbox, timed(run))
					b.StopTimer()
					stopBench(sb)
					p.bare = append(p.bare, bare.pair(b))
					b.StartTimer()
				}
				p.report(b)
			})
			b.Run(w.name+"/"+k.Name+"-warm", func(b *testing.B) {
				sb, run := start(b)
				defer stopBench(sb)
				run()
				b.ResetTimer()
				var p pairs
				for range b.N {
					p.sandbox = append(p.sandbox, timed(run))
					b.StopTimer()
					p.bare = append(p.bare, bare.pair(b))
					b.StartTimer()
				}
				b.StopTimer()
				p.report(b)
			})
		}
	}
}

// bareRun is a case's project in a directory of the host, its caches warm.
type bareRun struct {
	w    realWork
	dir  string
	skip string // why there is no bare run
}

// newBareRun writes the project of w into a directory of the host and runs its command once, to
// warm the caches. Go's build cache is the process's GOCACHE when the environment sets one (a
// benchmark whose sandboxes are shown the caller's caches, the local adapter's, sets it to a
// directory of its own: their first call then finds what the host's warm run left, as a user's
// would), and else a directory of the bare run's own.
func newBareRun(b *testing.B, w realWork, files map[string][]byte) *bareRun {
	r := &bareRun{w: w}
	for _, n := range w.needs {
		_, err := exec.LookPath(n)
		if filepath.IsAbs(n) {
			_, err = os.Stat(n)
		}
		if err != nil {
			r.skip = fmt.Sprintf("the host lacks %s: %v", n, err)
			return r
		}
	}
	r.dir = b.TempDir()
	for p, data := range files {
		require.NoError(b, os.MkdirAll(filepath.Dir(filepath.Join(r.dir, p)), 0o755))
		require.NoError(b, os.WriteFile(filepath.Join(r.dir, p), data, 0o644))
	}
	r.run(b)
	return r
}

// run runs the command bare on the host.
func (r *bareRun) run(b *testing.B) {
	cmd := exec.Command("sh", "-c", r.w.cmd)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "HOME="+r.dir)
	if os.Getenv("GOCACHE") == "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+filepath.Join(r.dir, ".cache", "go-build"))
	}
	cmd.Env = append(cmd.Env, realWorkEnv...)
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
}

// pair runs the command bare as the pair of a sandbox run, and returns how long it took (0 where
// there is no bare run).
func (r *bareRun) pair(b *testing.B) time.Duration {
	if r.skip != "" {
		return 0
	}
	return timed(func() { r.run(b) })
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// pairs are the times of a sandbox's runs and of the bare runs paired with them.
type pairs struct{ sandbox, bare []time.Duration }

// report reports the medians of the bare runs (bare-s) and x-bare.
func (p pairs) report(b *testing.B) {
	if len(p.bare) == 0 || p.bare[0] == 0 {
		return
	}
	bare := median(p.bare)
	b.ReportMetric(bare.Seconds(), "bare-s")
	b.ReportMetric(float64(median(p.sandbox))/float64(bare), "x-bare")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// stopBench stops sb, with a bound on the wait.
func stopBench(sb adapter.Sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb.Stop(ctx)
}
