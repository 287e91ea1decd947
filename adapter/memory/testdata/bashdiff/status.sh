# Exit status, pipelines, PIPESTATUS, && and ||.

#### true-false
true; echo $?
false; echo $?

#### exit-code-script
exit 3

#### exit-code-large
exit 257

#### exit-negative
exit -1

#### exit-no-arg-last-status
false
exit

#### command-not-found-127
nosuchcommand-xyz 2>/dev/null
echo $?

#### not-executable-126
echo 'echo hi' > s.sh
./s.sh 2>/dev/null
echo $?

#### and-or-chain
true && echo a || echo b
false && echo a || echo b

#### or-short-circuit
true || echo never
echo $?

#### and-status
false && true
echo $?

#### negation
! false; echo $?
! true; echo $?

#### pipeline-status-last
false | true; echo $?
true | false; echo $?

#### pipestatus-array
true | false | true
echo "${PIPESTATUS[@]}"

#### pipestatus-single
false
echo "${PIPESTATUS[@]}"

#### pipestatus-exit-codes
(exit 2) | (exit 3) | (exit 0)
echo "${PIPESTATUS[0]} ${PIPESTATUS[1]} ${PIPESTATUS[2]}"

#### pipefail-status
set -o pipefail
false | true; echo $?
true | true; echo $?

#### pipefail-rightmost-failure
set -o pipefail
(exit 2) | (exit 3) | true
echo $?

#### negated-pipeline
! echo x | grep -q y
echo $?

#### subshell-exit-status
(exit 4)
echo $?

#### command-subst-status
x=$(exit 6)
echo $?

#### command-subst-status-with-assign-and-cmd
x=$(exit 6) true
echo $?

#### last-command-in-if
if false; then :; fi
echo $?

#### if-condition-status-not-errexit
if false; then echo y; else echo n; fi

#### case-no-match-status
false
case x in y) ;; esac
echo $?

#### grep-status-codes
echo abc > f
grep -q b f; echo $?
grep -q z f; echo $?
grep -q z nofile 2>/dev/null; echo $?

#### test-status
[ 1 -eq 1 ]; echo $?
[ 1 -eq 2 ]; echo $?

#### status-of-assignment
x=1
echo $?
false
y=2
echo $?

#### status-after-function
f() { return 9; }
f; echo $?

#### brace-group-status
{ false; }
echo $?

#### bang-with-space
! (exit 1) && echo negated-ok

#### head-closes-pipe
yes | head -n 2

#### pipe-chain-data
printf '3\n1\n2\n' | sort | head -n 1

#### status-of-background-wait
(exit 7) &
wait $!
echo $?

#### wait-no-jobs
wait
echo $?

#### exit-in-pipeline-element
echo x | exit 3
echo "after $?"

#### exit-trap-runs
trap 'echo trapped' EXIT
echo body

#### exit-trap-status-preserved
trap 'echo bye' EXIT
exit 4

#### trap-err
trap 'echo err-trap' ERR
false
echo after

#### status-of-time-less-pipeline
true | true | false
echo $?

#### colon-builtin
: anything here
echo $?

#### status-unknown-in-and-list
nosuch 2>/dev/null && echo yes || echo "no $?"

#### return-status-via-or
f() { return 2; }
f || echo "failed with $?"

#### shell-option-status-of-and-or
false || false
echo $?

#### status-dollar-question-in-arith
false
echo $(( $? + 10 ))

#### pipestatus-after-simple-command
true
echo ${#PIPESTATUS[@]} ${PIPESTATUS[0]}

#### sh-c-exit-status
bash -c 'exit 9'
echo $?

#### exit-in-subshell-in-cmdsubst
v=$(echo part; exit 2)
echo "$v $?"
