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
