# Exit statuses of fatal expansions, syntax errors in eval, and break/continue/return at the
# edges (bash manual: "Shell Parameter Expansion", "The Set Builtin", "Bourne Shell Builtins").

#### unset-question-mark-fatal
echo before
echo "${nope?is not set}"
echo after

#### unset-question-colon-empty
e=
echo "${e:?empty}"
echo after

#### question-mark-set-passes
v=x
echo "${v?unused}"

#### question-mark-in-subshell-only
( echo "${nope?gone}" )
echo "st=$?"

#### set-u-fatal
set -u
echo "$undefined_var"
echo after

#### set-u-in-subshell
set -u
( echo "$undefined_var" )
echo "st=$?"

#### set-u-default-ok
set -u
echo "${undefined_var-default}"

#### set-u-at-empty-ok
set -u
echo "n=$#" "$@"

#### eval-syntax-error-status
eval 'if true; then'
echo "st=$?"

#### eval-syntax-error-continues
eval 'echo (' 2>/dev/null
echo "st=$?"

#### break-outside-loop
break
echo "st=$?"

#### continue-outside-loop
continue
echo "st=$?"

#### break-too-many-levels
for i in 1 2; do
  for j in a b; do break 5; done
  echo "no"
done
echo "i=$i"

#### continue-two
for i in 1 2; do
  for j in a b; do continue 2; echo no; done
  echo no
done
echo "i=$i"

#### return-in-subshell-function
f() ( return 42 )
f
echo "st=$?"

#### return-outside-function
return 3
echo "st=$?"

#### exit-in-function-ends-script
f() { exit 4; }
f
echo after

#### readonly-assign-fatal
readonly r=1
r=2
echo after

#### readonly-assign-in-subshell
readonly r=1
( r=2 )
echo "st=$?"

#### bad-substitution
x=abc
echo "${x:bad}"
echo after

#### arith-error-in-if
if (( 1 / 0 )); then echo yes; else echo no; fi
echo after

#### command-not-found-127
no_such_command_xyz
echo "st=$?"

#### not-executable-126
echo 'echo hi' > s.sh
./s.sh
echo "st=$?"

#### return-in-subshell-carries-on
f() { (return 3); echo "st=$?"; echo after; }
f

#### return-in-pipeline-of-function
f() { true | return 7; echo "p=$?"; }
f

#### return-in-subshell-outside-function
(return 1)
echo "st=$?"

#### local-in-subshell-of-function
f() ( local x=1; echo "x=$x" )
f
echo "[${x-unset}]"
