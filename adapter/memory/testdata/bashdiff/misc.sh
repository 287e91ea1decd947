# A mixed batch in the style of public shell conformance suites.

#### dynamic-scoping-chain
x=global
a() { local x=a; b; }
b() { echo "b sees $x"; x=changed-by-b; }
a
echo "$x"

#### unset-local-reveals-global
x=global
f() { local x=local; unset x; echo "[${x-unset}]"; }
f

#### readonly-in-function
f() { readonly y=1; }
f
y=2 2>/dev/null
echo "st=$? y=$y"

#### set-dash-dash-quoted-args
set -- "a b" "" c
echo $#
for a in "$@"; do echo "<$a>"; done

#### dollar-hash-of-at-length
set -- a bb ccc
echo ${#@} ${#*} ${#1} ${#3}

#### star-with-custom-ifs-quoted
set -- x y z
IFS=:
echo "$*"
IFS=
echo "$*"
unset IFS
echo "$*"

#### at-in-assignment-joined
set -- a b c
x="$@"
echo "$x"
y=$*
echo "$y"

#### array-slice-quoted
a=(zero one two three)
printf '<%s>' "${a[@]:1:2}"; echo
printf '<%s>' "${a[@]: -2}"; echo

#### array-keys-sparse
a=([3]=c [1]=a)
echo "${!a[@]}" "${a[@]}"

#### string-repeat-with-printf
printf -v line '%*s' 5 ''
echo "[${line// /-}]"

#### nested-arith-and-param
n=3
echo $(( n * ${#n} + $((n)) ))

#### arith-ternary-nested
x=5
echo $(( x > 3 ? x > 4 ? 2 : 1 : 0 ))

#### arith-pre-post-in-expression
i=1
echo $(( i++ + ++i )) $i

#### arith-bitwise-assign
x=12
(( x &= 10, x |= 1, x ^= 2 ))
echo $x

#### let-multiple-and-status
let a=1 b=a+1 c=b*3
echo $a $b $c $?

#### case-with-variable-pattern
pat='a*'
case abc in $pat) echo glob;; *) echo no;; esac
case abc in "$pat") echo literal;; *) echo nomatch;; esac

#### case-bracket-and-classes
for w in A b 3 _; do
  case $w in
    [[:upper:]]) echo "$w upper";;
    [[:lower:]]) echo "$w lower";;
    [[:digit:]]) echo "$w digit";;
    *) echo "$w other";;
  esac
done

#### getopts-with-optarg-attached
set -- -xfoo -y bar
while getopts 'x:y:' o; do echo "$o=$OPTARG"; done
echo "OPTIND=$OPTIND"

#### getopts-missing-arg-silent
set -- -a
getopts ':a:' o
echo "$o [$OPTARG]"

#### while-read-with-ifs-and-rest
while IFS=: read -r user rest; do echo "$user|$rest"; done <<'END'
root:x:0:0
bin:x:1
END

#### here-doc-in-command-subst-assignment
x=$(cat <<'END'
line1
line2
END
)
echo "${#x}"

