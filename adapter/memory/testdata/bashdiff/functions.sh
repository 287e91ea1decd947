# Functions: definition, arguments, return, local, recursion.

#### define-and-call
greet() { echo "hi $1"; }
greet bob

#### function-keyword
function f { echo kw; }
f

#### function-keyword-parens
function g() { echo kwp; }
g

#### args-and-count
f() { echo "$# [$1] [$2] [$@]"; }
f a 'b c' d

#### dollar-zero-in-function
f() { echo $0; }
f

#### return-status
f() { return 3; }
f
echo $?

#### return-default-last-status
f() { false; }
f
echo $?

#### local-variable
x=global
f() { local x=local; echo $x; }
f
echo $x

#### local-visible-in-callee
f() { local v=inner; g; }
g() { echo "g sees $v"; }
f
echo "outside [$v]"

#### global-assignment-in-function
f() { y=set; }
f
echo $y

#### recursion
fact() { if [ $1 -le 1 ]; then echo 1; else echo $(( $1 * $(fact $(( $1 - 1 ))) )); fi; }
fact 5

#### recursion-fib
fib() { local n=$1; if ((n < 2)); then echo $n; return; fi; echo $(( $(fib $((n-1))) + $(fib $((n-2))) )); }
fib 7

#### function-positional-restored
set -- outer
f() { echo $1; }
f inner
echo $1

#### function-output-captured
f() { echo captured; }
v=$(f)
echo "[$v]"

#### function-redefine
f() { echo one; }
f() { echo two; }
f

#### unset-function
f() { echo x; }
unset -f f
f 2>/dev/null
echo $?

#### function-in-pipeline
f() { tr a-z A-Z; }
echo abc | f

#### function-with-local-array
f() { local -a arr=(1 2 3); echo ${#arr[@]}; }
f

#### function-shift
f() { shift; echo "$@"; }
f a b c

#### function-return-in-loop
f() { while :; do return 4; done; }
f
echo $?

#### function-exit-ends-script
f() { exit 5; }
f
echo never

#### function-exit-in-subshell
f() { exit 5; }
( f )
echo "st=$?"

#### local-without-value
x=1
f() { local x; echo "[$x]"; x=2; }
f
echo $x

#### local-dash-shadow-ifs
f() { local IFS=,; echo "$*"; }
f a b c
set -- a b
echo "$*"

#### function-named-like-command
ls() { echo "my ls"; }
ls

#### command-bypasses-function
echo() { builtin echo "wrapped $*"; }
echo hi
command echo plain

#### declare-f-exists
f() { :; }
declare -F f >/dev/null && echo exists

#### function-returns-string-via-echo
upper() { echo "${1^^}"; }
r=$(upper abc)
echo $r

#### function-modifies-array
arr=()
add() { arr+=("$1"); }
add x; add y
echo ${arr[@]} ${#arr[@]}

#### function-default-args
f() { local a=${1:-def}; echo $a; }
f
f given

#### function-nested-definition
outer() { inner() { echo inner; }; inner; }
outer
inner

#### function-return-out-of-range
f() { return 300; }
f
echo $?

#### return-outside-function
return 2>/dev/null
echo "st=$?"

#### function-local-status
f() { local x=$(false); echo $?; }
f

#### function-assign-status
f() { local x; x=$(false); echo $?; }
f

#### function-called-before-defined
f 2>/dev/null
echo $?
f() { echo late; }
f

#### function-with-heredoc-arg
f() { cat; }
f <<END
piped in
END

#### function-name-with-dash
my-func() { echo dash; }
my-func

#### function-local-export
f() { local -x LV=exported; bash -c 'echo $LV'; }
f

#### function-FUNCNAME
f() { echo ${FUNCNAME[0]}; }
f

#### function-args-with-glob-chars
f() { for a; do echo "[$a]"; done; }
f '*' '?'

#### function-errexit-inside
set -e
f() { false; echo never; }
f || echo caught

#### function-recursion-depth
count() { if [ $1 -gt 0 ]; then count $(($1-1)); else echo bottom; fi; }
count 50

#### alias-not-expanded-in-script
alias ll='echo aliased'
ll 2>/dev/null
echo $?

#### alias-with-expand-aliases
shopt -s expand_aliases
alias hi='echo hello'
hi
