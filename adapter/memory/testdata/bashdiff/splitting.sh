# Word splitting and IFS.

#### default-ifs-splits-on-blanks
x='  a  b	c
d  '
for w in $x; do echo "[$w]"; done

#### ifs-colon
IFS=:
s='a:b:c'
for f in $s; do echo "[$f]"; done

#### ifs-colon-empty-field
IFS=:
s='a::b'
for f in $s; do echo "[$f]"; done

#### ifs-colon-leading-empty
IFS=:
s=':a:b'
for f in $s; do echo "[$f]"; done

#### ifs-colon-trailing-empty-dropped
IFS=:
s='a:b:'
set -- $s
echo $#

#### ifs-whitespace-and-colon
IFS=' :'
s='a : b::c'
for f in $s; do echo "[$f]"; done

#### ifs-empty-no-split
IFS=
s='a b c'
set -- $s
echo $#

#### ifs-unset-default
unset IFS
s='a b	c'
set -- $s
echo $#

#### ifs-newline-only
IFS=$'\n'
s='one two
three four'
for l in $s; do echo "[$l]"; done

#### ifs-restored-after-subshell
s='a:b'
(IFS=:; set -- $s; echo $#)
set -- $s
echo $#

#### ifs-comma-csv
line='x,y,,z'
IFS=, read -r a b c d <<< "$line"
echo "$a|$b|$c|$d"

#### dollar-at-unquoted-splits
set -- 'a b' c
set -- $@
echo $#

#### dollar-at-with-prefix-suffix
set -- a b c
echo "-$@-"
for x in "-$@-"; do echo "[$x]"; done

#### dollar-at-empty-quoted
set --
set -- "$@"
echo $#

#### dollar-star-unquoted-with-ifs
set -- 'a b' c
IFS=:
echo $*

#### splitting-command-subst
set -- $(printf 'a b\nc\n')
echo $#

#### quoted-command-subst-no-split
set -- "$(printf 'a b\nc')"
echo $#

#### split-result-globbed
touch f1 f2
x='f*'
echo $x

#### split-result-glob-disabled
touch f1 f2
set -f
x='f*'
echo $x

#### splitting-in-for-list
list="one two three"
n=0
for w in $list; do n=$((n+1)); done
echo $n

#### no-split-in-assignment
a="x y"
b=$a
set -- $b
echo $#

#### no-split-in-case-word
v='a b'
case $v in 'a b') echo matched;; esac

#### no-split-in-double-brackets
v='a b'
[[ $v == 'a b' ]] && echo ok

#### ifs-tab-only
IFS=$'\t'
s=$'a b\tc'
for f in $s; do echo "[$f]"; done

#### ifs-multiple-non-ws
IFS=,
s='a,,,b'
set -- $s
echo $#
echo "[$2]"

#### ifs-read-with-backslash
IFS=: read -r a b <<< 'x\:y:z'
echo "$a|$b"

#### ifs-in-read-remainder
IFS=: read -r a b <<< 'x:y:z'
echo "$a|$b"

#### ifs-whitespace-trim-in-read
read -r a b <<< '   lead   trail   '
echo "[$a][$b]"

#### empty-ifs-read-keeps-spaces
IFS= read -r line <<< '   spaced   '
echo "[$line]"

