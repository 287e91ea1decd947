# Subshells, command substitution, background jobs, eval, source.

#### subshell-variables-isolated
x=1
( x=2; echo in $x )
echo out $x

#### subshell-cd-isolated
mkdir d
( cd d && pwd )
pwd

#### command-subst-strips-newlines
x=$(printf 'a\n\n\n')
echo "[$x]"

#### command-subst-keeps-inner-newlines
x=$(printf 'a\n\nb\n')
echo "$x"

#### nested-command-subst
echo $(echo $(echo $(echo deep)))

#### command-subst-in-assignment-and-args
n=$(echo 3)
echo $((n * $(echo 2)))

#### backticks-nested-escape
echo `echo \`echo inner\``

#### subshell-exit-doesnt-exit-parent
( exit 3 )
echo "still $?"

#### brace-group-shares-vars
x=1
{ x=2; }
echo $x

#### background-and-wait
( echo bg ) &
wait
echo fg

#### background-pid-set
sleep 0 &
[ -n "$!" ] && echo has-pid
wait

#### eval-basic
cmd='echo evaluated'
eval "$cmd"

#### eval-builds-var
name=dyn
eval "$name=value"
echo $dyn

#### eval-multiple-args
eval echo a '$((1+1))'

#### source-file
echo 'greeting=hi; f() { echo "f $1"; }' > lib.sh
source ./lib.sh
echo $greeting
f x

#### dot-file-with-args
echo 'echo "args: $*"' > s.sh
. ./s.sh one two

#### source-return
printf 'echo a\nreturn 3\necho b\n' > s.sh
. ./s.sh
echo "st=$?"

#### source-missing
source ./nope.sh 2>/dev/null
echo "st=$?"

#### bash-c-args
bash -c 'echo "$0 $1 $2"' zero one two

#### sh-c-inherits-exported
export EV=exp
NE=notexp
bash -c 'echo "[$EV][$NE]"'

#### env-prefix-for-child
V=inline bash -c 'echo $V'
echo "[$V]"

#### subshell-trap-isolated
( trap 'echo sub-exit' EXIT; echo in-sub )
echo after

#### command-subst-exit-status-in-if
if out=$(echo ok; exit 1); then echo yes; else echo "no $out"; fi

#### subshell-pipe-into-brace
echo data | { read -r x; echo "got $x"; }

#### dollar-paren-with-case
x=$(case a in a) echo matched;; esac)
echo $x

#### dollar-paren-with-parens-in-comment
x=$(
  # comment with ) paren
  echo fine
)
echo $x

#### subshell-in-pipeline
( echo a; echo b ) | wc -l

#### export-in-subshell-not-visible
( export X=1 )
echo "[${X-unset}]"

#### bash-c-with-semicolons
bash -c 'a=1; b=2; echo $((a+b))'

#### script-file-with-shebang
printf '#!/bin/bash\necho "script $1"\n' > s.sh
chmod +x s.sh
./s.sh arg

#### script-exit-code
printf 'exit 5\n' > s.sh
bash s.sh
echo $?

#### dollar-dollar-same-in-subshell
[ "$$" = "$(echo $$)" ] && echo same

#### bashpid-differs
[ "$BASHPID" != "$(echo $BASHPID)" ] && echo differs

#### eval-with-quotes
eval 'x="a b"'
echo "$x"

#### eval-syntax-error
eval 'if' 2>/dev/null
echo "st=$?"

#### command-builtin
command echo via-command

#### exec-replaces-shell
bash -c 'exec echo replaced; echo never'

#### subshell-set-e-isolated
( set -e; false; echo never )
echo "st=$?"

#### wait-for-specific-pid
(sleep 0; exit 3) &
p=$!
wait $p
echo $?

#### multiple-background-jobs
for i in 1 2 3; do (echo $i > out$i) & done
wait
cat out1 out2 out3

#### command-subst-large-output
x=$(seq 1 1000 | tail -n 1)
echo $x

#### source-with-local-vars
printf 'lv=sourced\n' > s.sh
f() { local lv=local; . ./s.sh; echo $lv; }
f
echo "[${lv-unset}]"

#### declare-in-subshell
( declare -i n=5; n+=1; echo $n )

#### type-builtin-and-function
f() { :; }
type -t f echo ls if

#### command-v
command -v echo
command -v nosuch-cmd || echo missing

#### process-subst-while-read-keeps-vars
n=0
while read -r l; do n=$((n+1)); done < <(printf 'a\nb\nc\n')
echo $n

#### process-subst-diff
diff <(printf 'a\nb\n') <(printf 'a\nc\n')
echo "st=$?"

#### process-subst-mapfile
mapfile -t lines < <(printf 'x\ny\n')
echo "${#lines[@]} ${lines[1]}"

#### process-subst-as-file-argument
wc -l < <(seq 5)
cat <(echo one) <(echo two)
