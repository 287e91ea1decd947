# Loops: for, while, until, break, continue, select-free.

#### for-in-list
for x in a b c; do echo $x; done

#### for-no-in-uses-params
set -- p q
for x; do echo $x; done

#### for-empty-list
for x in; do echo never; done
echo done

#### for-brace-range
for i in {1..5}; do printf '%s ' $i; done; echo

#### for-brace-step
for i in {0..10..3}; do printf '%s ' $i; done; echo

#### for-brace-letters
echo {a..e}

#### for-brace-reverse
echo {5..1}

#### for-brace-padded
echo {01..10..3}

#### brace-list
echo pre{a,b,c}post

#### brace-nested
echo {a,b{1,2}}

#### brace-no-expansion-single
echo {a} {a,} x{}y

#### for-seq
for i in $(seq 3); do echo "i=$i"; done

#### c-style-for
for ((i=0; i<3; i++)); do echo $i; done

#### c-style-empty-parts
i=0
for ((;;)); do ((i++)); [ $i -ge 3 ] && break; done
echo $i

#### while-counter
i=0
while [ $i -lt 3 ]; do echo $i; i=$((i+1)); done

#### until-loop
i=0
until [ $i -ge 3 ]; do echo $i; i=$((i+1)); done

#### break-out
for i in 1 2 3 4; do [ $i = 3 ] && break; echo $i; done

#### continue-skip
for i in 1 2 3 4; do [ $i = 2 ] && continue; echo $i; done

#### break-nested-levels
for i in 1 2; do
  for j in a b c; do
    [ $j = b ] && break 2
    echo $i$j
  done
done
echo out

#### continue-nested-levels
for i in 1 2; do
  for j in a b; do
    [ $j = a ] && continue 2
    echo never
  done
  echo never2
done
echo out

#### while-read-lines
printf 'one\ntwo\nthree\n' > f
while read -r l; do echo "<$l>"; done < f

#### while-read-last-line-no-newline
printf 'a\nb' > f
while read -r l || [ -n "$l" ]; do echo "<$l>"; done < f

#### pipe-into-while-subshell
n=0
printf 'a\nb\n' | while read -r l; do n=$((n+1)); done
echo $n

#### loop-status-last-command
for i in 1 2; do false; done
echo $?

#### loop-status-no-iterations
false
for i in; do :; done
echo $?

#### while-false-status
while false; do :; done
echo $?

#### loop-var-after-loop
for v in a b c; do :; done
echo $v

#### loop-over-glob
touch a.c b.c c.h
for f in *.c; do echo "$f"; done

#### loop-over-no-match-glob
for f in *.none; do echo "[$f]"; done

#### loop-over-array
arr=(x 'y z' w)
for e in "${arr[@]}"; do echo "[$e]"; done

#### loop-over-array-indices
arr=(a b c)
for i in "${!arr[@]}"; do echo "$i=${arr[i]}"; done

#### while-with-break-value
i=0
while :; do
  i=$((i+1))
  if [ $i -eq 4 ]; then break; fi
done
echo $i

#### loop-output-piped
for i in 3 1 2; do echo $i; done | sort

#### nested-loops
for i in 1 2; do for j in 1 2; do echo -n "$i$j "; done; done; echo

#### loop-with-case
for x in apple bob 42; do
  case $x in
    [0-9]*) echo "$x number";;
    a*) echo "$x a-word";;
    *) echo "$x other";;
  esac
done

#### while-read-ifs-fields
printf 'k1=v1\nk2=v2\n' > kv
while IFS== read -r k v; do echo "$k -> $v"; done < kv

#### for-in-command-subst-lines
printf 'l 1\nl 2\n' > f
IFS=$'\n'
for l in $(cat f); do echo "[$l]"; done

#### break-outside-loop
break 2>/dev/null
echo "st=$?"

#### loop-in-function-return
f() { for i in 1 2 3; do [ $i = 2 ] && return 7; done; }
f
echo $?

#### until-with-counter-and-status
n=3
until ((n == 0)); do echo $n; ((n--)); done

#### for-with-semicolon-newline-forms
for i in a b
do
  echo $i
done

#### while-command-condition
printf 'x\n' > f
while grep -q x f; do echo found; : > f; done

#### read-loop-with-counter
i=0
while read -r _; do i=$((i+1)); done <<< $'a\nb\nc'
echo $i

#### loop-sum-file
printf '1\n2\n3\n' > nums
s=0
while read -r n; do s=$((s+n)); done < nums
echo $s

#### brace-expansion-in-for-with-var-no-expand
n=3
echo {1..$n}

#### seq-with-step
seq 1 2 7

#### seq-separator
seq -s, 1 4

#### continue-in-while
i=0
while [ $i -lt 5 ]; do
  i=$((i+1))
  [ $((i % 2)) -eq 0 ] && continue
  echo $i
done

#### break-n
for i in 1 2; do for j in a b; do echo $i$j; break 2; done; done; echo after

#### continue-n
for i in 1 2; do for j in a b; do continue 2; echo no; done; echo no2; done; echo end

#### until
n=0; until [ $n -ge 3 ]; do n=$((n+1)); done; echo $n

#### for-no-in
set -- x y; for a; do echo $a; done

#### c-style-empty
for ((i=0;;i++)); do [ $i -ge 2 ] && break; echo $i; done

