# break and continue outside loops, and their counts (bash manual, "Bourne Shell Builtins":
# break n "n must be >= 1"; "If n is greater than the number of enclosing loops, all enclosing
# loops are exited"; the return status is zero unless n is not greater than or equal to 1).
# Cases in the style of the POSIX shell test suites of dash, mksh and busybox ash.

#### break-at-top-level
break
echo "st=$?"

#### continue-at-top-level
continue
echo "st=$?"

#### break-at-top-level-stderr-quiet
break 2>/dev/null
echo "st=$?"

#### break-in-if-outside-loop
if true; then break; fi
echo "after st=$?"

#### break-in-brace-group
{ break; echo in; }
echo "st=$?"

#### break-in-subshell-outside-loop
( break; echo in )
echo "st=$?"

#### break-in-function-outside-loop
f() { break; echo "in f st=$?"; }
f
echo "st=$?"

#### continue-in-function-outside-loop
f() { continue; echo "in f st=$?"; }
f
echo done

#### break-in-function-called-from-loop
f() { break; }
for i in 1 2 3; do echo "$i"; f; done
echo "after"

#### continue-in-function-called-from-loop
f() { continue; }
for i in 1 2; do f; echo "body $i"; done

#### break-in-subshell-inside-loop
for i in 1 2 3; do ( break ); echo "$i"; done

#### continue-in-subshell-inside-loop
for i in 1 2; do ( continue; echo no ); echo "$i"; done

#### break-in-cmdsubst-inside-loop
for i in 1 2; do x=$(break; echo inner); echo "$i $x"; done

#### break-zero-is-error
for i in 1 2; do break 0; echo "no $i"; done
echo "st=$?"

#### break-negative-is-error
for i in 1 2; do break -1; echo "body $i"; done
echo "st=$?"

#### break-not-a-number
for i in 1 2; do break x; echo "body $i"; done
echo "st=$?"

#### continue-zero-is-error
for i in 1 2; do continue 0; echo "body $i"; done
echo "st=$?"

#### break-too-many-levels-exits-all
for i in 1 2; do for j in a b; do break 5; done; echo "no $i"; done
echo "st=$?"

#### continue-too-many-levels
for i in 1 2; do for j in a b; do continue 9; echo no; done; echo "no $i"; done
echo "st=$?"

#### break-two-levels
for i in 1 2; do for j in a b; do echo "$i$j"; break 2; done; done
echo end

#### continue-two-levels
for i in 1 2; do for j in a b; do echo "$i$j"; continue 2; echo no; done; echo no; done

#### break-in-eval-inside-loop
for i in 1 2 3; do eval 'break'; echo "$i"; done
echo end

#### break-in-eval-outside-loop
eval break
echo "st=$?"

#### continue-in-while-condition
n=0
while n=$((n+1)); [ $n -le 3 ] || break; do echo "$n"; done

#### break-in-case-inside-loop
for w in a b stop c; do case $w in stop) break ;; esac; echo "$w"; done

#### break-status-in-loop-is-zero
false
for i in 1; do break; done
echo "st=$?"

#### break-in-until-loop
until false; do echo once; break; done
echo "st=$?"

#### break-in-select-free-loop-pipeline
printf '%s\n' 1 2 3 | while read -r l; do [ "$l" = 2 ] && break; echo "$l"; done

#### break-outside-loop-then-loop-works
break
for i in x y; do echo "$i"; done

#### break-in-trap-outside-loop
trap 'break' EXIT
echo body

#### continue-in-sourced-text-via-eval-in-loop
for i in 1 2; do eval 'continue'; echo no; done
echo done