#### array-from-split
s='a b c'
arr=($s)
echo ${#arr[@]}

#### array-from-split-ifs
IFS=, 
s='1,2,3'
arr=($s)
echo "${arr[1]}"

#### split-unquoted-in-args
f() { echo $#; }
v='1 2 3'
f $v
f "$v"

#### split-with-leading-spaces-in-var
v='   x'
set -- $v
echo "$#:$1"

#### star-and-at-same-unquoted
set -- 'a b' c
a=$(echo $*)
b=$(echo $@)
[ "$a" = "$b" ] && echo same

#### quoted-at-in-array-assignment
set -- 'a b' c
arr=("$@")
echo ${#arr[@]}

#### ifs-change-midscript
s='a-b c'
set -- $s
echo $#
IFS=-
set -- $s
echo $#

#### ifs-newline-lines-loop
data=$'l1\nl2 with space\nl3'
IFS=$'\n'
for l in $data; do echo "<$l>"; done

#### split-empty-string-zero-words
x=''
n=0
for w in $x; do n=$((n+1)); done
echo $n

#### split-only-separators
IFS=:
x=':::'
set -- $x
echo $#

#### ifs-colon-read
IFS=: read a b c <<< "x::z"; echo "[$a][$b][$c]"

#### ifs-read-rest
IFS=, read a b <<< "1,2,3,4"; echo "[$a][$b]"

#### ifs-read-trailing-sep
IFS=, read a b <<< "1,2,"; echo "[$a][$b]"

#### ifs-read-array
IFS=: read -ra arr <<< "a:b::c"; echo "${#arr[@]} ${arr[2]}"

#### ifs-mixed-ws
IFS=' :'; x='a : b  c'; set -- $x; echo $#; printf '[%s]' "$@"; echo

#### ifs-empty
IFS=; x='a b'; set -- $x; echo $#

#### ifs-star-join
IFS=-; set -- a b c; echo "$*"; IFS=; echo "$*"

#### ifs-unset
unset IFS; x=$'a\tb  c'; set -- $x; echo $#

#### ifs-at-in-word
set -- "a b" c; for w in x"$@"y; do echo "[$w]"; done

#### ifs-default-quoted-words
unset x; set -- ${x:-"a b" c}; echo $#

#### ifs-read-backslash
printf 'a\\ b c\n' | { read x y; echo "[$x][$y]"; }

#### ifs-read-r
printf 'a\\ b c\n' | { read -r x y; echo "[$x][$y]"; }

#### ifs-read-leading-ws
printf '   a  b  \n' | { read x; echo "[$x]"; }

#### ifs-read-noifs
printf '   a  b  \n' | { IFS= read x; echo "[$x]"; }

#### ifs-colon-empty-fields-kept
IFS=:
set -- $(echo "a::b:")
echo "$#"
printf '[%s]' "$@"; echo

#### ifs-colon-leading-empty-more
IFS=:
x=":a"
set -- $x
echo "$# [$1]"

#### ifs-mixed-space-and-comma
IFS=' ,'
x="a , b,,c"
set -- $x
printf '[%s]' "$@"; echo

#### ifs-unset-is-default
unset IFS
x="  a   b  "
set -- $x
echo "$#"

#### ifs-empty-no-split-more
IFS=
x="a b c"
set -- $x
echo "$#"

#### ifs-newline-only-more
IFS='
'
x="a b
c d"
for w in $x; do echo "[$w]"; done

#### ifs-read-line-continuation-without-r
printf 'a\\\nb c\n' | { read x y; echo "[$x][$y]"; }

#### ifs-read-last-var-keeps-rest-and-separators
IFS=: read -r a b <<< "1:2:3:"
echo "$a|$b"

#### ifs-read-trailing-single-separator-stripped
IFS=: read -r a b <<< "1:2:"
echo "$a|$b"

#### ifs-read-into-no-names-keeps-reply
read <<< "  spaced  "
echo "[$REPLY]"

#### ifs-read-array-more
IFS=, read -r -a arr <<< "p,q,,r"
echo "${#arr[@]} ${arr[2]}x"

#### ifs-dollar-star-joins-with-first-char
set -- a b c
IFS=-:
echo "$*"

#### ifs-dollar-at-in-word
set -- a b
x=pre"$@"post
echo "$x"
for w in pre"$@"post; do echo "[$w]"; done

#### ifs-default-value-with-quotes
unset x
for w in ${x:-"a b" c}; do echo "[$w]"; done

#### ifs-default-value-unquoted-splits
unset x
for w in ${x:-a b}; do echo "[$w]"; done

#### ifs-quoted-default-no-split
unset x
for w in "${x:-a b}"; do echo "[$w]"; done

#### ifs-splitting-of-command-substitution
IFS=,
for w in $(echo "1,2,3"); do echo "$w"; done

#### ifs-not-applied-to-literals
IFS=,
for w in a,b c; do echo "[$w]"; done

#### ifs-backslash-in-read-without-r
IFS=: read a b <<< 'x\:y:z'
echo "$a|$b"

#### ifs-tab-separated
IFS=$'\t'
x=$'a\t\tb'
set -- $x
echo "$#"