#### loop-redirect
for i in 1 2; do echo $i; done > out.txt; cat out.txt

#### while-pipe-subshell
n=0; printf '1\n2\n' | while read x; do n=$x; done; echo $n

#### loop-status
for i in; do :; done; echo st=$?; false; while false; do :; done; echo st=$?

#### break-in-function-loop
f() { break; }; for i in 1 2; do f; echo $i; done

#### nested-while-read-fd
printf 'a\nb\n' > f1; printf '1\n2\n' > f2
while read -r x <&3 && read -r y <&4; do echo "$x$y"; done 3<f1 4<f2

#### for-brace-seq-step
for i in {1..10..3}; do echo -n "$i "; done; echo; for i in {c..a}; do echo -n $i; done; echo

#### select-not-used
for x in "a b" c; do echo "[$x]"; done

#### case-in-loop-break
for i in 1 2 3; do case $i in 2) break ;; esac; echo $i; done

#### last-line-no-newline
printf 'a\nb' | while read -r l; do echo "[$l]"; done
printf 'a\nb' | while read -r l || [ -n "$l" ]; do echo "<$l>"; done

#### c-style-two-vars
for ((i=0, j=5; i<j; i++, j--)); do echo "$i $j"; done

#### loop-var-persists
for x in a b; do :; done; echo $x

#### for-cmdsubst
for w in $(echo "one two"; echo three); do echo $w; done

#### csv-ifs
csv=a,b,c; IFS=,; for x in $csv; do echo $x; done

#### until-break
until false; do echo once; break; done

#### while-not
n=0; while ! [ $n -eq 2 ]; do n=$((n+1)); done; echo $n

#### break-in-subshell
for i in 1 2; do (break); echo $i; done

#### while-read-ifs-fields-2
printf 'a:b\nc:d\n' | while IFS=: read -r x y; do echo "$y$x"; done

#### nested-continue-in-case
for i in 1 2 3; do case $i in 2) continue;; esac; echo $i; done

#### loop-exit-status-last
for i in 1 2; do false; done; echo st=$?

#### while-cond-sequence
i=0; while i=$((i+1)); [ $i -lt 3 ]; do echo $i; done

#### for-quoted-at
set -- "a b" c; for x in "$@"; do echo "[$x]"; done; for x in $@; do echo "<$x>"; done

#### for-star-quoted
set -- "a b" c; for x in "$*"; do echo "[$x]"; done

#### seq-loop
for i in $(seq 3); do echo -n $i; done; echo

#### while-read-last-line-without-newline
printf 'a\nb' | while read -r l || [ -n "$l" ]; do echo "[$l]"; done

#### for-over-empty-list
for x in; do echo no; done
echo "st=$?"

#### for-over-glob-no-match
for f in *.nomatch; do echo "$f"; done

#### while-false-status-zero
while false; do :; done
echo "st=$?"

#### until-counter
i=0
until [ $i -ge 3 ]; do i=$((i+1)); done
echo $i

#### loop-status-is-last-body-command
for i in 1 2; do false; done
echo "st=$?"

#### nested-loop-break-inner-only
for i in 1 2; do for j in a b c; do [ $j = b ] && break; echo $i$j; done; done

#### c-style-multiple-vars
for ((i=0, j=10; i<3; i++, j--)); do echo "$i $j"; done

#### c-style-empty-parts-more
i=0
for ((;;)); do ((i++ >= 2)) && break; done
echo $i

#### while-with-pipeline-condition
printf '1\n2\n' > in
while read -r n && [ "$n" != 2 ]; do echo "$n"; done < in

#### loop-over-array-with-spaces
a=("x y" z)
for e in "${a[@]}"; do echo "[$e]"; done

#### loop-over-seq-output
for i in $(seq 3); do printf '%s,' "$i"; done; echo

#### loop-modifying-list-var
l="a b"
for x in $l; do l="c"; echo $x; done

#### loop-var-keeps-last-value
for v in 1 2 3; do :; done
echo $v

#### loop-in-function-return-more
f() { for i in 1 2 3; do [ $i = 2 ] && return 7; done; }
f
echo "st=$?"

#### while-read-from-command-subst-herestring
while IFS=, read -r a b; do echo "$b-$a"; done <<< "1,2
3,4"

#### case-fallthrough-and-continue
for w in a b; do case $w in a) echo A ;& b) echo B ;; esac; done

#### case-test-next
case ab in a*) echo one ;;& *b) echo two ;; esac

#### for-with-semicolon-newline-forms-more
for i in a b
do
  echo $i
done
for j in c; do echo $j; done

#### while-read-multiple-fields
printf 'k1 v1\nk2 v2\n' | while read -r k v; do echo "$v=$k"; done

#### for-in-dollar-at
set -- "x y" z
for a in "$@"; do echo "[$a]"; done
for a; do echo "<$a>"; done

#### loop-with-redirect-and-pipe
for i in 3 1 2; do echo $i; done | sort | tr '\n' ' '
echo

#### while-arith-condition
i=0
while (( i < 3 )); do echo $i; (( i++ )); done

#### until-with-break-status
until false; do break; done
echo "st=$?"

#### nested-function-loop-continue
f() { for x in 1 2 3; do [ $x = 2 ] && continue; echo $x; done; }
f

#### select-with-no-input
select x in a b; do echo "$x"; done < /dev/null 2>/dev/null
echo "st=$?"
