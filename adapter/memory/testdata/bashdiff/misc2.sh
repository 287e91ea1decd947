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
