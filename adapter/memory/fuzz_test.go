package memory_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/sandboxer/sandboxer/errs"
)

// FuzzScript: any script either runs (any exit code) or ends with a documented error code; the
// interpreter never panics, never hangs past its limits, and never touches the host's files.
//
//	go test ./adapter/memory -run XXX -fuzz FuzzScript -fuzztime 60s
func FuzzScript(f *testing.F) {
	for _, seed := range []string{
		"echo hi", "cat a | grep x | wc -l", "for i in 1 2; do echo $i; done", "f() { f; }; f",
		"yes | head -c 10", "sed -n 's/a/b/gp' a", "find . -name '*' -exec cat {} +", "rg -n -- '(' .",
		"x=$(cat a); echo ${x//a/b}", "cd /; ls -la; cd -", "ln -s /etc e; cat e/passwd", "diff -u a a",
		"echo x > /tmp/f; cat < /tmp/f", "eval 'while :; do :; done'", "kill -9 $$", "trap 'echo t' EXIT",
		"printf '%s\\n' *", "sort -k2 -t, a | uniq -c", "xargs -n1 echo < a", "sh -c 'exit 3'; echo $?",
		"a=(5 6); (( a[0]++ ))", "declare -A c; for k in x y; do (( c[$k]++ )); done", "e=1+2; echo $((e+3))",
		"exec 3>f; echo hi >&3; exec 3>&-", "printf -v x '%5.1f|%q' 3.14159 'a b'", "read -r -d '' x <<< a",
		"set -e; for i in 1; do false && true; done", "echo $((1/0)); echo next", "IFS=:; set -- a::b; echo $#",
		"true | false; echo ${PIPESTATUS[@]}", "trap 'echo t' EXIT; (exit 3) | cat",
		"echo a\nfi\necho b", "echo $((1 +))\necho $((2 *)); echo c", "eval 'echo a\n$((1 +))'",
		"shopt -s extglob; v=foo; echo ${v##@(f|fo)} ${v/!(o)/X} @(\"a|b\"|$v)", "sleep 9 & kill %1; wait %1",
		"cat <&-; exec <&-; read x",
		"for i in 1 2; do if :; then break 0; fi; continue x; done; while break; do :; done; x=$(break 9)",
		"e='1 +'; echo $(( $e 2 )) $(( $(echo 2*3) - $e 1 )); a=(1); echo ${a[1/0]}", "kill -l 15 TERM 143 99",
		"f() ( false; return ); f; mkfifo p; chown x p; HOME=; echo {~,x}",
	} {
		f.Add(seed)
	}
	sb, err := memory.New(memory.Config{MaxCommands: 2000, MaxLoopIterations: 2000, MaxTreeBytes: 1 << 20, MaxStringBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	_ = sb.WriteFile(context.Background(), "a", []byte("a,1\nb,2\nx marks\n"))
	wd, _ := os.Getwd()
	f.Fuzz(func(t *testing.T, script string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", script}, MaxOutputBytes: 4096})
		switch errs.CodeOf(err) {
		case "", errs.LimitExceeded, errs.ProcessTimeout:
		default:
			t.Fatalf("script %q: unexpected error %v", script, err)
		}
		if _, err := os.Stat(wd + "/a"); err == nil {
			t.Fatalf("script %q wrote to the host", script)
		}
	})
}
