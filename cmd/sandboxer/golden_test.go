package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// step is one invocation of the binary in a golden case.
type step struct {
	args  []string
	stdin string
	env   []string
	host  func(e *env, ids []string) // instead of the binary: a change on the host, args[0] says which
}

func s(args ...string) step { return step{args: args} }

// onHost is a step done by the test itself, described by what.
func onHost(what string, f func(e *env, ids []string)) step {
	return step{args: []string{what}, host: f}
}

func (st step) in(stdin string) step { st.stdin = stdin; return st }

func (st step) with(env ...string) step { st.env = env; return st }

// goldenCase runs its steps in one fresh environment; the masked stdout, stderr and exit status
// of every step are compared with testdata/NAME.golden (rewritten with -update).
type goldenCase struct {
	name  string
	setup func(e *env)
	steps []step
}

var goldenCases = []goldenCase{
	// tool: every built-in, success and failure.
	{name: "tool_write_read", steps: []step{
		s("tool", "write", "--input", `{"path":"nested/file.txt","content":"hello\nworld\n"}`),
		s("tool", "read", "--input", `{"path":"nested/file.txt"}`),
		s("tool", "read").in(`{"path":"nested/file.txt"}`),
	}},
	{name: "tool_edit", setup: func(e *env) { e.write("a.txt", "one\ntwo\nthree\n") }, steps: []step{
		s("tool", "edit", "--input", `{"path":"a.txt","patch":"--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"}`),
		s("tool", "read", "--input", `{"path":"a.txt"}`),
		s("tool", "edit", "--input", `{"path":"a.txt","patch":"--- a/a.txt\n+++ b/a.txt\n@@ -10,2 +10,2 @@\n x\n-y\n+z\n"}`),
	}},
	{name: "tool_grep", setup: func(e *env) { e.write("src/a.go", "package a\nfunc Hello() {}\n") }, steps: []step{
		s("tool", "grep", "--input", `{"pattern":"Hello","path":"src"}`),
		s("tool", "grep", "--input", `{"pattern":"nothing-matches-this"}`),
		s("tool", "grep", "--input", `{"pattern":"["}`),
	}},
	{name: "tool_bash", steps: []step{
		s("tool", "bash", "--input", `{"cmd":"echo","args":["hi"]}`),
		s("tool", "bash", "--input", `{"cmd":"sh","args":["-c","echo out; echo err >&2; exit 7"]}`),
		s("tool", "bash", "--input", `{"cmd":"curl","args":["https://example.com"]}`),
		s("tool", "bash", "--input", `{"cmd":"definitely-not-a-command-xyz"}`),
		s("tool", "bash", "--input", `{"cmd":"   "}`),
	}},
	{name: "tool_errors", setup: func(e *env) { e.write("big.txt", "0123456789") }, steps: []step{
		s("tool", "read", "--input", `{"path":"missing.txt"}`),
		s("tool", "read", "--input", `{"path":"../outside"}`),
		s("tool", "read", "--input", `{"path":"/etc/passwd"}`),
		s("tool", "read", "--input", `{"path":""}`),
		s("tool", "read", "--input", `{"path":"big.txt"}`, "--max-output-bytes", "4"),
		s("tool", "write", "--input", `{"path":"x","content":"12345"}`, "--max-output-bytes", "4"),
		s("tool", "read", "--input", `{"path":"big.txt","extra":1}`),
	}},
	// usage errors: exit 2, a message on stderr, nothing on stdout.
	{name: "usage_errors", steps: []step{
		s("tool", "nope", "--input", `{}`),
		s("tool"),
		s("tool", "read", "--input", `{bad json`),
		s("tool", "read", "--input", `[1,2]`),
		s("tool", "read", "--input", `{"path":"a"} trailing`),
		s("tool", "read").in(""),
		s("tool", "read", "--bogus-flag"),
		s("tool", "read", "--input", `{}`, "--timeout", "soon"),
		s("tool", "read", "--input", `{}`, "--timeout", "2h"),
		s("tool", "read", "--input", `{}`, "--max-output-bytes", "0"),
		s("tool", "read", "--input", `{}`, "--attempt", "0"),
		s("tool", "read", "--input", `{}`, "--adapter", "nope"),
		s("tool", "read", "--input", `{}`, "--sandbox", "../../etc"),
		s("no-such-command"),
		s("exec"),
		s("sandbox"),
		s("sandbox", "rm"),
		s("log", "--limit", "-1"),
	}},
	{name: "exec", steps: []step{
		s("exec", "--", "sh", "-c", "echo to-stdout; echo to-stderr >&2"),
		s("exec", "sh", "-c", "exit 7"),
		s("exec", "--", "definitely-not-a-command-xyz"),
		s("exec", "--", "curl", "https://example.com"),
		s("exec", "--timeout", "200ms", "--", "sleep", "5"),
		s("exec", "--stdin", "--", "cat").in("piped in\n"),
		s("exec", "--", "cat").in("not passed without --stdin\n"),
		s("exec", "-e", "GREETING=hi", "--", "sh", "-c", "echo $GREETING"),
	}},
	// $ID0, $ID1 are the ids printed by earlier steps; $STATE is the state directory.
	{name: "sandbox_lifecycle", steps: []step{
		s("sandbox", "ls"),
		s("sandbox", "create"),
		s("tool", "write", "--sandbox", "$ID0", "--input", `{"path":"f","content":"in sandbox"}`),
		s("tool", "read", "--sandbox", "$ID0", "--input", `{"path":"f"}`),
		s("exec", "--sandbox", "$ID0", "--", "cat", "f"),
		s("tool", "read", "--input", `{"path":"f"}`), // the current directory was not touched
		s("sandbox", "fork", "$ID0"),
		s("tool", "write", "--sandbox", "$ID1", "--input", `{"path":"f","content":"changed in the fork"}`),
		s("tool", "read", "--sandbox", "$ID0", "--input", `{"path":"f"}`),
		s("tool", "read", "--sandbox", "$ID1", "--input", `{"path":"f"}`),
		s("sandbox", "ls"),
		s("sandbox", "ls", "--json"),
		s("sandbox", "rm", "$ID1"),
		s("tool", "read", "--sandbox", "$ID1", "--input", `{"path":"f"}`),
		s("sandbox", "rm", "sbx-000000000000"),
		s("exec", "--root", "$STATE", "--", "rm", "-r", "sandboxes/$ID0/workspace"), // refused: the state directory is sandboxer's
		onHost("rm -r $STATE/sandboxes/$ID0/workspace", func(e *env, ids []string) {
			require.NoError(e.t, os.RemoveAll(filepath.Join(e.state, "sandboxes", ids[0], "workspace")))
		}),
		s("sandbox", "ls"),
		s("tool", "read", "--sandbox", "$ID0", "--input", `{"path":"f"}`),
		// The daemon is shared with other test packages running now: keep this golden to local records.
		s("sandbox", "prune").with("DOCKER_HOST=unix:///nonexistent/docker.sock"),
		s("sandbox", "ls", "--json"),
	}},
	// A fork of a workspace holding what a command can leave there to attack the copy: a FIFO
	// (skipped and listed, the fork does not block), a link to a root-only host file (copied as
	// the link, never its content), a sparse file above the fork's size bound (refused).
	{name: "sandbox_fork_special", steps: []step{
		s("sandbox", "create"),
		s("exec", "--sandbox", "$ID0", "--", "sh", "-c", "mkfifo pipe && ln -s /etc/shadow shadow && truncate -s 2KiB big && echo kept > kept"),
		s("sandbox", "fork", "$ID0"),
		s("exec", "--sandbox", "$ID1", "--", "sh", "-c", "ls -A; readlink shadow; test -p pipe || echo no pipe; wc -c < big"),
		s("sandbox", "fork", "$ID0", "--sync-max-file-bytes", "1KiB"),
		s("sandbox", "ls"),
		s("sandbox", "rm", "$ID0", "$ID1"),
	}},
	{name: "log", steps: []step{
		s("tool", "write", "--run-id", "r1", "--node-id", "n1", "--input", `{"path":"f","content":"secret content"}`),
		s("tool", "read", "--run-id", "r1", "--node-id", "n2", "--input", `{"path":"f"}`),
		s("tool", "read", "--run-id", "r2", "--node-id", "n1", "--input", `{"path":"nope"}`),
		s("log"),
		s("log", "--run-id", "r1"),
		s("log", "--node-id", "n1", "--json"),
		s("log", "--limit", "1", "--json"),
		s("log", "--journal", "off"),
	}},
	{name: "retry_warning", steps: []step{
		s("tool", "write", "--run-id", "r", "--node-id", "n", "--input", `{"path":"f","content":"x"}`),
		s("tool", "bash", "--run-id", "r", "--node-id", "n", "--input", `{"cmd":"true"}`),
		s("tool", "read", "--run-id", "r", "--node-id", "n", "--input", `{"path":"f"}`),
		s("tool", "read", "--run-id", "r", "--node-id", "n", "--attempt", "2", "--input", `{"path":"f"}`),
		s("tool", "read", "--run-id", "r", "--node-id", "n", "--attempt", "2", "--iteration", "1", "--input", `{"path":"f"}`),
	}},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, gc := range goldenCases {
		// Each case runs through the front and the resident server, and with the engine alone
		// (SANDBOXER_SERVER=off): both must print exactly the golden.
		for _, mode := range []string{"served", "direct"} {
			t.Run(gc.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				if mode == "direct" {
					e.vars = append(e.vars, "SANDBOXER_SERVER=off")
				}
				if gc.setup != nil {
					gc.setup(e)
				}
				var b strings.Builder
				var ids []string
				for _, st := range gc.steps {
					if st.host != nil {
						st.host(e, ids)
						fmt.Fprintf(&b, "$ (on the host) %s\n\n", st.args[0])
						continue
					}
					args := make([]string, len(st.args))
					for i, a := range st.args {
						a = strings.ReplaceAll(a, "$STATE", e.state)
						for n, id := range ids {
							a = strings.ReplaceAll(a, fmt.Sprintf("$ID%d", n), id)
						}
						args[i] = a
					}
					r := e.run(st.stdin, st.env, args...)
					if m := idOut.FindStringSubmatch(r.stdout); m != nil {
						ids = append(ids, m[1])
					}
					fmt.Fprintf(&b, "$ sandboxer %s\n", quoteArgs(st.args))
					if st.stdin != "" {
						fmt.Fprintf(&b, "[stdin] %q\n", st.stdin)
					}
					fmt.Fprintf(&b, "[exit %d]\n[stdout]\n%s[stderr]\n%s\n", r.code, e.mask(r.stdout), e.mask(r.stderr))
					// The contract that holds whatever the golden says: tool prints exactly one JSON
					// object unless it is a usage error; usage errors print nothing on stdout.
					if r.code == 2 && st.args[0] != "exec" {
						assert.Empty(t, r.stdout, "a usage error prints nothing on stdout: %v", st.args)
						assert.NotEmpty(t, r.stderr, "a usage error explains itself: %v", st.args)
					}
				}
				checkGolden(t, gc.name, b.String())
			})
		}
	}
}

var idOut = regexp.MustCompile(`^\{"id":"(sbx-[0-9a-f]{12})"[,}]`)

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'{}[]$\\;&|<>*?") {
			q[i] = fmt.Sprintf("%q", a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./cmd/sandboxer -run TestGolden -update")
	assert.Equal(t, string(want), got, "golden %s differs (refresh with -update after checking the diff)", path)
}
