# return inside subshells of functions (bash manual, "Bourne Shell Builtins": return "causes a
# shell function to stop executing and return the value n to its caller"; a subshell of a
# function is a copy of the shell running that function, so return ends the subshell with n).
# Cases in the style of the POSIX shell test suites of dash, mksh and busybox ash.

#### subshell-body-function-return
f() ( return 42 )
f
echo "st=$?"

#### subshell-body-function-return-stops-body
f() ( echo in; return 3; echo no )
f
echo "st=$?"

#### subshell-body-function-default-status
f() ( false; return )
f
echo "st=$?"

#### return-in-subshell-inside-function
f() { ( return 5; echo no ); echo "inner st=$?"; return 1; }
f
echo "st=$?"

#### return-in-subshell-does-not-end-function
f() { ( return 0 ); echo still-in-f; }
f

#### return-in-cmdsubst-inside-function
f() { x=$(echo a; return 7; echo b); echo "x=$x st=$?"; }
f

#### return-in-pipeline-element
f() { echo hi | { read -r l; return 4; }; echo "pipe st=$?"; }
f

#### return-in-last-pipeline-element-with-lastpipe
shopt -s lastpipe
f() { echo hi | { read -r l; return 4; }; echo "not reached"; }
f
echo "st=$?"

#### return-in-background-subshell
f() { ( return 6 ) & wait $!; echo "bg st=$?"; }
f

#### return-in-nested-subshells
f() ( ( return 2 ); echo "inner=$?"; return 9 )
f
echo "st=$?"

#### return-in-subshell-outside-function
( return 3 )
echo "st=$?"

#### return-in-cmdsubst-outside-function
x=$(return 3; echo y)
echo "st=$? x=$x"

#### return-status-out-of-range
f() ( return 257 )
f
echo "st=$?"

#### return-negative
f() ( return -1 )
f
echo "st=$?"

#### return-non-numeric
f() ( return abc )
f
echo "st=$?"

#### return-keeps-variables-local-to-subshell
v=outer
f() ( v=inner; return 0 )
f
echo "$v"

#### return-from-subshell-in-loop
f() { for i in 1 2 3; do ( [ $i = 2 ] && return 1; echo "$i" ); done; echo done; }
f

#### subshell-function-with-trap
f() ( trap 'echo trap' EXIT; return 8 )
f
echo "st=$?"

#### subshell-function-exit
f() ( exit 4 )
f
echo "st=$?"

#### subshell-function-return-then-errexit
set -e
f() ( return 1 )
f || echo "caught $?"
echo after

#### subshell-function-return-in-if
f() ( return 0 )
if f; then echo yes; else echo no; fi

#### subshell-function-called-recursively
f() ( [ "$1" -le 0 ] && return 0; echo "$1"; f $(($1 - 1)); return )
f 3
echo "st=$?"

#### subshell-function-output-captured
f() ( echo out; return 2 )
x=$(f)
echo "x=$x st=$?"

#### return-in-brace-group-in-subshell-function
f() ( { echo a; return 5; }; echo no )
f
echo "st=$?"

#### return-in-sourced-like-eval-in-subshell-function
f() ( eval 'return 12'; echo no )
f
echo "st=$?"
