package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/policy"
)

const (
	ok  = errs.Code("")
	net = errs.NetworkDisabled
	git = errs.GitRemoteDisabled
)

func sh(script string) []string { return []string{"sh", "-c", script} }

type checkCase struct {
	name string
	argv []string
	want errs.Code
}

// issueCases are the network-off cases named in the issue.
var issueCases = []checkCase{
	{"curl url", []string{"curl", "https://example.com"}, net},
	{"git fetch", []string{"git", "fetch"}, git},
	{"git global opts push", []string{"git", "-C", "x", "--no-pager", "push"}, git},
	{"sh -c curl", sh("curl https://example.com"), net},
	{"bash -lc npm install", []string{"bash", "-lc", "cd /tmp && npm install"}, net},
	{"wget in command substitution", sh("echo $(wget -qO- https://example.com)"), net},
	{"env curl", []string{"env", "curl", "example.com"}, net},
	{"xargs curl", []string{"xargs", "curl"}, net},
	{"command name in variable", sh("c=curl; $c example.com"), net},
	{"python -c with URL", []string{"python3", "-c", "import urllib.request; urllib.request.urlopen('https://example.com')"}, net},
	{"curl localhost and host", []string{"curl", "http://localhost", "example.com"}, net},
	{"echo bundle.js", []string{"echo", "bundle.js"}, ok},
	{"echo words naming npm", []string{"echo", "please run npm install"}, ok},
	{"git commit message fetch", []string{"git", "commit", "-m", "fetch upstream"}, ok},
	{"git status", []string{"git", "status"}, ok},
	{"echo loopback URL", []string{"echo", "http://localhost:3000"}, ok},
}

