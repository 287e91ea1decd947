# Parameter expansion.

#### default-value
unset x
echo "${x:-def}" "${x-def2}"
x=
echo "[${x:-def}]" "[${x-def2}]"

#### assign-default
unset x
echo "${x:=set}"
echo "$x"

#### alternate-value
x=1
echo "${x:+alt}" "[${y:+alt}]"

#### error-if-unset
( unset x; echo "${x:?missing}" ) 2>/dev/null
echo "status $?"

#### length
x=hello
echo ${#x}

#### length-unicode
x=héllo
echo ${#x}

#### remove-prefix-shortest-longest
p=/usr/local/bin/tool
echo ${p#*/} ${p##*/}

#### remove-suffix-shortest-longest
f=archive.tar.gz
echo ${f%.*} ${f%%.*}

#### substring
s=abcdefgh
echo ${s:2} ${s:2:3} ${s: -3} ${s: -3:2}

#### substring-negative-length
s=abcdefgh
echo ${s:1:-2}

#### replace-first-all
s=aXbXc
echo ${s/X/-} ${s//X/-}

#### replace-anchored-start
s=xxabxx
echo ${s/#xx/yy}

#### replace-anchored-end
s=xxabxx
echo ${s/%xx/yy}

#### replace-with-empty
s=a.b.c
echo ${s//./}

#### replace-glob-pattern
s=file123.txt
echo ${s//[0-9]/#}

#### upper-lower
s=Hello
echo ${s^^} ${s,,} ${s^} 

#### lower-first
s=HELLO
echo ${s,}

#### indirect-expansion
name=target
target=value
echo ${!name}

#### prefix-names
abc1=1 abc2=2
echo ${!abc*}

#### quoted-pattern-is-literal
v='a?c'
echo "${v#"a?"}" "${v#a?}"
w=abc
echo "${w#"a?"}"

#### quoted-star-pattern
v='*star'
echo "${v#'*'}"

#### nested-default
unset a b
echo ${a:-${b:-deep}}

#### default-with-spaces-quoted
unset x
for w in ${x:-"a b"}; do echo "[$w]"; done

#### dollar-at-default-none
set --
echo "${@-none}"
echo "${@:-none2}"

#### dollar-at-default-some
set -- a
echo "${@-none}"

#### positional-beyond-nine
set -- 1 2 3 4 5 6 7 8 9 10 11
echo ${10} ${11} $10

#### dollar-hash
set -- a b c
echo $#
shift
echo $#

#### dollar-at-slice
set -- a b c d e
echo "${@:2:2}"
echo "${@:3}"

#### dollar-zero-in-bash-c
echo $0

#### special-question
false
echo $?
true
echo $?

#### dollar-dash-contains
set -e
case $- in *e*) echo has-e;; esac

#### unset-var-is-empty
unset zz
echo "[$zz]"

#### braces-delimit-name
x=foo
echo "${x}bar" "$xbar"

#### default-does-not-assign
unset x
echo ${x:-d}
echo "[${x}]"

#### length-of-array-element
a=(one three)
echo ${#a[1]}

#### pattern-with-bracket-class
s=a1b2c3
echo ${s//[[:digit:]]/}

#### strip-trailing-slash
d=/path/to/dir/
echo ${d%/}

#### basename-dirname-via-expansion
p=/a/b/c.txt
echo ${p##*/} ${p%/*}

#### extension-check
f=x.tar.gz
echo ${f##*.}

#### replace-in-each-positional
set -- ab cb
echo ${@/b/X}

#### uppercase-array
a=(ab cd)
echo ${a[@]^^}

#### substring-of-at
set -- a b c
echo ${@:0:2}

#### colon-in-substring-vs-default
x=abc
echo ${x:-1} ${x: -1}

#### unset-then-length
unset q
echo ${#q}

#### assign-default-positional-error
( : ${1:=x} ) 2>/dev/null
echo $?

#### var-in-pattern
pre=ab
s=abcd
echo ${s#$pre}

#### star-in-replacement
s=abc
echo "${s/b/*}"

#### ampersand-in-replacement
s=abc
echo "${s/b/&}"

#### replace-longest-match
s=aaa
echo ${s/a*/X} ${s/#a/X}

#### indirect-array
arr=(x y z)
ref='arr[1]'
echo ${!ref}

#### readonly-assign-fails
readonly r=1
( r=2 ) 2>/dev/null
echo $?
echo $r

#### dollar-underscore
echo a b c >/dev/null
echo $_

#### case-modify-pattern
s=hello
echo ${s^^[lo]}

#### transform-quote
s="it's"
echo ${s@Q}

#### empty-pattern-replace
s=abc
echo ${s//}

#### default-unset-vs-empty
u=; echo "[${u-def}] [${u:-def}] [${n-def}] [${n:-def}]"

#### assign-default-positional
f() { : ${1:=x}; }; f 2>/dev/null; echo st=$?

#### alternate-forms
v=1 e=; echo "[${v+alt}] [${e+alt}] [${e:+alt}] [${n+alt}]"

#### error-message-status
( : ${nope?custom message} ) 2>/dev/null; echo st=$?
( : ${e:?} ) 2>/dev/null; echo st=$?

#### default-with-expansion
x=5; echo ${n:-$x} ${n:-$((x+1))} ${n:-$(echo cmd)}

#### default-array
a=(); echo "[${a[@]:-empty}]"; b=(1 2); echo "[${b[@]:-empty}]"

#### default-at-star
set --; echo "[${@:-none}] [${*:-none}]"; set -- a b; echo "[${@:-none}]"

#### assign-default-then-use
echo ${v:=init}; echo $v

#### nested-default-quotes
echo "${n:-"inner 'q'"}" ${n:-'$x'} "${n:-\$x}"

#### default-word-split
set -- ${n:-a b c}; echo $#; set -- "${n:-a b c}"; echo $#

#### question-in-function-exits-shell
f() { echo ${1?need arg}; echo infunc; }; f; echo after

#### plus-with-array
a=(x y); echo ${a[@]+"${a[@]}"}; unset a; echo "[${a[@]+set}]"

#### length-of-default
echo ${#n} ${#}

#### u-default-empty
set -u; echo "[${x:-}]" "[${x-}]"

#### plus-quoted
x='a b'; set -- ${x:+"$x"}; echo $#; set -- "${x:+a b}"; echo $#

#### default-cmdsubst-split
set -- ${n-$(echo a b)}; echo $#

#### assign-spaces
echo "${v:=a b}"; echo "$v"

#### prefix-names-2
ab1=1 ab2=2; echo ${!ab*}; for n in "${!ab@}"; do echo $n; done

#### case-mod
x=hello; echo ${x^^} ${x^} ${x,,} X=${x^^[lo]}

#### substr-neg
x=abcdef; echo ${x: -2} ${x:1:-1} ${x: -3:2} ${x:10}

#### at-slices
set -- a b c d; echo ${@:2} ${@: -1} ${@:2:2} ${*:0:1}

#### array-slice
a=(a b c d); echo ${a[@]:1:2} ${a[@]: -2}

#### length-array-element
a=(abc de); echo ${#a[0]} ${#a[@]} ${#a}

#### anchor-newline
x=$'\nx'; echo "${x/#$'\n'/N}"

#### indirect-default
ref=target; echo ${!ref:-none}; target=v; echo ${!ref:-none}

#### replace-all-array
a=(aa ba); echo ${a[@]//a/x}

#### remove-array
a=(x.c y.c); echo ${a[@]%.c}

#### default-in-arith
echo $(( ${n:-4} * 2 ))

#### unset-array-element-default
a=(1 2); unset 'a[0]'; echo "[${a[0]:-gone}] ${#a[@]}"

#### quoted-at-empty
set --; for x in "$@"; do echo x; done; echo "n=${#@}"

#### star-with-ifs
set -- a b; IFS=:; echo "${*}"; x="$*"; echo "$x"

#### error-unset-in-cmdsubst
x=$(echo ${nope?msg}) 2>/dev/null; echo "st=$? [$x]"

#### indirect-empty-ref-fatal
e=
echo "[${!e}]"
echo after

#### operator-word-expanded-only-when-used
# The word after :- = ? + is expanded only when the operator uses it.
n=0
v=value
echo "${v:-$((n+=1))}" "${v-$((n+=10))}" "${v:=$((n+=100))}" "${v:?$((n+=1000))}"
echo "${none+$((n+=2))}" "${empty:+$((n+=20))}"
echo "n=$n"
empty=
echo "${none:-$((n+=1))}" "${empty:-$((n+=10))}" "${v:+$((n+=100))}" "${empty+$((n+=1000))}"
echo "n=$n"

#### operator-word-command-substitution-not-run
# A set value is used as is: the command substitution of the default never runs.
name=kept
echo "${name:-$(echo ran >&2; echo other)}"
out=${name:=$(touch made)}
echo "$out"
ls made 2>/dev/null || echo "no file"

#### default-colon-vs-no-colon-empty
e=
echo "[${e-d}] [${e:-d}]"

#### default-unset
unset u
echo "[${u-d}] [${u:-d}]"

#### alternate-set-empty
e=
echo "[${e+alt}] [${e:+alt}]"

#### assign-default-sets
unset u
: "${u:=val}"
echo "$u"

#### assign-default-positional-error-more
set --
echo "${1:=x}"
echo "st=$?"

#### error-message-custom
unset u
( : "${u:?custom message}" ) 2>&1 | sed 's/.*: //'

#### error-no-colon-empty-ok
e=
echo "[${e?msg}]"

#### default-with-nested-expansion
unset a
b=B
echo "${a:-${b}x}"

#### default-with-command-substitution
unset a
echo "${a:-$(echo cs)}"

#### default-word-tilde
unset a
HOME=/h
echo ${a:-~/x}

#### default-quoted-star-in-word
unset a
echo "${a:-*}"

#### alternate-with-quotes
v=1
echo ${v:+"a b"}
for w in ${v:+"a b" c}; do echo "[$w]"; done

#### default-array-at
unset arr
arr=()
echo "[${arr[@]:-empty}]"

#### length-of-unset-under-nounset
set -u
echo "${#nope}"
echo after

#### default-under-nounset-ok
set -u
echo "${nope:-fine}"

#### substring-negative-offset
v=abcdef
echo "${v: -2}" "${v:1:2}" "${v:(-3):2}"

#### substring-length-negative
v=abcdef
echo "${v:1:-1}"

#### case-modification
v=hello
echo "${v^}" "${v^^}" "${v,,}"

#### indirect-expansion-more
n=target target=value
echo "${!n}"

#### prefix-names-more
ab1=1 ab2=2
echo ${!ab*}

#### positional-slice-from-2
set -- a b c d
echo "${@:2}" "${@:2:2}" "${*: -1}"

#### positional-count-and-last
set -- x y z
echo "$# ${!#}"

#### array-slice-and-count
a=(p q r s)
echo "${a[@]:1:2}" "${#a[@]}" "${#a[1]}"

#### nounset-empty-array-expansion
set -u
a=()
echo "[${a[@]}]"
echo ok

#### nounset-positional-at-empty
set -u
set --
echo "[$@]" "[$*]"

#### string-replace-in-array-all
a=(one two three)
echo "${a[@]/o/0}"

#### prefix-strip-in-array
a=(x.c y.c)
echo "${a[@]%.c}"

#### upper-first-each-array
a=(ab cd)
echo "${a[@]^}"

#### default-for-array-element
a=()
echo "${a[0]:-none}"

#### length-of-positional
set -- abc de
echo "${#1} ${#2} ${#@}"

#### default-with-at-inside-quotes
set -- "a b" c
unset x
for w in "${x:-"$@"}"; do echo "[$w]"; done

#### default-with-at-unquoted
set -- "a b" c
unset x
for w in ${x:-"$@"}; do echo "[$w]"; done

#### default-single-quotes-inside-double
unset x
echo "${x:-'q'}"
echo ${x:-'q r'}

#### default-escaped-brace
unset x
echo "${x:-\}}" ${x:-a\}b}

#### default-dollar-star-ifs
set -- a b
IFS=:
unset x
echo "${x:-$*}"

#### alternate-quoted-at
set -- 1 2
v=set
for w in "${v:+"$@"}"; do echo "[$w]"; done

#### assign-default-in-arith
unset n
echo $(( ${n:=5} + 1 )) $n

#### error-in-subshell-status
( : ${nope:?missing} ) 2>/dev/null
echo "st=$?"

#### error-colon-empty-message-default
e=
( : ${e:?} ) 2>&1 | grep -c 'parameter null or not set'

#### nested-default-expansions
unset a b
echo "${a:-${b:-deep}}"

#### default-with-glob-char-unquoted
unset x
touch gx1 gx2
echo ${x:-gx*}
echo "${x:-gx*}"

#### default-word-splitting-with-ifs
unset x
IFS=,
for w in ${x:-a,b}; do echo "[$w]"; done
