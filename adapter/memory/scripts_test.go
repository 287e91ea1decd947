package memory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture is the tree every script case starts from.
var fixture = map[string]string{
	"a.txt":         "hello world\nfoo bar\nHello again\nbaz\n",
	"nums.txt":      "10\n2\n33\n2\n1\n",
	"words.txt":     "b\na\nc\na\nb\nb\n",
	"csv.txt":       "id,name,age\n1,ann,30\n2,bob,25\n",
	"sub/b.txt":     "hello sub\nsecond line\n",
	"sub/deep/c.go": "package c\n\nfunc Hello() {}\n",
	".hidden/h.txt": "hello hidden\n",
	"bin.dat":       "x\x00hello\n",
	"old.txt":       "one\ntwo\nthree\nfour\n",
	"new.txt":       "one\n2\nthree\nfour\nfive\n",
}

type scriptCase struct {
	name   string
	script string
	stdin  string
	out    string
	errOut string // exact stderr; "*" means any
	code   int
}

func TestScripts(t *testing.T) {
	t.Parallel()
	cases := []scriptCase{
		// shell features
		{name: "pipes and variables", script: `x=world; echo "hello $x" | tr a-z A-Z`, out: "HELLO WORLD\n"},
		{name: "loops and functions", script: `f() { echo "f:$1"; }; for i in 1 2 3; do f $i; done`, out: "f:1\nf:2\nf:3\n"},
		{name: "while read", script: `while read -r l; do echo "[$l]"; done < words.txt | head -n 2`, out: "[b]\n[a]\n"},
		{name: "command substitution", script: `n=$(wc -l < a.txt); echo "lines=$n"`, out: "lines=4\n"},
		{name: "here document", script: "cat <<EOF\nline $((1+2))\nEOF", out: "line 3\n"},
		{name: "redirect and append", script: `echo one > f; echo two >> f; cat f`, out: "one\ntwo\n"},
		{name: "stderr redirect", script: `ls nope 2>/dev/null; echo $?`, out: "2\n"},
		{name: "cd and pwd", script: `cd sub && pwd && cd deep && pwd -P`, out: "/workspace/sub\n/workspace/sub/deep\n"},
		{name: "globbing", script: `echo *.txt`, out: "a.txt csv.txt new.txt nums.txt old.txt words.txt\n"},
		{name: "test -f -d", script: `test -f a.txt && [ -d sub ] && [ ! -e nope ] && echo ok`, out: "ok\n"},
		{name: "exit status", script: `false; echo $?; true; echo $?`, out: "1\n0\n"},
		{name: "set -e", script: `set -e; false; echo never`, code: 1},
		{name: "pipefail", script: `set -o pipefail; false | true; echo $?`, out: "1\n"},
		{name: "unknown command", script: `nosuchcmd arg`, errOut: "sh: nosuchcmd: command not found\n", code: 127},
		{name: "syntax error", script: `if then`, errOut: "*", code: 2},
		{name: "nested sh", script: `sh -c 'echo "in $0 $1"' me arg`, out: "in me arg\n"},
		{name: "bash -ec bundle", script: `bash -ec 'false; echo no'; echo $?`, out: "1\n"},
		{name: "script file", script: "printf 'echo from script $1\\n' > s.sh; chmod +x s.sh; ./s.sh x; sh s.sh y", out: "from script x\nfrom script y\n"},
		{name: "source", script: "echo 'v=sourced' > lib.sh; . ./lib.sh; echo $v", out: "sourced\n"},
		{name: "command -v", script: `command -v cat; command -v echo; command -v nope || echo missing`, out: "/usr/bin/cat\necho\nmissing\n"},
		{name: "type", script: `type cat; type cd`, out: "cat is /usr/bin/cat\ncd is a shell builtin\n"},
		{name: "dev stderr", script: `echo err > /dev/stderr`, errOut: "err\n"},
		{name: "kill self", script: `echo a; kill -9 $$; echo b`, out: "a\n", code: 137},
		{name: "kill in child shell", script: `sh -c 'kill $$'; echo "child=$?"`, out: "child=143\n"},
		{name: "kill a background job", script: `sleep 30 & kill $!; wait $!; echo $?; sleep 30 & kill -9 %1; wait %1 2>/dev/null; echo $?`, out: "143\n137\n"},
		{name: "kill a background job from a subshell", script: `sleep 30 & p=$!; (kill $p); wait $p; echo $?`, out: "143\n"},
		{name: "set -m refused", script: `set -m 2>&1 | grep -c "job control (the monitor option) is not supported"; set -o monitor; echo $?; set +m -- -m; echo $1; set +m | wc -l`, out: "1\n2\n-m\n0\n", errOut: "*"},
		{name: "kill -STOP a background job refused", script: `sleep 0.05 & kill -19 $! 2>&1 | grep -c "only be sent signals that end them"; wait`, out: "1\n"},
		{name: "kill -l", script: `kill -l | head -n 2`, out: " 1) SIGHUP\n 2) SIGINT\n"},
		{name: "no host users for tilde", script: `echo ~root ~root/x; echo ~ | grep -c workspace`, out: "~root ~root/x\n1\n"},
		{name: "etc passwd invisible", script: `cat /etc/passwd; ls /etc | wc -l`, out: "0\n", errOut: "cat: /etc/passwd: No such file or directory\n"},
		{name: "process builtins", script: `umask; ulimit -n; jobs; echo $UID; env | grep -c UID`, out: "0022\nunlimited\n1000\n0\n", code: 1},
		{name: "test -O refused", script: `test -O a.txt`, errOut: "*", code: 2},
		{name: "eval", script: `c='echo evaluated'; eval "$c"`, out: "evaluated\n"},
		{name: "globstar", script: `shopt -s globstar; echo **/*.go`, out: "sub/deep/c.go\n"},
		{name: "bin paths", script: `/bin/sh -c 'echo via /bin/sh'; /usr/bin/head -n 1 a.txt`, out: "via /bin/sh\nhello world\n"},
		{name: "PATH scripts", script: "mkdir bin && printf 'echo tool $1\\n' > bin/tool && chmod +x bin/tool && PATH=/workspace/bin:$PATH; tool x; command -v tool", out: "tool x\n/workspace/bin/tool\n"},
		{name: "script from stdin", script: `echo 'echo piped $((2*3))' | sh`, out: "piped 6\n"},
		{name: "process substitution", script: `cat <(echo x); diff <(echo a) <(echo b) >/dev/null; echo $?; while read -r l; do echo "<$l>"; done < <(printf 'p\nq\n'); echo y > >(tr y Y); p=<(:); [[ $p == /dev/.psub/* ]] && echo in-tree`,
			out: "x\n1\n<p>\n<q>\nY\nin-tree\n"},

		// files
		{name: "cat -n", script: `cat -n words.txt | head -n 2`, out: "     1\tb\n     2\ta\n"},
		{name: "cat missing", script: `cat nope`, errOut: "cat: nope: No such file or directory\n", code: 1},
		{name: "ls", script: `ls sub`, out: "b.txt\ndeep\n"},
		{name: "ls -a", script: `mkdir e && touch e/.x e/y && ls -a e`, out: ".\n..\n.x\ny\n"},
		{name: "ls -A", script: `mkdir e && touch e/.x e/y && ls -A e`, out: ".x\ny\n"},
		{name: "ls -l", script: `ls -l csv.txt | cut -d' ' -f1`, out: "-rw-r--r--\n"},
		{name: "mkdir -p rmdir", script: `mkdir -p x/y/z && rmdir x/y/z && ls x/y | wc -l && mkdir x 2>&1`, out: "0\nmkdir: cannot create directory 'x': File exists\n", code: 1},
		{name: "rm", script: `rm a.txt && rm -r sub && ls -d sub a.txt 2>&1 | wc -l; rm nope; rm -f nope; echo $?`, out: "2\n0\n", errOut: "rm: cannot remove 'nope': No such file or directory\n"},
		{name: "rm dir needs -r", script: `rm sub`, errOut: "rm: cannot remove 'sub': Is a directory\n", code: 1},
		{name: "mv", script: `mv a.txt z.txt && cat z.txt | head -n 1 && mv z.txt sub && ls sub`, out: "hello world\nb.txt\ndeep\nz.txt\n"},
		{name: "cp -r", script: `cp -r sub copy && cat copy/deep/c.go | head -n 1 && cp a.txt sub/ && head -n 1 sub/a.txt`, out: "package c\nhello world\n"},
		{name: "cp dir without -r", script: `cp sub x`, errOut: "*", code: 1},
		{name: "touch", script: `touch t && test -f t && wc -c < t`, out: "0\n"},
		{name: "ln -s", script: `ln -s a.txt l && cat l | head -n 1 && readlink l && test -L l && echo link`, out: "hello world\na.txt\nlink\n"},
		{name: "ln hard refused", script: `ln a.txt h`, errOut: "*", code: 1},
		{name: "mkfifo refused", script: `mkfifo p`, errOut: "mkfifo: FIFOs (named pipes) are not supported in the memory sandbox\n", code: 1},
		{name: "mknod refused", script: `mknod p p`, errOut: "mknod: device files and FIFOs are not supported in the memory sandbox\n", code: 1},
		{name: "link refused", script: `link a.txt h`, errOut: "link: hard links are not supported in the memory sandbox\n", code: 1},
		{name: "chown chgrp refused", script: `chown root a.txt 2>&1; chgrp root a.txt`, out: "chown: file owners (ownership) are not supported in the memory sandbox\n", errOut: "chgrp: file groups (ownership) are not supported in the memory sandbox\n", code: 1},
		{name: "basename dirname", script: `basename /x/y/z.txt .txt; basename a/b/; dirname /x/y/z.txt; dirname z`, out: "z\nb\n/x/y\n.\n"},
		{name: "realpath", script: `ln -s sub/deep d && realpath d`, out: "/workspace/sub/deep\n"},
		{name: "mktemp", script: `f=$(mktemp) && test -f "$f" && case $f in /tmp/tmp.*) echo ok;; esac; d=$(mktemp -d) && test -d $d && echo dir`, out: "ok\ndir\n"},

		// text
		{name: "head -n -c", script: `head -n 2 a.txt; head -c 5 a.txt; echo; head -2 words.txt`, out: "hello world\nfoo bar\nhello\nb\na\n"},
		{name: "head tail headers", script: `printf '1\n2\n' > x; printf '3\n' > y; head -n 1 x y; tail -n 1 x y; head -q -n 1 x y; tail -v -n 1 y`,
			out: "==> x <==\n1\n\n==> y <==\n3\n==> x <==\n2\n\n==> y <==\n3\n1\n3\n==> y <==\n3\n"},
		{name: "tail", script: `tail -n 2 a.txt; tail -n +4 a.txt; tail -c 4 a.txt`, out: "Hello again\nbaz\nbaz\nbaz\n"},
		{name: "wc", script: `wc -l a.txt; wc -w < a.txt; wc -c a.txt; wc a.txt`, out: "4 a.txt\n7\n36 a.txt\n 4  7 36 a.txt\n"},
		{name: "sort", script: `sort words.txt | tr '\n' ' '; echo; sort -n nums.txt | tr '\n' ' '; echo; sort -rn nums.txt | head -n 1; sort -u words.txt | wc -l`, out: "a a b b b c \n1 2 2 10 33 \n33\n3\n"},
		{name: "sort -t -k", script: `tail -n +2 csv.txt | sort -t, -k3 -n | cut -d, -f2`, out: "bob\nann\n"},
		{name: "sort -k N,M", script: `printf 'b 1 z\na 1 y\nc 0 x\n' | sort -k2,2 -s`, out: "c 0 x\nb 1 z\na 1 y\n"},
		{name: "uniq", script: `sort words.txt | uniq; sort words.txt | uniq -c | head -n 1; sort words.txt | uniq -d | wc -l; sort words.txt | uniq -u`, out: "a\nb\nc\n      2 a\n2\nc\n"},
		{name: "cut", script: `cut -d, -f2 csv.txt | head -n 2; cut -c1-3 a.txt | head -n 1; cut -d, -f1,3 csv.txt | tail -n 1`, out: "name\nann\nhel\n2,25\n"},
		{name: "tr", script: `echo hello | tr a-y b-z; echo 'a  b   c' | tr -s ' '; echo hello | tr -d l; echo abc | tr '[:lower:]' '[:upper:]'`, out: "ifmmp\na b c\nheo\nABC\n"},
		{name: "tee", script: `echo x | tee t1 t2 && cat t1 t2; echo y | tee -a t1 >/dev/null; cat t1`, out: "x\nx\nx\nx\ny\n"},
		{name: "seq", script: `seq 3; seq 2 4 | tr '\n' ' '; echo; seq -s, 1 3; seq 5 -2 1 | tr '\n' ' '; echo; seq -w 8 10`, out: "1\n2\n3\n2 3 4 \n1,2,3\n5 3 1 \n08\n09\n10\n"},
		{name: "sha256sum", script: `printf abc > abc; sha256sum abc; printf abc | sha256sum`, out: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  abc\nba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n"},
		{name: "base64", script: `printf 'hello' | base64; echo aGVsbG8= | base64 -d; echo`, out: "aGVsbG8=\nhello\n"},
		{name: "xargs", script: `printf 'a\nb\n' | xargs echo got; printf '1 2 3' | xargs -n 1 echo n; printf 'x\ny\n' | xargs -I{} echo '<{}>'`, out: "got a b\nn 1\nn 2\nn 3\n<x>\n<y>\n"},
		{name: "xargs sh", script: `echo sub | xargs -I% sh -c 'ls %'`, out: "b.txt\ndeep\n"},
		{name: "env", script: `FOO=bar env | grep '^FOO='; env -i A=1 env; env B=2 sh -c 'echo $B'`, out: "FOO=bar\nA=1\n2\n"},
		{name: "sleep", script: `sleep 0.01 && echo slept`, out: "slept\n"},
		{name: "true false", script: `true && ! false && echo tf`, out: "tf\n"},
		{name: "yes head", script: `yes | head -n 3; yes ab | head -c 5`, out: "y\ny\ny\nab\nab"},
		{name: "printf echo", script: `printf '%s-%d\n' a 5; echo -n x; echo -e 'y\tz'`, out: "a-5\nxy\tz\n"},
		{name: "diff -u", script: `diff -u old.txt new.txt | tail -n +3; echo "exit=$?"`, out: "@@ -1,4 +1,5 @@\n one\n-two\n+2\n three\n four\n+five\nexit=0\n"},
		{name: "diff exit", script: `diff old.txt old.txt; echo $?; diff old.txt new.txt > /dev/null; echo $?`, out: "0\n1\n"},
		{name: "diff normal", script: `diff old.txt new.txt`, out: "2c2\n< two\n---\n> 2\n4a5\n> five\n", code: 1},

		// grep
		{name: "grep", script: `grep hello a.txt`, out: "hello world\n"},
		{name: "grep -n -i", script: `grep -n -i hello a.txt`, out: "1:hello world\n3:Hello again\n"},
		{name: "grep -v -c", script: `grep -vc hello a.txt`, out: "3\n"},
		{name: "grep -l -r", script: `grep -rl hello . | sort`, out: "./.hidden/h.txt\n./a.txt\n./bin.dat\n./sub/b.txt\n"},
		{name: "grep -r labels", script: `grep -r sub sub`, out: "sub/b.txt:hello sub\n"},
		{name: "grep -E -F -w", script: `grep -E 'fo+|baz' a.txt; grep -F 'o w' a.txt; grep -w ba a.txt; echo $?; grep -w bar a.txt`, out: "foo bar\nbaz\nhello world\n1\nfoo bar\n"},
		{name: "grep BRE groups", script: `grep 'h\(el\)\{1\}lo' a.txt; grep 'a+' a.txt; echo $?`, out: "hello world\n1\n"},
		{name: "grep no match and errors", script: `grep zzz a.txt; echo $?; grep x nope; echo $?`, out: "1\n2\n", errOut: "grep: nope: No such file or directory\n"},
		{name: "grep multiple files", script: `grep -n hello a.txt sub/b.txt`, out: "a.txt:1:hello world\nsub/b.txt:1:hello sub\n"},
		{name: "grep stdin -q -o", script: `echo abc123 | grep -o '[0-9]\+'; grep -q hello a.txt && echo quiet`, out: "123\nquiet\n"},
		{name: "grep binary", script: `grep hello bin.dat`, out: "Binary file bin.dat matches\n"},

		// rg: ripgrep's output format
		{name: "rg file", script: `rg -n -- hello a.txt`, out: "1:hello world\n"},
		{name: "rg dir", script: `rg -n -- hello .`, out: "./a.txt:1:hello world\n./sub/b.txt:1:hello sub\n"},
		{name: "rg no path", script: `rg -n hello`, out: "a.txt:1:hello world\nsub/b.txt:1:hello sub\n"},
		{name: "rg sub dir slash", script: `rg -n -- hello sub/`, out: "sub/b.txt:1:hello sub\n"},
		{name: "rg no match", script: `rg -n -- nomatch .`, code: 1},
		{name: "rg dash pattern", script: `echo '-world x' > d.txt; rg -n -- -world d.txt`, out: "1:-world x\n"},
		{name: "rg bad regex", script: `rg -n -- '(' .`, errOut: "*", code: 2},
		{name: "rg missing path", script: `rg -n -- x nope`, errOut: "nope: No such file or directory (os error 2)\n", code: 2},
		{name: "rg binary named", script: `rg -n hello bin.dat`, out: "binary file matches (found \"\\0\" byte around offset 1)\n"},
		{name: "rg -i -w -F -c -l", script: `rg -i HELLO a.txt; rg -w hell a.txt; echo $?; rg -F 'o w' a.txt; rg -c hello a.txt; rg -l hello`, out: "hello world\nHello again\n1\nhello world\n1\na.txt\nsub/b.txt\n"},

		// find
		{name: "find -name", script: `find . -name '*.txt' | sort`, out: "./.hidden/h.txt\n./a.txt\n./csv.txt\n./new.txt\n./nums.txt\n./old.txt\n./sub/b.txt\n./words.txt\n"},
		{name: "find -type -maxdepth", script: `find . -maxdepth 1 -type d | sort; find sub -type f`, out: ".\n./.hidden\n./sub\nsub/b.txt\nsub/deep/c.go\n"},
		{name: "find -path", script: `find . -path '*/deep/*'`, out: "./sub/deep/c.go\n"},
		{name: "find -not -o", script: `find sub -type f -not -name '*.go'; find sub \( -name '*.go' -o -name 'b.*' \) | sort`, out: "sub/b.txt\nsub/b.txt\nsub/deep/c.go\n"},
		{name: "find -exec", script: `find sub -name '*.go' -exec head -n 1 {} \;`, out: "package c\n"},
		{name: "find -delete", script: `find . -name '*.txt' -delete; ls`, out: "bin.dat\nsub\n"},

		// sed
		{name: "sed s///g", script: `echo 'a a a' | sed 's/a/b/g'; echo 'a a a' | sed 's/a/b/'; echo 'a a a' | sed 's/a/b/2'`, out: "b b b\nb a a\na b a\n"},
		{name: "sed -n p", script: `sed -n '2p' a.txt; sed -n '/again/p' a.txt; sed -n '2,3p' a.txt`, out: "foo bar\nHello again\nfoo bar\nHello again\n"},
		{name: "sed d", script: `sed '1d;3d' a.txt; sed '/o/d' a.txt`, out: "foo bar\nbaz\nbaz\n"},
		{name: "sed -i", script: `sed -i 's/hello/bye/' a.txt && head -n 1 a.txt`, out: "bye world\n"},
		{name: "sed groups and &", script: `echo 'john smith' | sed 's/\(\w*\) \(\w*\)/\2, \1/'; echo abc | sed -E 's/(b)/[\1]/'; echo x | sed 's/x/<&>/'`, out: "smith, john\na[b]c\n<x>\n"},
		{name: "sed $ and q", script: `sed -n '$p' a.txt; sed 2q a.txt`, out: "baz\nhello world\nfoo bar\n"},
		{name: "sed a i c y =", script: `printf 'x\ny\n' | sed '1a after'; printf 'x\n' | sed 'i before'; printf 'x\ny\n' | sed '2c changed'; echo abc | sed 'y/abc/xyz/'; printf 'p\nq\n' | sed -n '$='`, out: "x\nafter\ny\nbefore\nx\nx\nchanged\nxyz\n2\n"},
		{name: "sed bad script", script: `sed 'k' a.txt`, errOut: "*", code: 1},

		// od, nl, paste, fold, comm, column, stat, expr, digests, sort -z, rev
		{name: "od -A -t -N -j", script: `od -c a.txt | head -n 2; od -An -tx1 -N 4 a.txt; od -Ad -tu1 -j 2 -N 3 a.txt; printf 'abcd' | od -x; printf '\377' | od -An -td1`,
			out: "0000000   h   e   l   l   o       w   o   r   l   d  \\n   f   o   o    \n0000020   b   a   r  \\n   H   e   l   l   o       a   g   a   i   n  \\n\n 68 65 6c 6c\n0000002 108 108 111\n0000005\n0000000 6261 6463\n0000004\n   -1\n"},
		{name: "od repeats and -v", script: `printf '%032d' 0 | od -An -c | head -n 3; printf '%032d' 0 | od -v -An -tx1 | wc -l; od -t z a.txt; echo $?`,
			out: "   0   0   0   0   0   0   0   0   0   0   0   0   0   0   0   0\n*\n2\n2\n", errOut: "*"},
		{name: "nl -b -w -s -n", script: `nl -ba -w3 -s: words.txt | head -n 2; nl -nln nums.txt | head -n 1; printf 'a\n\nb\n' | nl -bt`,
			out: "  1:b\n  2:a\n1     \t10\n     1\ta\n       \n     2\tb\n"},
		{name: "paste -d -s", script: `paste -d, nums.txt words.txt | head -n 2; paste -s -d: nums.txt; printf 'x\ny\n' | paste - -`,
			out: "10,b\n2,a\n10:2:33:2:1\nx\ty\n"},
		{name: "fold -w -s -b", script: `echo 'hello brave new world' | fold -w 8; echo 'hello brave new world' | fold -s -w 8; echo abcdef | fold -b -w 4`,
			out: "hello br\nave new \nworld\nhello \nbrave \nnew \nworld\nabcd\nef\n"},
		{name: "comm -1 -2 -3", script: `sort words.txt -u > s1; printf 'a\nd\n' > s2; comm s1 s2; comm -12 s1 s2; comm -3 s1 s2`,
			out: "\t\ta\nb\nc\n\td\na\nb\nc\n\td\n"},
		{name: "column -t -s", script: `column -t -s, csv.txt; printf 'a  b\n\nc d\n' | column -t`,
			out: "id  name  age\n1   ann   30\n2   bob   25\na  b\nc  d\n"},
		{name: "stat -c --printf", script: `stat -c '%n %s %F %a %A' a.txt; stat --printf='%s\n' nums.txt; touch e; stat -c %F e; stat -L -c %F sub; stat nope; echo $?`,
			out: "a.txt 36 regular file 644 -rw-r--r--\n12\nregular empty file\ndirectory\n1\n", errOut: "stat: cannot stat 'nope': No such file or directory\n"},
		{name: "expr", script: `expr 7 / 2 \* 3; expr 10 % 4 - 1; expr 2 \< 10; expr a \< b; expr abc : 'a\(.*\)'; expr length hello; expr substr hello 2 3; expr index hello lo; expr 0 \| 5; expr 3 \& 0; expr 1 / 0; echo $?`,
			out: "9\n1\n1\n1\nbc\n5\nell\n3\n5\n0\n2\n", errOut: "expr: division by zero\n"},
		{name: "expr status", script: `expr 0; echo $?; expr ''; echo $?; expr 1 + x; echo $?`,
			out: "0\n1\n\n1\n2\n", errOut: "expr: non-integer argument\n"},
		{name: "md5sum sha1sum sha512sum", script: `printf abc | md5sum; printf abc | sha1sum; printf abc | sha512sum | cut -c1-16; md5sum nums.txt`,
			out: "900150983cd24fb0d6963f7d28e17f72  -\na9993e364706816aba3e25717850c26c9cd0d89d  -\nddaf35a193617aba\n72b68ca58a40fbb76f1da7cacd6c99ae  nums.txt\n"},
		{name: "sort -z -r", script: `printf 'b\0c\0a\0' | sort -z -r | tr '\0' ' '; echo`, out: "c b a \n"},
		{name: "rev", script: `printf 'abc\nxy\n' | rev; rev nums.txt | head -n 3`, out: "cba\nyx\n01\n2\n33\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, memory.Config{})
			ctx := context.Background()
			for p, data := range fixture {
				require.NoError(t, sb.WriteFile(ctx, p, []byte(data)))
			}
			cmd := adapter.Command{Args: []string{"sh", "-c", tc.script}, Timeout: 10 * time.Second}
			if tc.stdin != "" {
				cmd.Stdin = strings.NewReader(tc.stdin)
			}
			res, err := sb.ExecuteCommand(ctx, cmd)
			require.NoError(t, err)
			assert.Equal(t, tc.out, string(res.Stdout), "stdout")
			if tc.errOut != "*" {
				assert.Equal(t, tc.errOut, string(res.Stderr), "stderr")
			} else {
				assert.NotEmpty(t, res.Stderr, "stderr")
			}
			assert.Equal(t, tc.code, res.ExitCode, "exit code; stderr %q", res.Stderr)
		})
	}
}