var moreCases = []checkCase{
	// plain commands
	{"empty argv", nil, ok},
	{"ls", []string{"ls", "-la"}, ok},
	{"absolute curl", []string{"/usr/bin/curl", "x"}, net},
	{"relative curl", []string{"./bin/curl"}, net},
	{"wget", []string{"wget", "x"}, net},
	{"nc", []string{"nc", "-z", "host", "80"}, net},
	{"ncat", []string{"ncat"}, net},
	{"netcat", []string{"netcat"}, net},
	{"socat", []string{"socat", "-", "TCP:host:80"}, net},
	{"ssh", []string{"ssh", "host"}, net},
	{"scp", []string{"scp", "a", "host:b"}, net},
	{"sftp", []string{"sftp", "host"}, net},
	{"rsync", []string{"rsync", "-a", "x", "host:y"}, net},
	{"telnet", []string{"telnet", "host"}, net},
	{"ftp", []string{"ftp"}, net},
	{"curl alone", []string{"curl", "--version"}, net},
	{"curl loopback only is still a network client", []string{"curl", "http://localhost:3000"}, net},
	{"npm", []string{"npm", "install"}, net},
	{"npx", []string{"npx", "x"}, net},
	{"pnpm", []string{"pnpm", "i"}, net},
	{"yarn", []string{"yarn"}, net},
	{"bun", []string{"bun", "add", "x"}, net},
	{"pip", []string{"pip", "install", "x"}, net},
	{"pip3", []string{"pip3", "install", "x"}, net},
	{"pip3.12", []string{"pip3.12", "install", "x"}, net},
	{"uv", []string{"uv", "sync"}, net},
	{"poetry", []string{"poetry", "add"}, net},
	{"gem", []string{"gem", "install", "x"}, net},
	{"cargo", []string{"cargo", "build"}, net},
	{"apt", []string{"apt", "install", "x"}, net},
	{"apt-get", []string{"apt-get", "update"}, net},
	{"apk", []string{"apk", "add", "x"}, net},
	{"go get", []string{"go", "get", "example.com/x"}, net},
	{"go install", []string{"go", "install", "x@latest"}, net},
	{"go mod download", []string{"go", "mod", "download"}, net},
	{"go -C mod download", []string{"go", "-C", "sub", "mod", "download"}, net},
	{"go build", []string{"go", "build", "./..."}, ok},
	{"go test", []string{"go", "test", "./..."}, ok},
	{"go mod tidy", []string{"go", "mod", "tidy"}, ok},
	{"go versioned toolchain get", []string{"go1.22.0", "get", "x"}, net},
	{"python -m pip", []string{"python", "-m", "pip", "install", "x"}, net},
	{"python3 -m pip attached", []string{"python3", "-mpip", "install", "x"}, net},
	{"python3.12 -Im pip", []string{"python3.12", "-I", "-m", "pip", "install"}, net},
	{"python -m pip._internal", []string{"python3", "-m", "pip._internal"}, net},
	{"python -m venv", []string{"python3", "-m", "venv", ".venv"}, ok},
	{"python script", []string{"python3", "script.py", "-m", "pip"}, ok},
	{"python -c pip text", []string{"python3", "-c", "print('-m pip')"}, ok},
	{"python -c loopback URL", []string{"python3", "-c", "urlopen('http://127.0.0.1:8000/')"}, ok},
	{"node -e URL", []string{"node", "-e", "fetch('https://example.com')"}, net},

	// git
	{"git push", []string{"git", "push"}, git},
	{"git pull", []string{"git", "pull", "--rebase"}, git},
	{"git clone", []string{"git", "clone", "repo"}, git},
	{"git remote -v", []string{"git", "remote", "-v"}, git},
	{"git ls-remote", []string{"git", "ls-remote"}, git},
	{"git submodule update", []string{"git", "submodule", "update", "--init"}, git},
	{"git submodule --quiet update", []string{"git", "submodule", "--quiet", "update"}, git},
	{"git submodule status", []string{"git", "submodule", "status"}, ok},
	{"git -c k=v fetch", []string{"git", "-c", "user.name=x", "fetch"}, git},
	{"git --git-dir= fetch", []string{"git", "--git-dir=.git", "--work-tree", "w", "fetch"}, git},
	{"git -P push", []string{"git", "-P", "push"}, git},
	{"git log", []string{"git", "log", "--oneline"}, ok},
	{"git diff", []string{"git", "-C", "sub", "diff"}, ok},
	{"git add commit", []string{"git", "add", "."}, ok},
	{"git version", []string{"git", "--version"}, ok},
	{"git alias unknown", []string{"git", "p"}, git},
	{"git lfs", []string{"git", "lfs", "pull"}, git},
	{"git alias via -c to push", []string{"git", "-c", "alias.p=push", "p"}, git},
	{"git alias via -c shell curl", []string{"git", "-c", "alias.st=!curl example.com", "st"}, net},
	{"git pager via -c curl", []string{"git", "-c", "core.pager=curl x", "log"}, net},
	{"git pager less", []string{"git", "-c", "core.pager=less -R", "log"}, ok},
	{"git config alias to push", []string{"git", "config", "alias.p", "push"}, git},
	{"git config pager curl", []string{"git", "config", "--global", "core.pager", "curl x"}, net},
	{"git config user name", []string{"git", "config", "user.name", "someone"}, ok},
	{"git include.path", []string{"git", "-c", "include.path=x.cfg", "log"}, net},
	{"git rebase -x curl", []string{"git", "rebase", "-x", "curl x", "main"}, net},
	{"git rebase --exec= curl", []string{"git", "rebase", "--exec=wget x", "main"}, net},
	{"git rebase -x make", []string{"git", "rebase", "-x", "make test", "main"}, ok},
	{"git bisect run curl", []string{"git", "bisect", "run", "curl", "x"}, net},
	{"git bisect run make", []string{"git", "bisect", "run", "make"}, ok},
	{"git submodule foreach curl", []string{"git", "submodule", "foreach", "curl x"}, net},
	{"git filter-branch tree filter", []string{"git", "filter-branch", "--tree-filter", "npm i", "HEAD"}, net},
	{"git archive --remote", []string{"git", "archive", "--remote=x", "HEAD"}, git},
	{"git remote helper", []string{"git", "remote-https", "origin"}, git},
	{"git commit URL message", []string{"git", "commit", "-m", "see https://example.com"}, net},
	{"git in sh after global opts", sh("git -c color.ui=never -C . --no-pager fetch origin"), git},

	// wrappers
	{"env with assignment and flags", []string{"env", "-i", "-u", "X", "FOO=1", "curl", "x"}, net},
	{"env flags then assignment then curl", []string{"env", "-i", "A=1", "B=2", "wget"}, net},
	{"env -S", []string{"env", "-S", "curl example.com"}, net},
	{"env -S ok", []string{"env", "-S", "echo hi"}, ok},
	{"env chdir", []string{"env", "--chdir=/tmp", "ls"}, ok},
	{"env alone", []string{"env"}, ok},
	{"env PAGER curl", []string{"env", "PAGER=curl x", "git", "log"}, net},
	{"xargs flags", []string{"xargs", "-0", "-n", "1", "-P", "4", "curl"}, net},
	{"xargs -I", []string{"xargs", "-I{}", "wget", "{}"}, net},
	{"xargs rm", []string{"xargs", "rm", "-f"}, ok},
	{"xargs alone", []string{"xargs"}, ok},
	{"xargs sh -c from input", []string{"xargs", "sh", "-c"}, net},
	{"xargs -I sh -c replaced script", []string{"xargs", "-I", "%", "sh", "-c", "%"}, net},
	{"xargs -I replaced command", []string{"xargs", "-I%", "%", "x"}, net},
	{"xargs sh -c with script", []string{"xargs", "-n1", "sh", "-c", "echo \"$1\"", "_"}, ok},
	{"xargs git from input", []string{"xargs", "git"}, net},
	{"timeout", []string{"timeout", "5", "curl", "x"}, net},
	{"timeout flags", []string{"timeout", "-k", "1", "-s", "KILL", "5s", "wget"}, net},
	{"timeout make", []string{"timeout", "--signal=TERM", "5", "make"}, ok},
	{"nice -n", []string{"nice", "-n", "5", "wget"}, net},
	{"nice -5", []string{"nice", "-5", "wget"}, net},
	{"nohup", []string{"nohup", "curl", "x"}, net},
	{"command", []string{"command", "curl", "x"}, net},
	{"command -v curl only looks", []string{"command", "-v", "curl"}, ok},
	{"command -p curl", []string{"command", "-p", "curl"}, net},
	{"exec", []string{"exec", "curl"}, net},
	{"exec -a", []string{"exec", "-a", "name", "curl"}, net},
	{"sudo -u", []string{"sudo", "-u", "x", "curl"}, net},
	{"sudo flags and env", []string{"sudo", "-E", "-n", "--user=x", "A=b", "npm", "i"}, net},
	{"sudo -s", []string{"sudo", "-s", "curl", "x"}, net},
	{"sudo ls", []string{"sudo", "ls"}, ok},
	{"doas", []string{"doas", "-u", "root", "wget"}, net},
	{"stdbuf", []string{"stdbuf", "-oL", "curl"}, net},
	{"stdbuf separate", []string{"stdbuf", "-o", "L", "-e", "0", "nc"}, net},
	{"time", []string{"time", "-v", "curl"}, net},
	{"busybox wget", []string{"busybox", "wget", "x"}, net},
	{"busybox nc", []string{"/bin/busybox", "nc", "host", "80"}, net},
	{"busybox sh -c", []string{"busybox", "sh", "-c", "wget x"}, net},
	{"busybox ls", []string{"busybox", "ls"}, ok},
	{"busybox --list", []string{"busybox", "--list"}, ok},
	{"strace", []string{"strace", "-f", "-o", "log", "curl"}, net},
	{"setsid", []string{"setsid", "-f", "curl"}, net},
	{"chroot", []string{"chroot", "/", "curl"}, net},
	{"unshare -n still curl", []string{"unshare", "-n", "curl"}, net},
	{"ionice", []string{"ionice", "-c", "3", "wget"}, net},
	{"ionice -p", []string{"ionice", "-p", "123"}, ok},
	{"taskset", []string{"taskset", "0x1", "curl"}, net},
	{"chrt", []string{"chrt", "-f", "10", "curl"}, net},
	{"nested wrappers", []string{"sudo", "env", "A=1", "timeout", "5", "nice", "-n", "1", "nohup", "xargs", "curl"}, net},
	{"watch", []string{"watch", "-n", "1", "curl x"}, net},
	{"watch -x", []string{"watch", "-x", "curl", "x"}, net},
	{"watch ok", []string{"watch", "-n", "1", "ls -l"}, ok},
	{"flock", []string{"flock", "/tmp/l", "curl"}, net},
	{"flock -c", []string{"flock", "/tmp/l", "-c", "wget x"}, net},
	{"su -c", []string{"su", "-c", "curl x", "root"}, net},
	{"su user -c", []string{"su", "root", "-c", "npm i"}, net},
	{"runuser -u", []string{"runuser", "-u", "x", "--", "curl"}, net},
	{"script -c", []string{"script", "-q", "-c", "curl x", "/dev/null"}, net},
	{"find -exec", []string{"find", ".", "-exec", "curl", "{}", ";"}, net},
	{"find -execdir +", []string{"find", ".", "-name", "*.txt", "-execdir", "wget", "{}", "+"}, net},
	{"find -exec rm", []string{"find", ".", "-name", "*.o", "-exec", "rm", "{}", ";"}, ok},
	{"find -exec runs found file", []string{"find", "/usr/bin", "-name", "curl", "-exec", "{}", "x", ";"}, net},
	{"find -exec sh -c {}", []string{"find", ".", "-exec", "sh", "-c", "{}", ";"}, net},
	{"find -exec sh -c script", []string{"find", ".", "-exec", "sh", "-c", "echo \"$1\"", "_", "{}", ";"}, ok},
	{"find -ok", []string{"find", ".", "-ok", "nc", ";"}, net},
	{"rg --pre curl", []string{"rg", "--pre=curl", "x"}, net},
	{"rg pattern curl", []string{"rg", "-n", "--", "curl", "."}, ok},
	{"parallel", []string{"parallel", "echo", ":::", "a"}, net},
	{"openssl s_client", []string{"openssl", "s_client", "-connect", "host:443"}, net},
	{"openssl sha256", []string{"openssl", "dgst", "-sha256", "f"}, ok},

	// shells and scripts
	{"bash -c", []string{"bash", "-c", "curl x"}, net},
	{"dash -c", []string{"dash", "-c", "wget x"}, net},
	{"zsh -c", []string{"zsh", "-c", "npm i"}, net},
	{"ksh -c", []string{"ksh", "-c", "pip install x"}, net},
	{"mksh -c", []string{"mksh", "-c", "nc h 1"}, net},
	{"ash -c", []string{"ash", "-c", "ssh h"}, net},
	{"bash -ec", []string{"bash", "-ec", "curl x"}, net},
	{"bash -xec", []string{"bash", "-xec", "curl x"}, net},
	{"bash -c --", []string{"bash", "-c", "--", "curl x"}, net},
	{"bash -o pipefail -c", []string{"bash", "-o", "pipefail", "-c", "curl x"}, net},
	{"bash -eo pipefail -c", []string{"bash", "-eo", "pipefail", "-c", "curl x"}, net},
	{"bash --norc -c", []string{"/bin/bash", "--norc", "--noprofile", "-c", "curl x"}, net},
	{"bash -c positional", []string{"bash", "-c", "echo \"$0\" \"$1\"", "curl", "wget"}, ok},
	{"bash -c ok", []string{"bash", "-c", "ls -l | wc -l && echo done"}, ok},
	{"bash script file", []string{"bash", "build.sh"}, ok},
	{"sh alone", []string{"sh"}, ok},
	{"fish -c", []string{"fish", "-c", "curl x"}, net},
	{"nested sh -c", sh(`sh -c "bash -c 'curl x'"`), net},
	{"nested sh -c ok", sh(`sh -c "bash -c 'echo x'"`), ok},
	{"eval", sh(`eval "curl x"`), net},
	{"eval words", sh(`eval curl x`), net},
	{"eval dynamic", sh(`eval "$x"`), net},
	{"eval ok", sh(`eval "echo hi"`), ok},
	{"top-level eval", []string{"eval", "curl x"}, net},
	{"sh -c dynamic script", sh(`sh -c "$x"`), net},
	{"backticks", sh("echo `curl x`"), net},
	{"process substitution", sh("diff <(curl x) y"), net},
	{"output process substitution", sh("tee >(nc h 1) < f"), net},
	{"pipe", sh("cat f | nc h 1"), net},
	{"pipe first", sh("curl x | sh"), net},
	{"list and", sh("true && curl x"), net},
	{"list or", sh("false || curl x"), net},
	{"background", sh("curl x & wait"), net},
	{"subshell", sh("(cd /tmp; curl x)"), net},
	{"block", sh("{ echo a; wget x; }"), net},
	{"function body", sh("f() { curl x; }; f"), net},
	{"function named curl", sh("curl() { echo hi; }; curl"), net},
	{"if cond", sh("if curl x; then :; fi"), net},
	{"if body", sh("if true; then wget x; else :; fi"), net},
	{"elif body", sh("if false; then :; elif true; then :; else npm i; fi"), net},
	{"while", sh("while true; do nc h 1; done"), net},
	{"until", sh("until false; do :; done; ssh h"), net},
	{"for body", sh("for f in a b; do scp $f h:; done"), net},
	{"for words subst", sh("for f in $(curl x); do :; done"), net},
	{"case body", sh("case $x in a) curl x;; *) :;; esac"), net},
	{"case word subst", sh("case $(wget x) in *) :;; esac"), net},
	{"arithmetic subst", sh("echo $(( $(curl x) + 1 ))"), net},
	{"param default subst", sh("echo ${x:-$(curl x)}"), net},
	{"assignment subst", sh("x=$(curl x)"), net},
	{"local subst", sh("f() { local x=$(wget y); }"), net},
	{"test clause subst", sh("[[ -n $(curl x) ]]"), net},
	{"redirect subst", sh("echo hi > $(curl x)"), net},
	{"negated", sh("! curl x"), net},
	{"time keyword", sh("time curl x"), net},
	{"coproc", []string{"bash", "-c", "coproc curl x"}, net},
	{"trap", sh("trap 'curl x' EXIT"), net},
	{"trap ok", sh("trap 'rm -f t' EXIT"), ok},
	{"alias", sh("alias g='curl x'; g"), net},
	{"alias ok", sh("alias ll='ls -l'"), ok},
	{"unresolvable in braces", sh(`"$(echo curl)" x`), net},
	{"unresolvable param", sh(`$CMD`), net},
	{"quoted param path with known base", sh(`"$HOME/bin/mytool" x`), ok},
	{"quoted param path curl", sh(`"$HOME/bin/curl" x`), net},
	{"unquoted param path", sh(`$HOME/bin/mytool`), net},
	{"escaped name", sh(`c\url x`), net},
	{"quoted name", sh(`"cu"'rl' x`), net},
	{"ansi-c name", []string{"bash", "-c", `$'\x63url' x`}, net},
	{"glob name", sh(`/usr/bin/cur? x`), net},
	{"brace name", []string{"bash", "-c", `{curl,x}`}, net},
	{"brace args ok", sh(`echo {a,b}.txt`), ok},
	{"brace bomb ok", sh(strings.Repeat("{a,b}", 40)), net},
	{"brace bomb arg ok", sh("echo " + strings.Repeat("{a,b}", 40)), ok},
	{"sequence bomb", sh(`echo {1..999999999999}`), ok},
	{"test bracket", sh(`[ -f x ] && echo y`), ok},
	{"here-doc to sh", sh("sh <<EOF\ncurl x\nEOF"), net},
	{"here-doc to bash quoted", sh("bash <<'EOF'\nwget $x\nEOF"), net},
	{"here-doc to sh ok", sh("sh <<'EOF'\necho hi\nEOF"), ok},
	{"here-doc to sh dynamic", sh("sh <<EOF\necho $x\nEOF"), net},
	{"here-string to sh", []string{"bash", "-c", "bash <<< 'curl x'"}, net},
	{"here-doc to cat", sh("cat <<EOF\ncurl x\nEOF"), ok},
	{"here-doc to python URL", sh("python3 <<EOF\nimport urllib\nurllib.request.urlopen('https://example.com')\nEOF"), net},
	{"pipe into sh", sh("echo 'curl x' | sh"), net},
	{"pipe into bash -s", sh("printf x | bash -s"), net},
	{"file into sh", sh("sh < script.sh"), net},
	{"sh /dev/stdin", sh("echo curl | sh /dev/stdin"), net},
	{"source /dev/stdin", []string{"bash", "-c", "source /dev/stdin <<< 'curl x'"}, net},
	{"source file", sh(". ./env.sh"), ok},
	{"source process subst", []string{"bash", "-c", "source <(curl x)"}, net},
	{"sh < /dev/null", sh("sh < /dev/null"), ok},
	{"unparsable", sh("echo 'unterminated"), net},
	{"unparsable parens", sh("( curl"), net},
	{"comment URL ignored", sh("echo hi # see https://example.com"), net},
	{"words not commands", sh(`echo "please run npm install" && git commit -m "fetch upstream"`), ok},
	{"curl as argument", sh(`which curl; type wget; man ssh`), ok},
	{"grep for curl", []string{"grep", "-r", "curl", "."}, ok},
	{"PAGER assignment", sh(`PAGER='curl x' git log`), net},
	{"GIT_SSH_COMMAND export", sh(`export GIT_SSH_COMMAND="nc h 1"`), net},
	{"EDITOR dynamic", sh(`EDITOR=$x git commit`), net},
	{"ordinary assignment", sh(`FOO='curl x' make`), ok},
	{"dynamic args fine", sh(`echo "$@" $x $(date)`), ok},
	{"xargs in pipe", sh("find . -name '*.go' | xargs grep -n x"), ok},
	{"timeout dynamic duration", sh(`timeout "$T" make`), ok},
	{"timeout unquoted duration", sh(`timeout $T make`), net},
	{"env dynamic", sh(`env $X`), net},
	{"find unquoted expansion", sh(`find . $ARGS`), net},

	{"xargs -a keeps stdin", sh("echo curl x | xargs -a list sh"), net},
	{"function body shell reads caller stdin", sh("f() { sh; }; echo 'curl x' | f"), net},
	{"function body cat fine", sh("f() { cat; }; echo x | f"), ok},
	{"coproc shell", []string{"bash", "-c", "coproc sh"}, net},
	{"exec stdin then sh", sh("exec < script.txt; sh"), net},
	{"exec heredoc then bash", []string{"bash", "-c", "exec <<EOF\ncurl x\nEOF\nbash"}, net},
	{"dup stdin", sh("sh <&3"), net},
	{"closed stdin", sh("sh <&-"), ok},
	{"sh process substitution script", []string{"bash", "-c", "bash <(echo curl x)"}, net},
	{"sh dynamic script file", sh(`sh "$f"`), net},
	{"source dynamic", sh(`. "$f"`), net},
	{"upper case name", []string{"CURL", "x"}, net},
	{"zsh equals expansion", []string{"zsh", "-c", "=curl x"}, net},
	{"hash -p", []string{"bash", "-c", "hash -p /usr/bin/curl ls; ls x"}, net},
	{"tar to-command", []string{"tar", "xf", "a.tar", "--to-command=curl x"}, net},
	{"tar -I", []string{"tar", "-I", "wget x", "-xf", "a.tar"}, net},
	{"tar checkpoint exec", []string{"tar", "cf", "a.tar", "--checkpoint=1", "--checkpoint-action=exec=nc h 1", "."}, net},
	{"tar ok", []string{"tar", "-czf", "a.tgz", "-I", "gzip -9", "dir"}, ok},
	{"git -C unquoted expansion", sh("git -C $d status"), net},
	{"git -C quoted expansion", sh(`git -C "$d" status`), ok},
	{"export quoted PAGER", sh(`export "PAGER=curl x"`), net},

	// URLs
	{"URL https", []string{"echo", "https://example.com"}, net},
	{"URL in assignment", sh("U=https://example.com"), net},
	{"URL in redirect", sh("echo x > http://example.com/f"), net},
	{"URL loopback ip", []string{"echo", "http://127.0.0.1:8080/x"}, ok},
	{"URL loopback 127/8", []string{"echo", "http://127.5.6.7/"}, ok},
	{"URL ipv6 loopback", []string{"echo", "http://[::1]:3000/"}, ok},
	{"URL sub.localhost", []string{"echo", "http://app.localhost:5173"}, ok},
	{"URL LOCALHOST", []string{"echo", "HTTP://LOCALHOST."}, ok},
	{"URL userinfo localhost", []string{"echo", "http://u:p@localhost/"}, ok},
	{"URL userinfo trick", []string{"echo", "http://localhost@example.com/"}, net},
	{"URL localhost suffix trick", []string{"echo", "http://localhost.example.com/"}, net},
	{"URL double at", []string{"echo", "http://a@localhost@example.com/"}, net},
	{"URL short ip", []string{"echo", "http://127.1/"}, net},
	{"URL decimal ip", []string{"echo", "http://2130706433/"}, net},
	{"URL zero ip", []string{"echo", "http://0.0.0.0:80/"}, net},
	{"URL bad port", []string{"echo", "http://localhost:80x/"}, net},
	{"URL dynamic host", sh(`echo "http://$HOST/"`), net},
	{"URL dynamic port", sh(`echo "http://localhost:$PORT/"`), net},
	{"URL quote trick", sh(`echo http://localhost"".example.com`), net},
	{"URL ftp", []string{"echo", "ftp://files.example.com"}, net},
	{"URL file", []string{"cat", "file:///etc/hosts"}, ok},
	{"URL empty host", []string{"echo", "http:///x"}, net},
	{"URL in ansi-c", []string{"bash", "-c", `python3 -c $'u="https\x3a//example.com"'`}, net},
	{"dev tcp", []string{"bash", "-c", "exec 3<>/dev/tcp/example.com/80"}, net},
	{"dev tcp localhost", []string{"bash", "-c", "echo > /dev/tcp/127.0.0.1/8080"}, ok},
	{"dev udp", []string{"bash", "-c", "echo > /dev/udp/8.8.8.8/53"}, net},
}

