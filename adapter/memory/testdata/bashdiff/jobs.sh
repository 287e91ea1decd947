# Background jobs, wait, $! and PIPESTATUS (bash manual: "Job Control", "Bash Builtins: wait",
# "Special Parameters"). bash -c runs without job control: jobs are still numbered, %N works.

#### wait-status-of-pid
(exit 7) &
wait $!
echo "st=$?"

#### wait-without-args-is-zero
(exit 3) &
(exit 4) &
wait
echo "st=$?"

#### wait-two-pids-last-status
(exit 3) &
a=$!
(exit 5) &
b=$!
wait $a $b
echo "st=$?"

#### wait-percent-one
(sleep 0.1; exit 6) &
wait %1
echo "st=$?"

#### wait-percent-two
(sleep 0.3; exit 1) &
(sleep 0.1; exit 2) &
wait %2
echo "st=$?"
wait %1
echo "st=$?"

#### wait-percent-after-wait-pid
(sleep 0.1; exit 3) &
wait $!
wait %1
echo "st=$?"

#### wait-percent-percent
(sleep 0.1; exit 4) &
wait %%
echo "st=$?"

#### wait-percent-plus
(sleep 0.1; exit 9) &
wait %+
echo "st=$?"

#### wait-n-returns-a-status
(sleep 0.1; exit 5) &
wait -n
echo "st=$?"

#### wait-n-no-jobs
wait -n
echo "st=$?"

#### wait-n-collects-all
for i in 1 2 3; do (sleep "0.$i"; exit $i) & done
s=0
for i in 1 2 3; do wait -n; s=$((s + $?)); done
echo "sum=$s"

#### wait-n-then-none
(sleep 0.1; exit 2) &
wait -n
echo "first=$?"
wait -n
echo "second=$?"

#### wait-unknown-pid
wait 999999
echo "st=$?"

#### wait-unknown-job
wait %5
echo "st=$?"

#### wait-not-a-pid
wait abc 2>/dev/null
echo "st=$?"

#### background-output-after-wait
{ sleep 0.05; echo late; } &
echo early
wait
echo done

#### background-group-order
for i in 1 2 3; do { echo "job $i" > "j$i"; } & done
wait
cat j1 j2 j3

#### background-cannot-change-vars
x=1
{ x=2; } &
wait
echo "x=$x"

#### bang-is-number
true &
case $! in ''|*[!0-9]*) echo "not a number: $!" ;; *) echo number ;; esac
wait

#### bang-unset-before-job
echo "[$!]"

#### bang-inherited-by-subshell
true &
[ "$(echo $!)" = "$!" ] && echo same
wait

#### wait-p-stores-pid
(sleep 0.1; exit 4) &
p=$!
wait -n -p got
echo "st=$?"
[ "$got" = "$p" ] && echo same

#### wait-bad-option
wait -x 2>/dev/null
echo "st=$?"

#### bang-changes-per-job
true &
a=$!
true &
b=$!
wait
[ "$a" != "$b" ] && echo differ

#### wait-on-bang-in-loop
pids=()
for i in 1 2 3; do (exit $((i * 2))) & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; echo "st=$?"; done

#### background-status-is-zero
(exit 3) &
echo "st=$?"
wait

#### background-list-in-braces
{ echo a; false; } &
wait $!
echo "st=$?"

#### pipestatus-three
true | false | (exit 3)
echo "${PIPESTATUS[@]}"

#### pipestatus-single-command
false
echo "${PIPESTATUS[@]}"

#### pipestatus-after-assignment-kept
false | true
echo "${PIPESTATUS[0]} ${PIPESTATUS[1]}"

#### pipestatus-with-pipefail
set -o pipefail
(exit 2) | true
echo "st=$? ps=${PIPESTATUS[*]}"

#### pipestatus-negated
! true | false
echo "st=$? ps=${PIPESTATUS[*]}"

#### pipestatus-count
echo a | cat | cat | cat >/dev/null
echo "${#PIPESTATUS[@]}"

#### wait-after-pipeline-in-background
echo hi | tr a-z A-Z > up.txt &
wait
cat up.txt

#### jobs-empty
jobs
jobs -p
echo "st=$?"

#### jobs-lists-running
sleep 0.3 &
sleep 0.3 &
jobs
wait

#### jobs-p-count
sleep 0.3 & sleep 0.3 & sleep 0.3 &
jobs -p | wc -l
wait

#### jobs-p-is-bang
sleep 0.3 &
[ "$(jobs -p)" = "$!" ] && echo same
wait

#### wait-jobs-p
(sleep 0.1; exit 3) &
wait $(jobs -p)
echo "st=$?"

#### jobs-after-wait-empty
sleep 0.1 &
wait
jobs
echo "n=$(jobs -p | wc -l)"