#### command-subst-trailing-newlines-in-array
arr=($(printf 'a\nb\n\n'))
echo ${#arr[@]}

#### quoting-in-command-subst
x=$(echo "a  b")
echo "$x" $x

#### nested-double-quotes-in-subst
echo "outer $(echo "inner "quoted" $(echo deep)")"

#### ansi-c-quote-in-array
a=($'x\ty' 'z')
printf '[%s]' "${a[@]}"; echo

#### printf-reuse-with-missing
printf '%s-%s\n' a b c

#### printf-b-octal-and-escape-in-arg
printf '%b\n' 'tab:\t|oct:\101|nul-not-cut'

#### printf-negative-width-star
printf '[%*s]\n' -4 ab

#### echo-backslash-without-e
echo 'a\\b' "c\\d"

#### exit-status-of-negated-pipeline-pipefail
set -o pipefail
! false | true
echo $?

#### trap-err-with-errexit
set -e
trap 'echo caught $?' ERR
f() { return 3; }
f || true
echo alive
false

#### trap-exit-in-function-exit
trap 'echo exiting' EXIT
f() { exit 2; }
f
echo never

#### subshell-exit-code-and-trap
( trap 'echo sub-trap' EXIT; exit 5 )
echo "st=$?"

#### wait-returns-bg-status
( exit 3 ) &
p1=$!
( exit 4 ) &
p2=$!
wait $p1; echo $?
wait $p2; echo $?

#### brace-expansion-combos
echo {a,b}{1,2} x{1..3}y {c..a}

#### brace-with-variables-not-expanded-sequence
a=1; b=3
echo {$a..$b}

#### tilde-in-quotes-and-assignment
HOME=/h
x=~/y
echo "$x" "~" ~ ~/z

#### glob-with-brackets-and-negation
touch a1 a2 b1 .a3
echo a[12] [!a]1 .a*

#### word-splitting-of-glob-result-with-spaces
touch 'has space.txt' plain.txt
for f in *.txt; do echo "<$f>"; done

#### test-file-operators-on-dirs
mkdir d; touch d/f
[ -d d ] && [ -e d/f ] && [ ! -f d ] && echo ok

#### test-string-empty-vs-unset
unset u; e=
[ -z "$u" ] && [ -z "$e" ] && [ "${u+set}" != set ] && [ "${e+set}" = set ] && echo ok

#### double-bracket-pattern-alternation
shopt -s extglob
[[ foo.txt == *.@(txt|md) ]] && echo ext

#### double-bracket-regex-anchors-and-groups
re='^([a-z]+)-([0-9]+)$'
if [[ item-42 =~ $re ]]; then echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"; fi

#### function-return-value-capture-and-status
f() { echo out; return 3; }
x=$(f)
echo "$x $?"

#### function-with-same-name-as-variable
f=var
f() { echo func; }
echo $f
f

#### recursive-function-with-local-array
sumto() { local n=$1; if (( n == 0 )); then echo 0; else echo $(( n + $(sumto $((n-1))) )); fi; }
sumto 10

#### alias-in-script-needs-shopt
shopt -s expand_aliases
alias greet='echo hello'
greet world

#### eval-with-array-and-quotes
eval 'arr=("a b" c)'
echo ${#arr[@]} "${arr[0]}"

#### source-sets-positional
printf 'echo "in: $1 $2"\n' > lib.sh
set -- outer
. ./lib.sh x y
echo "after: $1"

#### redirect-stdout-and-stderr-separately
{ echo out; echo err >&2; } >o.txt 2>e.txt
cat o.txt e.txt

#### redirect-append-both
echo a &>>log
echo b >>log 2>&1
cat log

#### pipeline-with-subshell-and-braces
{ echo 1; echo 2; } | ( while read -r n; do echo "n$n"; done )

#### exec-fd-and-while-read
printf 'x\ny\n' > f
exec 4< f
while read -r -u 4 l; do echo "<$l>"; done
exec 4<&-

#### heredoc-with-leading-tabs-and-expansion
v=val
cat <<-END
	v=$v
	  kept-spaces
	END

#### heredoc-in-loop-with-read
while read -r a; do echo "[$a]"; done <<END
$(printf 'x\ny')
END

#### string-length-of-special
set -- abc
echo ${#1} ${#0}

#### param-case-modify-all-words
set -- hello world
echo "${@^}" "${@^^}"

#### param-substring-past-end
s=abc
echo "[${s:5}]" "[${s:1:10}]"

#### param-default-in-arith
unset n
echo $(( ${n:-2} + 3 ))

#### unset-array-element-and-length
a=(1 2 3)
unset 'a[0]'
echo ${#a[@]} "${a[@]}"

#### assoc-array-iteration-sorted-keys
declare -A m=([z]=1 [a]=2 [m]=3)
for k in $(printf '%s\n' "${!m[@]}" | sort); do echo "$k=${m[$k]}"; done

#### assoc-keys-with-spaces-quoted
declare -A m
m["a b"]=1
m[c]=2
for k in "${!m[@]}"; do echo "<$k>"; done | sort

#### integer-overflow-wrap
echo $(( 9223372036854775807 + 1 ))

#### negative-modulo-and-division
echo $(( -7 / 2 )) $(( -7 % 2 ))

#### read-into-array-and-count
read -r -a parts <<< 'one two  three'
echo ${#parts[@]} ${parts[-1]}

#### mapfile-with-delimiter
printf 'a,b,c' | { mapfile -d , -t arr; echo "${#arr[@]} ${arr[2]}"; }

#### xargs-with-quotes
printf '"a b" c\n' | xargs -n1 echo

#### sort-numeric-unique-keys
printf '3 b\n1 a\n3 a\n' | sort -k1,1n -k2

#### uniq-count-sorted
printf 'b\na\nb\n' | sort | uniq -c | sed 's/^ *//'

#### cut-delimiter-fields-range
echo 'a:b:c:d' | cut -d: -f2-3

#### tr-ranges-and-squeeze
echo 'Hello   World' | tr -s ' ' | tr '[:upper:]' '[:lower:]'

#### wc-lines-of-command-output
n=$(printf 'a\nb\nc\n' | wc -l)
echo "lines=$n"

#### head-tail-combination
seq 10 | head -n 7 | tail -n 3

#### sed-multiple-expressions-and-addresses
printf 'one\ntwo\nthree\n' | sed -n -e '1p' -e '$p'

#### grep-count-and-quiet-status
printf 'a\nb\na\n' > f
grep -c a f
grep -q z f || echo "no z"

#### find-with-name-and-type
mkdir -p x/y
touch x/a.sh x/y/b.sh x/c.txt
find x -type f -name '*.sh' | sort

#### date-utc-fixed
date -u -d @0 +%Y-%m-%d

#### basename-with-suffix-in-loop
for f in /a/b.txt /c/d.md; do basename "$f" "${f##*.}"; done

#### printf-money-format
printf '%.2f %s\n' 3.14159 USD 2.5 EUR