// constCases: a command name held in a variable assigned a constant earlier in the same
// script is resolved; every other way of setting the variable keeps it unresolvable (denied).
var constCases = []checkCase{
	{"const echo", sh("c=echo; $c hi"), ok},
	{"const curl", sh("c=curl; $c x"), net},
	{"const quoted", sh(`c=echo; "$c" hi`), ok},
	{"const braces", sh("c=echo; ${c} hi"), ok},
	{"const with args", sh(`c="curl -s"; $c x`), net},
	{"const with args ok", sh(`c="echo -n"; $c x`), ok},
	{"const path", sh(`d=/usr/bin; $d/curl x`), net},
	{"const path ok", sh(`d=/usr/bin; $d/env FOO=1 ls`), ok},
	{"const dir in quotes", sh(`d=/usr/bin; "$d/wget" x`), net},
	{"const export", sh("export c=echo; $c hi"), ok},
	{"const readonly curl", sh("readonly c=curl; $c x"), net},
	{"const on new line", sh("c=echo\n$c hi"), ok},
	{"const in function", sh("c=echo; f() { $c hi; }; f"), ok},
	{"const in loop", sh("c=echo; for i in 1 2; do $c $i; done"), ok},
	{"const argument of wrapper", sh("c=curl; timeout 5 $c x"), net},
	{"const script of sh -c", sh(`c=curl; sh -c "$c x"`), net},
	{"const script of sh -c ok", sh(`c=date; sh -c "$c"`), ok},
	{"const URL", sh("u=https://example.com; echo $u"), net},
	{"used before assigned", sh("$c x; c=echo"), net},
	{"same statement", sh("c=echo $c x"), net},
	{"assigned twice same", sh("c=echo; c=echo; $c hi"), ok},
	{"assigned twice differently", sh("c=echo; c=curl; $c x"), net},
	{"assigned later differently", sh("c=echo; $c x; c=curl"), net},
	{"conditional assignment", sh("if true; then c=echo; fi; $c x"), net},
	{"assignment in list", sh("true && c=echo; $c x"), net},
	{"assignment in subshell", sh("(c=echo); $c x"), net},
	{"assignment in function", sh("f() { c=curl; }; c=echo; f; $c x"), net},
	{"local", sh("c=echo; f() { local c; $c x; }; f"), net},
	{"local value", sh("c=echo; f() { local c=curl; $c x; }; f"), net},
	{"append", sh("c=ec; c+=ho; $c x"), net},
	{"computed", sh("c=$(echo echo); $c x"), net},
	{"from other variable", sh("d=echo; c=$d; $c x"), net},
	{"read", sh("c=echo; read c; $c x"), net},
	{"read via command", sh("c=echo; command read c; $c x"), net},
	{"read via variable", sh("c=echo; r=read; $r c; $c x"), net},
	{"mapfile", sh("c=echo; mapfile c; $c x"), net},
	{"printf -v", sh("c=echo; printf -v c curl; $c x"), net},
	{"unset", sh("c=echo; unset c; $c x"), net},
	{"for variable", sh("c=echo; for c in curl; do :; done; $c x"), net},
	{"arithmetic", sh("c=echo; (( c = 1 )); $c x"), net},
	{"default assignment", sh("c=echo; : ${c:=curl}; $c x"), net},
	{"eval", sh("c=echo; eval 'c=curl'; $c x"), net},
	{"source", sh("c=echo; . ./env.sh; $c x"), net},
	{"nameref", sh("c=echo; declare -n c=d; $c x"), net},
	{"computed declaration", sh(`c=echo; declare "$n=curl"; $c x`), net},
	{"glob value", sh("c='cur?'; $c x"), net},
	{"empty value", sh("c=; $c curl x"), net},
	{"IFS assigned", sh("IFS=:; c=echo; $c x"), net},
	{"background assignment", sh("c=echo & $c x"), net},
	{"environment variable", sh("$HOME x"), net},
	{"positional", sh("$1 x"), net},
	{"nested script does not inherit", sh(`c=echo; sh -c '$c x'`), net},
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range append(append(append([]checkCase(nil), issueCases...), moreCases...), constCases...) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := policy.Check(tc.argv)
			assert.Equal(t, tc.want, d.Code, "argv %q: %+v", tc.argv, d)
			assert.Equal(t, tc.want == ok, d.Allowed, "argv %q", tc.argv)
			if !d.Allowed {
				assert.NotEmpty(t, d.Reason)
				assert.NotEmpty(t, d.Command)
			}
		})
	}
}

func TestCheckCommandDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		argv    []string
		command string
	}{
		{[]string{"curl", "x"}, "curl"},
		{[]string{"/usr/bin/wget"}, "/usr/bin/wget"},
		{[]string{"git", "-C", "x", "push"}, "git push"},
		{sh(`$c x`), "$c"},
		{[]string{"echo", "https://example.com/path"}, "https://example.com"},
	} {
		assert.Equal(t, tc.command, policy.Check(tc.argv).Command, "%q", tc.argv)
	}
}

func TestDecisionErr(t *testing.T) {
	t.Parallel()
	require.NoError(t, policy.Check([]string{"ls"}).Err("bash"))

	err := policy.Check([]string{"git", "push"}).Err("bash")
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.GitRemoteDisabled))
	e := errs.As(err)
	assert.Equal(t, "bash", e.Op)
	assert.Equal(t, "git push", e.Details["command"])

	err = policy.Check([]string{"curl", "x"}).Err("bash")
	assert.True(t, errors.Is(err, errs.NetworkDisabled))
	assert.Equal(t, errs.NetworkDisabled, errs.CodeOf(err))
}

// TestCheckDeterministic: the same argv gives the same decision, also concurrently (parsers
// are pooled).
func TestCheckDeterministic(t *testing.T) {
	t.Parallel()
	argv := sh("for i in 1 2; do echo $i; done; if true; then curl x; fi")
	want := policy.Check(argv)
	done := make(chan policy.Decision)
	for range 8 {
		go func() { done <- policy.Check(argv) }()
	}
	for range 8 {
		assert.Equal(t, want, <-done)
	}
}

