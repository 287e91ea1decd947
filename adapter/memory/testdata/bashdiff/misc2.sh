# A second mixed batch: less common but documented bash behaviour.

#### declare-f-prints-function
f() { echo hello; }
declare -f f

#### type-of-function-name-only
f() { :; }
type -t f

#### prefix-names-at
ab1=1 ab2=2
for n in "${!ab@}"; do echo "$n"; done

#### param-transform-A
x='a b'
echo "${x@A}"

#### local-nameref
f() { local -n ref=$1; ref=changed; }
v=orig
f v
echo $v

#### nocasematch-in-double-brackets
shopt -s nocasematch
[[ ABC == abc ]] && echo matched
case XyZ in xyz) echo case-matched;; esac

#### case-resume-operator
case abc in a*) echo one;;& *c) echo two;;& *) echo three;; esac

#### getopts-reset-optind
f() { local OPTIND o; while getopts 'a' o; do echo "got $o"; done; }
f -a
f -a

#### array-append-assoc
declare -A m=([a]=1)
m+=([b]=2)
echo ${#m[@]} ${m[b]}

#### array-negative-index-assign
a=(1 2 3)
a[-1]=x
echo ${a[@]}

#### array-slice-empty-offset
a=(a b c d)
echo ${a[@]::2}

#### substring-negative-in-parens
s=hello
echo ${s:(-2)} ${s: -1}

#### test-and-or-precedence
[ 1 = 1 -o 1 = 2 -a 1 = 2 ] && echo or-binds-looser

#### test-bang-alone
[ ! ] || echo bang-alone-false
[ ! a ] || echo not-nonempty

#### base-arith-in-double-brackets
[[ 2#101 -eq 5 ]] && echo five

#### unset-array-whole-with-at
a=(1 2 3)
unset 'a[@]'
echo "${#a[@]}"

#### exec-redirect-persists
exec 2>/dev/null
ls /nonexistent
echo "st=$?"

#### printf-time-format
printf '%(%Y)T\n' 0

#### lineno-in-function
f() {
  echo $LINENO
}
f

#### here-string-with-variable-and-newlines
x='a
b'
wc -l <<< "$x"

#### read-e-ignored-without-terminal
read -e x <<< hello
echo "$x"

#### command-p-uses-default-path
command -p echo ok

#### arith-comma-in-for
for ((i=0, j=5; i<j; i+=2, j--)); do echo "$i,$j"; done

#### set-e-in-function-called-from-condition
set -e
f() { false; echo continued; }
if f; then echo ok; fi

#### nested-command-subst-with-quotes-and-escapes
echo "$(echo "a\"b" | tr '"' "'")"

#### heredoc-dollar-single-quote-not-special
cat <<END
$'not ansi'
END

#### assignment-with-tilde-and-quotes
HOME=/h
a="~"/x; b=~"/x"; c=~/x
echo "$a $b $c"

#### function-redirect-stderr-of-body
f() { echo err >&2; } 2>/dev/null
f
echo done

#### pipefail-and-pipestatus-together
set -o pipefail
false | true | (exit 3) | true
echo "$? ${PIPESTATUS[*]}"

#### wait-n-or-plain-wait-status
(exit 2) &
wait
echo "st=$?"

#### readarray-from-here-string
readarray -t lines <<< $'a\nb\nc'
echo "${#lines[@]} ${lines[2]}"

#### printf-q-roundtrip-eval
s=$'tab\there "quote"'
q=$(printf '%q' "$s")
eval "r=$q"
[ "$r" = "$s" ] && echo roundtrip

#### string-comparison-operators-in-test
[ abc \< abd ] && [ b \> a ] && echo lexical

#### set-minus-o-noglob-with-quotes
set -f
touch x1
echo x*
set +f
echo x*

#### function-keyword-with-redirect-and-local
function g { local v=$1; echo "g:$v"; }
g one > out.txt
cat out.txt

#### export-function-to-child
f() { echo exported-func; }
export -f f
bash -c f 2>/dev/null || echo "no exported function"

#### case-leading-paren
case x in (x) echo paren;; (*) echo no;; esac

#### function-body-if
f() if true; then echo body-if; fi
f

#### for-brace-body
for i in 1 2; { echo $i; }

#### dollar-single-quote
echo $'\x41\t\u00e9' $'a\'b'

#### dollar-double-quote
echo $"plain"

#### sparse-array-literal
a=(1 2 [5]=x); echo ${#a[@]} ${!a[@]}

#### assoc-literal
declare -A m=([k]=v [k2]=v2); echo ${m[k]} ${#m[@]}

#### brace-cross
echo {a..c}{1..2}

#### herestring-cmdsubst
cat <<< $(echo x y)

#### time-p
time -p true 2>/dev/null; echo st=$?

#### negate-group
! { false; }; echo st=$?

#### select-once
select x in a b; do echo "got $x"; break; done <<< 2 2>/dev/null

#### let-multiple
let "a = 5" "b = a * 2"; echo $a $b

#### chained-assign
(( a = b = 3 )); echo $a $b

#### arith-array-assign-expansion
echo $(( arr[1] = 5 )) ${arr[1]}

#### bare-redirect-creates
> empty.txt; [ -f empty.txt ] && echo created

#### exec-stderr-null
exec 2>/dev/null; ls /nonexistent; echo st=$?

#### procsubst-diff
diff <(echo a) <(echo a) && echo same

#### mapfile
printf 'a\nb\n' > f; mapfile -t arr < f; echo ${#arr[@]} ${arr[1]}; readarray -t r2 < f; echo ${r2[0]}

#### local-array
f() { local -a arr=(1 2); echo ${#arr[@]}; }; f

#### declare-g
f() { declare -g gv=1; }; f; echo $gv

#### lineno
echo $LINENO
echo $LINENO

#### funcname
f() { echo ${FUNCNAME[0]} ${#FUNCNAME[@]}; }; f

#### trap-err
trap 'echo caught' ERR; false; echo after

#### set-x-stderr
set -x; echo traced 2>/dev/null; set +x

#### getopts
set -- -a -b val rest; while getopts ab: o; do echo "$o ${OPTARG-}"; done; shift $((OPTIND-1)); echo "$@"

#### read-a
read -ra w <<< "x y z"; echo ${w[1]} ${#w[@]}

#### type-t
f() { :; }; type -t f echo ls if

#### command-v
command -v echo; command -v nosuch || echo none

#### alias-not-expanded
alias hi='echo alias'; hi 2>/dev/null; echo st=$?

#### alias-expand-aliases
shopt -s expand_aliases
alias hi='echo alias'
hi

#### printf-v-array
printf -v 'a[1]' %s x; echo ${a[1]}

#### nested-cmdsubst-quotes
echo "$(echo "inner $(echo "deep")")"

#### backtick-nested
echo `echo \`echo in\``

#### semicolon-after-brace
{ echo a; } ; { echo b; }

#### empty-function-body-error
f() { }; echo st=$?

#### arith-for-no-body-vars
for ((;;)); do break; done; echo ok

#### case-empty-pattern
x=; case $x in "") echo empty;; esac

#### case-fallthrough-amp
case a in a) echo a;& b) echo b;; esac

#### word-with-equals
echo a=b c==d

#### declare-p-array
a=(1 'two three'); declare -p a

#### unset-function
f() { :; }; unset -f f; type f 2>/dev/null || echo gone

#### readonly-function-var
readonly r=1; r=2 2>/dev/null; echo "st=$? r=$r"

#### export-p-subshell
export E=1; bash -c 'echo $E'

#### subshell-exit-trap
( trap 'echo sub-exit' EXIT; echo in ); echo out

#### source-file
echo 'echo sourced $1' > s.sh; . ./s.sh arg; source s.sh two

#### exit-in-source
echo 'return 3' > r.sh; . ./r.sh; echo st=$?

#### getopts-loop
set -- -a -b val rest
while getopts ab: o; do case $o in a) echo A ;; b) echo "B=$OPTARG" ;; esac; done
shift $((OPTIND-1))
echo "$@"

#### getopts-invalid-option
set -- -x
getopts a o 2>/dev/null
echo "$o st=$?"

#### local-shadows-and-restores
v=g
f() { local v=l; echo $v; }
f
echo $v

#### local-without-value-is-unset-in-bash
v=g
f() { local v; echo "[${v-unset}]"; }
f

#### mapfile-lines
printf 'a\nb\n' > in
mapfile -t arr < in
echo "${#arr[@]} ${arr[1]}"

#### read-d-empty-nul
printf 'a\0b\0' | while IFS= read -r -d '' x; do echo "[$x]"; done

#### trap-exit-runs-on-exit
trap 'echo bye' EXIT
echo hi
exit 3

#### trap-err-with-set-e
set -e
trap 'echo err-trap' ERR
false
echo no

#### set-e-in-and-list-not-exit
set -e
false && true
echo still

#### set-e-cmdsubst-assignment-exit
set -e
x=$(false)
echo no

#### set-o-pipefail-status
set -o pipefail
false | true
echo "st=$?"

#### string-length-unicode
v="héllo"
echo ${#v}

#### arithmetic-for-string-compare
a=abc b=abd
[[ $a < $b ]] && echo less

#### declare-i-arith
declare -i n=2+3
n+=1
echo $n

#### array-append-and-length
a=(1)
a+=(2 3)
echo ${#a[@]} "${a[-1]}"

#### assoc-array-keys
declare -A m=([x]=1 [y]=2)
for k in "${!m[@]}"; do echo "$k=${m[$k]}"; done | sort

#### unset-array-element
a=(1 2 3)
unset 'a[1]'
echo "${#a[@]} ${a[*]} ${!a[*]}"

#### command-subst-strips-trailing-newlines
x=$(printf 'a\n\n\n')
echo "[$x]"

#### eval-with-quotes
eval 'x="a b"'
echo "$x"

#### shift-too-many
set -- a
shift 2
echo "st=$? $#"
