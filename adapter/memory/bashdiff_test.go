package memory_test

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/stretchr/testify/require"
)

// The differential test: every script of testdata/bashdiff/*.sh runs in real bash and in the memory
// adapter; stdout, whether stderr is empty, and the exit status must agree. The scripts that are
// known to differ are listed, each with its reason, in testdata/bashdiff/known.txt; the test fails
// when a script not listed there differs, and when a listed one agrees (so the list stays true).
//
//	go test ./adapter/memory -run TestBashDiff -v                  # the agreement figure
//	go test ./adapter/memory -run TestBashDiff -bashdiff.show=NAME # both sides of cases matching NAME
var showDiff = flag.String("bashdiff.show", "", "print bash's and the memory adapter's results for the cases whose id contains this text")

// bashDiffMinAgreement is the share of the corpus that must agree with bash.
const bashDiffMinAgreement = 0.98

type diffCase struct {
	id, script string
}

type diffResult struct {
	stdout    string
	stderr    string
	code      int
	errCode   errs.Code // the memory adapter's error code, if it returned an error
	errText   string
	timedOut  bool
	duration  time.Duration
	isBashRun bool
}

func (r diffResult) String() string {
	s := fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	if r.errCode != "" {
		s += fmt.Sprintf(", error %s: %s", r.errCode, r.errText)
	}
	if r.timedOut {
		s += " (timed out)"
	}
	return s
}

// loadDiffCases reads the corpus: each file holds cases that start with a line "#### NAME"; the
// case's id is FILE/NAME (FILE without .sh).
func loadDiffCases(t *testing.T, dir string) []diffCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sh"))
	require.NoError(t, err)
	var cases []diffCase
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		stem := strings.TrimSuffix(filepath.Base(f), ".sh")
		var cur *diffCase
		var body []string
		flush := func() {
			if cur != nil {
				cur.script = strings.TrimRight(strings.Join(body, "\n"), "\n") + "\n"
				cases = append(cases, *cur)
			}
		}
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "#### "); ok {
				flush()
				id := stem + "/" + strings.TrimSpace(name)
				require.False(t, seen[id], "duplicate case %s", id)
				require.NotContains(t, id, " ", "case names have no spaces: %s", id)
				seen[id] = true
				cur, body = &diffCase{id: id}, nil
				continue
			}
			if cur != nil {
				body = append(body, line)
			}
		}
		flush()
	}
	return cases
}

// loadKnown reads known.txt: "ID REASON" per line, # comments.
func loadKnown(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	known := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		require.NotEmpty(t, strings.TrimSpace(reason), "known difference %s has no reason", id)
		require.NotContains(t, known, id, "known difference %s listed twice", id)
		known[id] = strings.TrimSpace(reason)
	}
	require.NoError(t, sc.Err())
	return known
}

func runBash(t *testing.T, script string) diffResult {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "-c", script)
	cmd.Args[0] = "bash" // $0, as the memory adapter's "bash -c" has it
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8", "TZ=UTC", "USER=sandbox",
		"LOGNAME=sandbox", "SHELL=/bin/sh", "TMPDIR=" + dir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	res := diffResult{isBashRun: true, duration: time.Since(start), timedOut: ctx.Err() != nil,
		stdout: strings.ReplaceAll(stdout.String(), dir, memory.Workspace),
		stderr: strings.ReplaceAll(stderr.String(), dir, memory.Workspace)}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatalf("bash: %v", err)
	}
	return res
}

func runMemory(t *testing.T, script string) diffResult {
	sb, err := memory.New(memory.Config{Timeout: 10 * time.Second})
	require.NoError(t, err)
	defer func() { _ = sb.Stop(context.Background()) }()
	start := time.Now()
	res, err := sb.ExecuteCommand(context.Background(), adapter.Command{Args: []string{"bash", "-c", script}})
	out := diffResult{stdout: string(res.Stdout), stderr: string(res.Stderr), code: res.ExitCode, duration: time.Since(start)}
	if err != nil {
		out.errCode, out.errText = errs.CodeOf(err), err.Error()
		out.timedOut = out.errCode == errs.ProcessTimeout
	}
	return out
}

func agree(b, m diffResult) bool {
	return m.errCode == "" && !b.timedOut && b.stdout == m.stdout && (b.stderr == "") == (m.stderr == "") && b.code == m.code
}

func TestBashDiff(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash to compare with")
	}
	cases := loadDiffCases(t, "testdata/bashdiff")
	known := loadKnown(t, "testdata/bashdiff/known.txt")
	require.GreaterOrEqual(t, len(cases), 500, "the corpus has at least 500 scripts")
	ids := map[string]bool{}
	for _, c := range cases {
		ids[c.id] = true
	}
	for id := range known {
		require.True(t, ids[id], "known.txt lists %s, which is not in the corpus", id)
	}

	type outcome struct {
		c    diffCase
		b, m diffResult
	}
	results := make([]outcome, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, c := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = outcome{c: c, b: runBash(t, c.script), m: runMemory(t, c.script)}
		}()
	}
	wg.Wait()

	agreed, crashes := 0, 0
	var unexpected, stale []string
	areas := map[string][2]int{} // file stem: agreeing, all
	for _, r := range results {
		ok := agree(r.b, r.m)
		area, _, _ := strings.Cut(r.c.id, "/")
		n := areas[area]
		n[1]++
		if ok {
			agreed++
			n[0]++
		}
		areas[area] = n
		if r.m.errCode == errs.Internal {
			crashes++
			t.Errorf("%s: the memory adapter crashed: %s", r.c.id, r.m.errText)
		}
		if *showDiff != "" && strings.Contains(r.c.id, *showDiff) {
			t.Logf("%s:\n%s\n  bash:   %s\n  memory: %s", r.c.id, r.c.script, r.b, r.m)
		}
		_, isKnown := known[r.c.id]
		switch {
		case !ok && !isKnown:
			unexpected = append(unexpected, fmt.Sprintf("%s:\n%s  bash:   %s\n  memory: %s", r.c.id, r.c.script, r.b, r.m))
		case ok && isKnown:
			stale = append(stale, r.c.id)
		}
	}
	sort.Strings(stale)
	rate := float64(agreed) / float64(len(cases))
	t.Logf("bashdiff: %d scripts, %d agree with bash (%.1f%%), %d known differences, %d crashes",
		len(cases), agreed, 100*rate, len(known), crashes)
	names := make([]string, 0, len(areas))
	for a := range areas {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		t.Logf("  %-14s %4d/%-4d %5.1f%%", a, areas[a][0], areas[a][1], 100*float64(areas[a][0])/float64(areas[a][1]))
	}
	for _, u := range unexpected {
		t.Errorf("differs from bash and is not in known.txt: %s", u)
	}
	for _, s := range stale {
		t.Errorf("%s agrees with bash now: remove it from known.txt", s)
	}
	require.GreaterOrEqual(t, rate, bashDiffMinAgreement, "agreement with bash")
}