#### jobs-no-such-job
jobs %3
echo "st=$?"

#### kill-job-spec-status
sleep 5 & kill %1; wait %1; echo st=$?

#### kill-pid-status
sleep 5 & p=$!
kill "$p"; wait "$p"; echo st=$?

#### kill-9-status
sleep 5 & kill -9 $!; wait $!; echo st=$?

#### kill-s-int-ignored
sleep 0.3 & sleep 0.1; kill -s INT %1; wait %1; echo st=$?

#### kill-0-running
sleep 0.2 & kill -0 $! && echo alive; wait

#### kill-finished-job-waited
true & wait $!; kill %1; echo st=$?

#### kill-unknown-pid
kill 99999; echo st=$?

#### kill-loop-job
while :; do :; done & kill $!; wait $!; echo st=$?

#### kill-one-of-two
sleep 5 & a=$!; (sleep 0.05; exit 4) & b=$!
kill $a; wait $a; echo a=$?; wait $b; echo b=$?

#### kill-job-from-subshell
sleep 5 & p=$!; (kill $p); wait $p; echo st=$?

#### kill-then-jobs-empty
sleep 5 & kill %1; wait %1; jobs; echo done

#### jobs-wait-status
(exit 7) & p=$!
wait $p; echo st=$?

#### jobs-wait-all
(sleep 0.01; exit 3) & (exit 4) &
wait; echo st=$?

#### jobs-bang-number
true & [[ $! =~ ^[0-9]+$ ]] && echo num

#### jobs-pipestatus-3
true | false | (exit 3); echo "${PIPESTATUS[@]}"

#### jobs-pipestatus-after-not
! false | true; echo "${PIPESTATUS[@]} $?"

#### jobs-pipestatus-compound
{ false; } | true; echo "${PIPESTATUS[*]}"

#### jobs-background-output-order
echo a & wait; echo b

#### jobs-wait-unknown
wait 99999; echo st=$?

#### jobs-kill-jobspec
sleep 5 & kill %1; wait %1; echo st=$?

#### wait-multiple-pids-status
(exit 2) & a=$!; (exit 3) & b=$!; wait $a $b; echo st=$?

#### bang-after-pipeline
echo x | cat >/dev/null & p=$!; wait $p; echo st=$?

#### brace-group-bg
{ echo in-group; exit 4; } & wait $!; echo st=$?

#### function-bg
f() { return 6; }; f & wait $!; echo st=$?

#### wait-parent-job-in-subshell
sleep 0.1 & p=$!; ( wait $p; echo "sub=$?" ) 2>/dev/null; wait

#### jobs-l-format
sleep 0.3 & jobs | sed 's/[0-9][0-9]*/N/'; wait

#### kill-percent-percent
sleep 5 & kill %%; wait %%; echo st=$?

#### bg-var-not-visible
x=1; { x=2; } & wait; echo $x

#### bg-output-captured
out=$(echo bg & wait); echo "[$out]"

#### wait-n-no-jobs-2
wait -n; echo st=$?

#### bg-and-fg-ordering
(sleep 0.1; echo late) & echo early; wait

#### pipestatus-bg-not-set
false | true; true & wait; echo "${PIPESTATUS[@]}"

#### bang-unset-initially
echo "[$!]"

#### wait-after-finished
(exit 9) & sleep 0.1; wait $!; echo st=$?

#### many-jobs
for i in 1 2 3 4 5; do (exit $i) & done; wait; echo st=$?

#### wait-p
(exit 3) & p=$!; wait -n -p got; echo "st=$? same=$(( got == p ))"

#### fg-no-job-control
fg; echo st=$?

#### bg-no-job-control
bg; echo st=$?

#### disown
sleep 0.1 & disown; echo st=$?; wait; echo done

#### disown-percent
sleep 0.1 & disown %1; echo st=$?; jobs; echo listed

#### jobs-after-done
true & sleep 0.1; jobs; echo none

#### wait-percent-minus
sleep 0.1 & sleep 0.2 & wait %-; echo st=$?; wait

#### bang-in-subshell
true & p=$!; ( echo $(( $! == p )) ); wait

#### wait-pid-twice
(exit 5) & p=$!; wait $p; echo a=$?; wait $p; echo b=$?

#### pipeline-bg-status
false | true & wait $!; echo st=$?

#### bg-exit-in-trap
trap 'echo trap' EXIT; (exit 2) & wait; echo end

#### jobs-p-count-2
sleep 0.2 & sleep 0.2 & jobs -p | wc -l; wait

#### kill-jobs-p
sleep 5 & sleep 5 & kill $(jobs -p); wait; echo done

#### wait-n-order
(sleep 0.2; exit 1) & (sleep 0.05; exit 2) & wait -n; echo first=$?; wait -n; echo second=$?