// TestDeepNesting: nesting deeper than the inspector follows is denied, not skipped.
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	// eval eval ... echo hi: every eval is one more nested script, without quoting blow-up.
	assert.Equal(t, net, policy.Check(sh(strings.Repeat("eval ", 100)+"echo hi")).Code)
	assert.True(t, policy.Check(sh(strings.Repeat("eval ", 5)+"echo hi")).Allowed)
	assert.Equal(t, net, policy.Check(sh(strings.Repeat("eval ", 5)+"curl x")).Code)
}

// TestCheckEnforced: where the kernel keeps commands on the sandbox's loopback, a network client
// whose every destination is loopback runs (a command tests the server another started, SPEC.md
// section 4); any other destination, none, or one inspection cannot know is refused as by Check.
func TestCheckEnforced(t *testing.T) {
	t.Parallel()
	for _, tc := range []checkCase{
		{"curl loopback", []string{"curl", "-s", "http://127.0.0.1:8000/"}, ok},
		{"wget localhost", []string{"wget", "-qO-", "http://localhost:8000/health"}, ok},
		{"sh -c curl ipv6 loopback", sh("curl -fsS 'http://[::1]:3000/' | grep ok"), ok},
		{"nc to loopback", []string{"nc", "-z", "127.0.0.1", "8000"}, ok},
		{"curl with options and an output file", []string{"curl", "-fsS", "-o", "out.html", "http://localhost:8000/"}, ok},
		{"wget a host without a scheme", []string{"wget", "example.com"}, net},
		{"env curl a host", []string{"env", "curl", "example.com"}, net},
		{"xargs curl: no destination seen", []string{"xargs", "curl"}, net},
		{"curl loopback and another host", []string{"curl", "http://localhost", "example.com"}, net},
		{"command name in a known variable", sh("c=curl; $c http://127.0.0.1/"), ok},
		{"command name in an unknown variable", sh("read c; $c http://127.0.0.1/"), net},
		{"a destination in a variable", sh("curl \"$URL\""), net},
		{"curl outside", []string{"curl", "https://example.com"}, net},
		{"sh -c wget outside", sh("wget -qO- http://203.0.113.7/x"), net},
		{"bash /dev/tcp outside", []string{"bash", "-c", "echo > /dev/tcp/203.0.113.7/80"}, net},
		{"package manager", []string{"pip", "install", "requests"}, net},
		{"git remote", []string{"git", "fetch"}, git},
	} {
		d := policy.CheckEnforced(tc.argv)
		assert.Equal(t, tc.want, d.Code, "%s: argv %q: %+v", tc.name, tc.argv, d)
	}
	assert.Equal(t, net, policy.Check([]string{"curl", "http://127.0.0.1:8000/"}).Code, "Check keeps network clients out")
}
