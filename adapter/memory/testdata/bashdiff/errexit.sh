# set -e, set -u, set -o pipefail and friends.

#### errexit-stops
set -e
echo before
false
echo after

#### errexit-and-list-not-last
set -e
false && true
echo continued

#### errexit-and-list-in-loop
set -e
for i in 1 2; do
  false && true
done
echo after-loop

#### errexit-and-list-in-if-body
set -e
if true; then
  false && true
fi
echo after-if

#### errexit-and-list-in-brace
set -e
{ false && true; }
echo after-brace

#### errexit-and-list-in-while
set -e
i=0
while [ $i -lt 2 ]; do
  i=$((i+1))
  [ $i = 5 ] && echo never
done
echo after-while

#### errexit-and-list-in-function
set -e
f() { [ -n "" ] && echo never; }
f
echo "unreached? no: status $?"

#### errexit-and-list-last-in-function-body
set -e
f() {
  [ -n "" ] && echo never
}
f
echo after-f

#### errexit-or-list
set -e
false || true
echo ok

#### errexit-or-list-last-fails
set -e
true && false
echo never

#### errexit-in-if-condition
set -e
if false; then echo no; fi
echo after

#### errexit-negated
set -e
! true
echo still-here

#### errexit-in-while-condition
set -e
while false; do :; done
echo ok

#### errexit-subshell
set -e
(false)
echo never

#### errexit-subshell-inner-continue
set -e
(false; echo inner) || echo outer
echo end

#### errexit-command-subst
set -e
x=$(false)
echo never

#### errexit-command-subst-in-echo
set -e
echo "x$(false)"
echo still

#### errexit-local-masks
set -e
f() { local x=$(false); echo masked; }
f

#### errexit-pipeline-last
set -e
false | true
echo ok

#### errexit-pipefail
set -eo pipefail
false | true
echo never

#### errexit-arith-zero
set -e
x=0
(( x ))
echo never

#### errexit-in-function-called-in-if
set -e
f() { false; echo in-f; }
if f; then echo yes; fi

#### errexit-set-plus-e
set -e
set +e
false
echo continues

#### errexit-bash-e-flag
bash -e -c 'false; echo never'
echo "st=$?"

#### errexit-trap-exit-runs
set -e
trap 'echo cleanup' EXIT
false
echo never

#### errexit-status-of-exit
set -e
(exit 3)
echo never

#### nounset-error
set -u
echo "$undefined_var"
echo never

#### nounset-status
bash -c 'set -u; echo $nope' 2>/dev/null
echo "st=$?"

#### nounset-default-ok
set -u
echo "${nope:-fallback}"

#### nounset-positional
set -u
f() { echo "${1-none}"; }
f

#### nounset-dollar-at-empty
set -u
set --
echo "args: $@"

#### nounset-in-arith
set -u
echo $((nope + 1))
echo never

#### nounset-array-length
set -u
declare -a arr=()
echo ${#arr[@]}

#### nounset-in-subshell-status
set -u
( echo $nope ) 2>/dev/null
echo "st=$?"

#### pipefail-with-head
set -o pipefail
yes | head -n 1 >/dev/null
echo "st=$?"

#### set-o-list-errexit
set -e
set -o | grep -E '^errexit' | tr -s ' \t' ' '

#### errexit-false-in-and-list-at-end-of-script
set -e
echo start
false && echo no

#### errexit-in-case
set -e
case x in x) false;; esac
echo never

#### errexit-in-case-and-list
set -e
case x in x) false && true;; esac
echo after-case

#### errexit-nested-brace-and-list
set -e
{ { false && true; }; }
echo nested-ok

#### errexit-until
set -e
until true; do :; done
echo ok

#### errexit-eval
set -e
eval 'false'
echo never

#### errexit-eval-and-list
set -e
eval 'false && true'
echo eval-ok

#### errexit-disabled-in-or-function
set -e
f() { false; echo still-in-f; }
f || true
echo end

#### errexit-test-bracket-in-loop
set -e
for f in a b; do
  [ "$f" = b ] && echo "found $f"
done
echo done

#### errexit-shopt-inherit
set -e
f() { false; }
x=$(f; echo after-f-in-subst)
echo "[$x]"

#### errexit-inherit-errexit
set -e
shopt -s inherit_errexit
x=$(false; echo never)
echo "[$x]"

#### set-e-dash-flags-combined
set -eu
echo ${ok:-ok}

#### set-minus-minus-clears
set -- a b
set --
echo $#