#### wait-n-first-finished-status
(sleep 0.5; exit 3) &
(sleep 0.1; exit 5) &
wait -n
echo "st=$?"
wait

#### wait-pid-of-finished-job-status
(exit 7) &
p=$!
sleep 0.1
wait $p
echo "st=$?"

#### wait-all-then-status-zero
(exit 3) &
(exit 4) &
wait
echo "st=$?"

#### bang-is-last-of-pipeline
echo x | (exit 2) &
wait $!
echo "st=$?"

#### jobs-count-two-running
sleep 1 & sleep 1 &
jobs | wc -l
kill %1 %2
wait 2>/dev/null
echo done

#### pipestatus-of-false-true
false | true
echo "${PIPESTATUS[@]}"

#### pipestatus-copied-before-reset
true | false | true
ps=("${PIPESTATUS[@]}")
echo "${ps[*]} ${#ps[@]}"

#### pipestatus-after-if
if false | true; then echo t; fi
echo "${PIPESTATUS[@]}"

#### pipestatus-in-function
f() { false | false | true; echo "${PIPESTATUS[@]}"; }
f

#### pipestatus-with-exit-codes
(exit 3) | (exit 4) | (exit 5)
echo "${PIPESTATUS[0]} ${PIPESTATUS[1]} ${PIPESTATUS[2]}"

#### pipestatus-after-subshell
( exit 9 )
echo "${PIPESTATUS[@]}"

#### pipestatus-after-builtin-failure
cd /nonexistent 2>/dev/null
echo "${PIPESTATUS[@]}"

#### wait-for-background-pipeline-status
false | true &
wait $!
echo "st=$?"

#### background-job-reads-nothing-from-stdin
cat &
wait
echo done

#### bang-different-for-two-jobs
true & a=$!
true & b=$!
[ "$a" != "$b" ] && echo differ
wait

#### wait-n-with-pid-list
(sleep 0.5; exit 1) & p1=$!
(sleep 0.1; exit 2) & p2=$!
wait -n $p1 $p2
echo "st=$?"
wait

#### wait-n-p-variable-names-pid
(sleep 0.1; exit 4) & p=$!
wait -n -p got
echo "st=$? same=$([ "$got" = "$p" ] && echo y)"

#### jobs-status-done-after-finish
true &
sleep 0.1
jobs >/dev/null
jobs
echo end

#### wait-percent-job-status
(sleep 0.1; exit 6) &
wait %1
echo "st=$?"

#### wait-percent-nonexistent
wait %3
echo "st=$?"

#### bang-after-subshell-bg
( echo in-bg ) &
wait "$!"
echo "st=$?"

#### background-in-loop-collect-statuses
for i in 1 2 3; do (exit $i) & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; echo "$?"; done

#### background-function-status
f() { return 3; }
f &
wait $!
echo "st=$?"

#### kill-background-sleep-status
sleep 5 &
kill $!
wait $!
echo "st=$?"

#### kill-term-named
sleep 5 &
kill -TERM $!
wait $!
echo "st=$?"

#### kill-l-number
kill -l 15
kill -l TERM
kill -l 143
kill -l 99
echo "st=$?"

#### pipestatus-after-while-loop-pipeline
printf 'a\n' | while read -r l; do :; done
echo "${PIPESTATUS[@]}"

#### pipestatus-with-not
! false | false
echo "$? ${PIPESTATUS[@]}"

#### pipestatus-in-subshell-separate
(false | true; echo "${PIPESTATUS[@]}")
echo "${PIPESTATUS[@]}"

#### pipestatus-assignment-local
f() { true | false; local s=("${PIPESTATUS[@]}"); echo "${s[@]}"; }
f

#### wait-on-non-child-pid
wait 999999
echo "st=$?"

#### bang-in-double-quotes
sleep 0 &
[[ "$!" =~ ^[0-9]+$ ]] && echo numeric
wait

#### jobs-l-has-pid
sleep 1 &
jobs -l | grep -c "$!"
kill %1
wait 2>/dev/null

#### jobs-percent-spec-output
sleep 1 &
jobs %1 | grep -c sleep
kill %%
wait 2>/dev/null

#### wait-returns-signal-status-of-killed
sleep 3 &
p=$!
kill -9 $p
wait $p
echo "st=$?"

#### background-subshell-exit-status-via-wait
{ sleep 0.1; exit 42; } &
wait $!
echo "st=$?"

#### background-pipeline-bang-is-last
sleep 0.1 | (exit 3) &
wait $!
echo "st=$?"

#### wait-without-jobs-immediate
wait
echo "st=$?"

#### two-waits-same-pid
(exit 5) & p=$!
wait $p; echo "a=$?"
wait $p; echo "b=$?"
