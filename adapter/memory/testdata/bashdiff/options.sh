# set -o noclobber, shopt -s lastpipe and tilde expansion (bash manual: "The Set Builtin",
# "The Shopt Builtin", "Tilde Expansion", "Brace Expansion").

#### noclobber-set-C
echo one > f
set -C
echo two > f
echo "st=$?"
cat f

#### noclobber-status-in-if
set -o noclobber
echo a > f
if echo b > f 2>/dev/null; then echo wrote; else echo refused; fi

#### noclobber-force-pipe
set -o noclobber
echo a > f
echo b >| f
cat f

#### noclobber-devnull-ok
set -o noclobber
echo a > /dev/null
echo "st=$?"

#### noclobber-and-all
set -o noclobber
echo a > f
echo b &> f
echo "st=$?"
cat f

#### noclobber-off-again
set -C
echo a > f
set +C
echo b > f
cat f

#### noclobber-in-dollar-dash
set -C
case $- in *C*) echo on ;; *) echo off ;; esac

#### noclobber-lock-idiom
set -o noclobber
if { echo $$ > lock; } 2>/dev/null; then echo got; fi
if { echo $$ > lock; } 2>/dev/null; then echo again; else echo busy; fi

#### noclobber-read-write-ok
set -C
echo a > f
echo b 1<> f
cat f

#### lastpipe-read-keeps-var
shopt -s lastpipe
echo hello | read -r v
echo "v=$v"

#### lastpipe-off-loses-var
echo hello | read -r v
echo "v=[$v]"

#### lastpipe-while-count
shopt -s lastpipe
n=0
printf 'a\nb\nc\n' | while read -r l; do n=$((n + 1)); done
echo "n=$n"

#### lastpipe-mapfile
shopt -s lastpipe
printf 'x\ny\n' | mapfile -t arr
echo "${#arr[@]} ${arr[1]}"

#### lastpipe-status
shopt -s lastpipe
true | false
echo "st=$?"

#### lastpipe-shopt-query
shopt -s lastpipe
shopt -q lastpipe && echo on
shopt -u lastpipe
shopt -q lastpipe || echo off

#### tilde-after-brace
HOME=/home/u
echo {~,~/x}

#### tilde-brace-paths
HOME=/h
echo ~/{a,b}

#### tilde-plus-minus
cd /tmp
cd /
echo ~+ ~-

#### tilde-in-assignment-after-colon
HOME=/h
p=~/bin:~/lib
echo "$p"

#### tilde-quoted-not-expanded
HOME=/h
echo "~" '~' \~

#### tilde-not-at-start
HOME=/h
echo a~ x=~

#### tilde-unknown-user
echo ~nosuchuser_xyz

#### tilde-in-array-assignment
HOME=/h
a=(~ ~/x)
echo "${a[@]}"

#### tilde-in-default-expansion
HOME=/h
unset v
echo ${v:-~/d}

#### tilde-home-unset
unset HOME
echo ~ | grep -q . && echo expanded

#### tilde-in-assignment-like-argument
HOME=/h
echo prefix=~/x PATH=a:~/bin 1=~ --opt=~

#### tilde-in-export-and-declare
HOME=/h
export E=~/e
declare D=~/d
echo "$E $D"

#### tilde-oldpwd-unset
unset OLDPWD
echo ~-

#### noclobber-append-to-new
set -C
echo a >> fresh.txt
cat fresh.txt

#### noclobber-in-subshell-inherited
set -C
echo a > f
( echo b > f ) 2>/dev/null
echo "st=$?"
cat f

#### noclobber-exec-redirect
set -C
echo a > f
exec 3> f
echo "st=$?"

#### noclobber-force-on-new-file
set -C
echo new >| n.txt
cat n.txt

#### noclobber-bash-c-child
set -C
echo a > f
bash -c 'echo b > f'
cat f

#### noclobber-directory-target
set -C
mkdir d
echo x > d
echo "st=$?"

#### noclobber-set-o-listing
set -o noclobber
set -o | grep noclobber

#### lastpipe-off-in-bash-c
shopt lastpipe

#### lastpipe-pipeline-var-assignment
shopt -s lastpipe
echo "a b" | read -r x y
echo "$y $x"

#### lastpipe-while-sets-array
shopt -s lastpipe
declare -a arr
printf '1\n2\n3\n' | while read -r n; do arr+=("$n"); done
echo "${arr[*]}"

#### lastpipe-exit-ends-shell
shopt -s lastpipe
echo x | exit 3
echo not-reached

#### lastpipe-pipestatus
shopt -s lastpipe
false | true | read -r v <<< ""
echo "${PIPESTATUS[*]}"

#### lastpipe-with-pipefail
shopt -s lastpipe
set -o pipefail
false | read -r v
echo "st=$?"

#### lastpipe-in-function
shopt -s lastpipe
f() { echo inner | read -r got; echo "got=$got"; }
f

#### lastpipe-cd-persists
shopt -s lastpipe
mkdir -p sub
echo | cd sub
basename "$PWD"

#### lastpipe-local-var
shopt -s lastpipe
f() { local v=old; echo new | read -r v; echo "$v"; }
f

#### lastpipe-unset-after
shopt -s lastpipe
echo one | read -r a
shopt -u lastpipe
echo two | read -r a
echo "$a"

#### lastpipe-builtin-echo-last
shopt -s lastpipe
v=1
echo 5 | { read -r v; }
echo "$v"

#### lastpipe-middle-stays-subshell
shopt -s lastpipe
v=1
echo 2 | { read -r v; echo "$v"; } | cat
echo "$v"

#### lastpipe-with-command-subst
shopt -s lastpipe
echo "$(echo hi | read -r w; echo "w=$w")"

#### lastpipe-negated
shopt -s lastpipe
! echo z | read -r q
echo "st=$? q=$q"

#### tilde-in-for-list
for d in ~ ~/a "~"; do echo "$d"; done

#### tilde-in-case-word
case ~/x in "$HOME"/x) echo home ;; *) echo other ;; esac

#### tilde-in-redirect-target
echo hi > ~/t.txt
cat "$HOME/t.txt"

#### tilde-brace-sequence
echo ~/{1..3}

#### tilde-in-test
[[ ~ == "$HOME" ]] && echo same
[ ~/x = "$HOME/x" ] && echo same2

#### tilde-after-equals-in-middle
echo a=~ --opt=~/x x:~

#### noclobber-basic
set -C; echo a > f; echo b > f; echo st=$?; cat f

#### noclobber-force
set -o noclobber; echo a > f; echo b >| f; cat f

#### noclobber-devnull
set -C; echo a > /dev/null; echo st=$?

#### noclobber-append
set -C; echo a > f; echo b >> f; cat f

#### lastpipe-read
shopt -s lastpipe; echo hi | read x; echo "[$x]"

#### lastpipe-off
echo hi | read x; echo "[$x]"

#### lastpipe-while
shopt -s lastpipe; n=0; printf 'a\nb\n' | while read l; do n=$((n+1)); done; echo $n

#### tilde-brace
HOME=/h; echo {~,~/x}

#### tilde-assign-colon
HOME=/h; p=~/a:~/b; echo $p

#### tilde-brace-user
HOME=/h; echo ~{a,b}
